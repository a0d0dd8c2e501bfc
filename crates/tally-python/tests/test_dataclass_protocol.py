"""The frozen-dataclass protocol of every ``tally.accounting`` class,
against stormlog's own dataclasses, live.

stormlog's users treat its classes as the frozen dataclasses they are:
``dataclasses.replace`` to make a variant, ``asdict``/``astuple``/``fields``,
``FrozenInstanceError`` on assignment, pickling and copying. Each test
builds the same objects on both sides (from one generated run, or by hand)
and requires the same outcome: the same value, or the same exception class
and message.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys

import pytest

import conftest as c
from generate import random_run, write_v2

STORMLOG_MODULES = (c.storm_events, c.storm_codec, c.storm_accounting)


def stormlog_dataclasses() -> list[str]:
    names = set()
    for module in STORMLOG_MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                names.add(name)
    return sorted(names)


def field_shape(field: dataclasses.Field) -> tuple:
    factory = field.default_factory
    return (
        field.name,
        field.type,
        field.default,
        None if factory is dataclasses.MISSING else factory,
        field.init,
        field.repr,
        field.compare,
        field.hash,
        field.kw_only,
    )


def params_shape(cls: type) -> tuple:
    params = cls.__dataclass_params__
    return tuple(getattr(params, name) for name in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"))


@pytest.mark.parametrize("name", stormlog_dataclasses())
def test_every_stormlog_dataclass_is_declared_as_stormlog_declares_it(name):
    theirs, ours = getattr(c.STORM, name), getattr(c.TALLY, name)
    assert dataclasses.is_dataclass(ours)
    assert [field_shape(f) for f in dataclasses.fields(ours)] == [field_shape(f) for f in dataclasses.fields(theirs)]
    assert params_shape(ours) == params_shape(theirs)
    assert ours.__match_args__ == theirs.__match_args__


# --------------------------------------------------------------------------
# The same objects on both sides


@pytest.fixture(scope="module")
def run_path(tmp_path_factory):
    # One delivery per event: of Python-equal deliveries (``1`` and ``1.0``)
    # stormlog keeps the last and tally the first (docs/PARITY.md), which
    # would show in the graph's values here.
    records, seen = [], set()
    for record in random_run(7, size=60):
        context = record.get("context") or {}
        key = (record.get("event_type"), context.get("session_id"), context.get("producer_id"), record.get("event_id"))
        if key not in seen:
            seen.add(key)
            records.append(record)
    return write_v2(tmp_path_factory.mktemp("protocol") / "run.jsonl", records)


class Objects:
    """Every kind of object of one side, made from the same run."""

    def __init__(self, side: c.Side, path) -> None:
        self.side = side
        self.events = side.load_inference_artifact(path)
        self.graph = side.resolve_inference_events(self.events)
        self.accounting = side.account_gpu_time(self.graph)
        ref = side.EntityRef("producer", "r-1")
        clock = side.DeviceClock("GPU-0", "gpu-clock")
        share = side.RequestShareEstimate(request_ref=ref, duration_ns=5, model="linear")
        self.by_kind = {
            "EntityRef": ref,
            "CorrelationContext": self.events[1].context,
            "LegacyInferenceRecord": side.LegacyInferenceRecord({"event": "request", "latency_ms": 1.5}),
            "DeviceClock": clock,
            "GpuTime": side.GpuTime(summed_activity_ns=10, busy_ns=7, activity_count=2),
            "IterationTiming": side.IterationTiming(elapsed_ns=None, gpu={clock: side.GpuTime(1, 1, 1)}),
            "RequestShareEstimate": share,
            "ShareBudget": side.ShareBudget(
                iteration_ref=ref, device_clock=clock, budget_ns=9, shares=(share,), unattributed_ns=4
            ),
            "AlignedTimestamp": side.AlignedTimestamp(value_ns=5, uncertainty_ns=1, clock_domain="d"),
            "UnresolvedReference": side.UnresolvedReference(event_id="e", kind="iteration", ref=ref),
            "CorrelationGraph": self.graph,
            "RunAccounting": self.accounting,
        }
        self.by_kind["StageEvent"] = side.StageEvent(
            context=self.events[1].context, event_id="stage", stage_ref=side.EntityRef("p", "st"), name="prefill", request_ref=side.EntityRef("p", "r"),
            start_ns=1, end_ns=5, input_tokens=3,
        )
        self.by_kind["ArtifactIdentityEvent"] = side.ArtifactIdentityEvent(
            context=self.events[1].context, event_id="artifact", artifact_kind="inference", created_at_ns=1
        )
        for event in self.events:
            self.by_kind.setdefault(type(event).__name__, event)


@pytest.fixture(scope="module")
def both(run_path):
    return Objects(c.STORM, run_path), Objects(c.TALLY, run_path)


def pairs(both):
    storm, tally = both
    assert set(storm.by_kind) == set(tally.by_kind)
    return [(kind, storm.by_kind[kind], tally.by_kind[kind]) for kind in sorted(storm.by_kind)]


def test_the_run_holds_every_event_class(both):
    kinds = set(both[0].by_kind)
    for name in stormlog_dataclasses():
        if name != "CorrelationEvent":
            assert name in kinds, f"the generated run has no {name}"


def plain(value):
    """A value compared across the libraries: JSON text where it has one."""
    try:
        return c.strict(value)
    except TypeError:
        return repr(value)


def test_asdict_astuple_and_repr_equal_stormlogs(both):
    for kind, storm, tally in pairs(both):
        for function in (dataclasses.asdict, dataclasses.astuple):
            expected = c.outcome(lambda: plain(function(storm)))
            assert c.outcome(lambda: plain(function(tally))) == expected, (kind, function.__name__)
        if kind not in ("CorrelationGraph", "RunAccounting"):
            # tally's graph and accounting show their counts, not every event.
            assert repr(tally) == repr(storm), kind


def test_fields_and_is_dataclass_on_instances(both):
    for kind, storm, tally in pairs(both):
        assert dataclasses.is_dataclass(tally) and not isinstance(tally, type)
        assert [f.name for f in dataclasses.fields(tally)] == [f.name for f in dataclasses.fields(storm)], kind


def test_replace_without_changes_is_an_equal_value(both):
    for kind, storm, tally in pairs(both):
        copy_storm = dataclasses.replace(storm)
        copy_tally = dataclasses.replace(tally)
        assert type(copy_tally) is type(tally)
        assert copy_tally == tally, kind
        assert (copy_storm == storm) == (copy_tally == tally)


def some_change(kind: str, side: c.Side) -> dict:
    """One valid change per class, in the side's own objects."""
    ref = side.EntityRef("producer", "changed")
    return {
        "EntityRef": {"id": "changed"},
        "CorrelationContext": {"host": "other-host", "pid": 7},
        "LegacyInferenceRecord": {"raw": {"event": "changed"}},
        "DeviceClock": {"clock_kind": "realtime"},
        "GpuTime": {"busy_ns": 3},
        "IterationTiming": {"elapsed_ns": 12},
        "RequestShareEstimate": {"duration_ns": 9, "attempt_ref": ref},
        "ShareBudget": {"budget_ns": 1},
        "AlignedTimestamp": {"clock_domain": "other"},
        "UnresolvedReference": {"ref": ref},
        "CorrelationGraph": {"unresolved": ()},
        "RunAccounting": {"run_id": "changed-run"},
    }.get(kind, {"metadata": {"note": "variant"}, "event_id": "variant-1"})


def test_replace_makes_the_variant_stormlog_makes(both):
    storm_objects, tally_objects = both
    for kind, storm, tally in pairs(both):
        storm_variant = dataclasses.replace(storm, **some_change(kind, c.STORM))
        tally_variant = dataclasses.replace(tally, **some_change(kind, c.TALLY))
        for field in dataclasses.fields(storm):
            mine, theirs = getattr(tally_variant, field.name), getattr(storm_variant, field.name)
            assert plain(dataclasses.asdict(mine) if dataclasses.is_dataclass(mine) else mine) == plain(
                dataclasses.asdict(theirs) if dataclasses.is_dataclass(theirs) else theirs
            ), (kind, field.name)
        if hasattr(storm_variant, "to_record"):
            assert c.strict(tally_variant.to_record()) == c.strict(storm_variant.to_record()), kind


def test_replace_shares_the_unchanged_fields_objects(both):
    """``replace`` hands the old object's field values to the constructor,
    so a variant holds the very same context, references and lists."""
    for kind, storm, tally in pairs(both):
        change = some_change(kind, c.TALLY)
        variant = dataclasses.replace(tally, **change)
        storm_variant = dataclasses.replace(storm, **some_change(kind, c.STORM))
        for field in dataclasses.fields(tally):
            if field.name in change:
                assert getattr(variant, field.name) is change[field.name] or not isinstance(
                    change[field.name], (dict, list, tuple)
                ), (kind, field.name)
                continue
            shared_in_stormlog = getattr(storm_variant, field.name) is getattr(storm, field.name)
            shared_in_tally = getattr(variant, field.name) is getattr(tally, field.name)
            if shared_in_stormlog and not isinstance(getattr(storm, field.name), (int, str, type(None))):
                assert shared_in_tally, (kind, field.name)


def test_an_events_fields_are_the_same_objects_each_time(both):
    for event in both[1].events:
        if not hasattr(event, "context"):
            continue
        assert event.context is event.context
        assert event.metadata is event.metadata
        for field in dataclasses.fields(event):
            assert getattr(event, field.name) is getattr(event, field.name)


INVALID_CHANGES = [
    ("event_id", ""),
    ("event_id", 3),
    ("metadata", []),
    ("context", "not a context"),
    ("start_ns", -1),
    ("start_ns", True),
    ("bogus", 1),
]


def test_replace_rejects_what_stormlog_rejects(both):
    mismatches = []
    for kind, storm, tally in pairs(both):
        names = {f.name for f in dataclasses.fields(storm)}
        for name, value in INVALID_CHANGES:
            if name not in names and name != "bogus":
                continue
            expected = c.outcome(lambda: dataclasses.replace(storm, **{name: value}))
            got = c.outcome(lambda: dataclasses.replace(tally, **{name: value}))
            if expected[0] == "ok":
                assert got[0] == "ok", (kind, name, value, got)
                continue
            if got[0] != "error" or got[1][0] != expected[1][0]:
                mismatches.append((kind, name, value, expected, got))
            elif kind.endswith("Event") or kind in ("EntityRef", "CorrelationContext"):
                # The messages of stormlog's own checks, and Python's wording
                # of an unexpected keyword, are the same text.
                if got[1][1] != expected[1][1]:
                    mismatches.append((kind, name, value, expected, got))
    assert not mismatches, "\n".join(map(repr, mismatches))


def test_assignment_and_deletion_raise_frozen_instance_error(both):
    for kind, storm, tally in pairs(both):
        for field in dataclasses.fields(storm):
            for action in (lambda obj: setattr(obj, field.name, None), lambda obj: delattr(obj, field.name)):
                expected = c.outcome(lambda: action(storm))
                assert expected[1][0] == "FrozenInstanceError"
                assert c.outcome(lambda: action(tally)) == expected, (kind, field.name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            tally.not_a_field = 1


def test_pickle_copy_and_deepcopy_round_trip(both):
    for kind, _, tally in pairs(both):
        for made in (pickle.loads(pickle.dumps(tally)), copy.copy(tally), copy.deepcopy(tally)):
            assert type(made) is type(tally), kind
            if kind == "RunAccounting":
                # Its dicts are keyed by references, which compare by value.
                assert c.accounting(made) == c.accounting(tally)
            else:
                assert made == tally, kind


def test_hashability_matches_stormlogs(both):
    for kind, storm, tally in pairs(both):
        expected = c.outcome(lambda: hash(storm))
        got = c.outcome(lambda: hash(tally))
        assert got[0] == expected[0], (kind, expected, got)


def test_pattern_matching_by_keyword_and_position(both):
    for kind, storm, tally in pairs(both):
        assert type(tally).__match_args__ == type(storm).__match_args__
        cls = type(tally)
        if cls.__match_args__:
            first = cls.__match_args__[0]
            match tally:
                case cls(matched):
                    assert matched is getattr(tally, first) or matched == getattr(tally, first)
                case _:
                    pytest.fail(f"{kind} did not match positionally")


@pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is new in Python 3.13")
def test_copy_replace_on_python_3_13(both):
    for kind, storm, tally in pairs(both):
        assert copy.replace(tally) == tally, kind


def test_replace_method_is_dataclasses_replace(both):
    """``__replace__`` (what Python 3.13's ``copy.replace`` calls) exists on
    every Python the package supports."""
    for kind, storm, tally in pairs(both):
        change = some_change(kind, c.TALLY)
        assert tally.__replace__(**change) == dataclasses.replace(tally, **change), kind


def test_a_rebuilt_graph_accounts_as_the_original(both):
    _, tally = both
    rebuilt = dataclasses.replace(tally.graph, unresolved=())
    assert rebuilt.unresolved == ()
    assert rebuilt.requests is tally.graph.requests
    assert c.accounting(c.TALLY.account_gpu_time(rebuilt)) == c.accounting(tally.accounting)
