"""The event model's Python behaviour is stormlog's: constructors and their
errors, equality, hashing, pickling, and objects of both libraries mixed."""

from __future__ import annotations

import copy
import pickle

import pytest

import conftest as c
import generate
from test_rejections import REPLACEMENTS, _base_records

CONTEXT = dict(run_id="r", session_id="s", producer_id="p", source="t", clock_domain="host",
               clock_kind="monotonic", collection_mode="active", provenance="observed")


def test_entity_ref_is_a_value(side):
    a, b = side.EntityRef("p", "x"), side.EntityRef(producer_id="p", id="x")
    assert a == b and hash(a) == hash(b) and a != side.EntityRef("p", "y")
    assert {a: 1}[b] == 1
    assert (a.producer_id, a.id) == ("p", "x")
    assert pickle.loads(pickle.dumps(a)) == a
    assert a != ("p", "x")
    with pytest.raises(Exception) as error:
        a.id = "z"
    assert type(error.value).__name__ in ("FrozenInstanceError", "AttributeError")


def test_entity_ref_and_context_errors_are_stormlogs():
    for args in [("", "x"), ("p", ""), (1, "x"), ("p", None), (None, None)]:
        c.assert_same_failure(lambda: c.STORM.EntityRef(*args), lambda: c.TALLY.EntityRef(*args))
    for name in CONTEXT:
        for value in ["", 1, None, "bogus", True]:
            kwargs = dict(CONTEXT, **{name: value})
            storm = c.outcome(lambda: c.STORM.CorrelationContext(**kwargs))
            if storm[0] == "ok":
                assert c.outcome(lambda: c.TALLY.CorrelationContext(**kwargs))[0] == "ok", kwargs
            else:
                c.assert_same_failure(lambda: c.STORM.CorrelationContext(**kwargs),
                                      lambda: c.TALLY.CorrelationContext(**kwargs))
    for name in ("pid", "rank", "local_rank", "world_size", "host", "device_uuid", "engine"):
        for value in [-1, 0, True, 1.5, "", "x", 2]:
            kwargs = dict(CONTEXT, **{name: value})
            storm = c.outcome(lambda: c.STORM.CorrelationContext(**kwargs))
            tally = c.outcome(lambda: c.TALLY.CorrelationContext(**kwargs))
            assert (tally[0], tally[1] if tally[0] == "error" else None) == (
                storm[0], storm[1] if storm[0] == "error" else None), kwargs
    for kwargs in [dict(CONTEXT, unknown=1), {k: v for k, v in CONTEXT.items() if k != "source"}]:
        storm = c.outcome(lambda: c.STORM.CorrelationContext(**kwargs))
        tally = c.outcome(lambda: c.TALLY.CorrelationContext(**kwargs))
        assert storm[1][0] == tally[1][0] == "TypeError", (storm, tally)


def test_context_is_a_value(side):
    a = side.CorrelationContext(**CONTEXT, device_uuid="GPU-0", pid=3)
    b = side.CorrelationContext(**CONTEXT, device_uuid="GPU-0", pid=3)
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a != side.CorrelationContext(**CONTEXT, device_uuid="GPU-1", pid=3)
    assert pickle.loads(pickle.dumps(a)) == a
    assert (a.pid, a.device_uuid, a.host, a.clock_kind) == (3, "GPU-0", None, "monotonic")


def _kwargs(side, record: dict) -> tuple[type, dict]:
    """Constructor keywords of a record, with the side's own objects."""
    values = {key: value for key, value in record.items() if key not in ("schema_version", "event_type")}
    values["context"] = side.CorrelationContext(**values["context"])
    for key, value in list(values.items()):
        if isinstance(value, dict) and key.endswith(("_ref", "_scope")):
            values[key] = side.EntityRef(**value)
    event_type = record["event_type"]
    cls = next(getattr(side, name) for name in (
        "ArtifactIdentityEvent", "RequestEvent", "IterationEvent", "StageEvent", "MembershipEvent",
        "ActivityReferenceEvent", "CapabilityEvent", "ClockAlignmentEvent")
        if getattr(side, name).EVENT_TYPE == event_type)
    return cls, values


def _construct(side, record: dict, change=None):
    cls, values = _kwargs(side, record)
    if change is not None:
        change(values, side)
    event = cls(**values)
    return c.strict(event.to_record())


def test_constructors_agree_with_stormlog():
    """Each base record built by keywords, then with each field replaced,
    removed, or an unknown keyword added: the same record, or the same
    exception class and message."""
    mismatches = []
    for record in _base_records():
        assert _construct(c.TALLY, record) == _construct(c.STORM, record)
        for key in [k for k in record if k not in ("schema_version", "event_type")]:
            changes = [(f"{key}={value!r}", lambda v, s, value=value, key=key: v.__setitem__(key, value))
                       for value in REPLACEMENTS if not isinstance(value, dict) or key == "metadata"]
            changes.append((f"{key}=EntityRef", lambda v, s, key=key: v.__setitem__(key, s.EntityRef("p", "q"))))
            changes.append((f"without {key}", lambda v, s, key=key: v.pop(key)))
            for label, change in changes:
                storm = c.outcome(lambda: _construct(c.STORM, record, change))
                tally = c.outcome(lambda: _construct(c.TALLY, record, change))
                if storm != tally:
                    mismatches.append((record["event_type"], label, storm, tally))
        storm = c.outcome(lambda: _construct(c.STORM, record, lambda v, s: v.__setitem__("bogus", 1)))
        tally = c.outcome(lambda: _construct(c.TALLY, record, lambda v, s: v.__setitem__("bogus", 1)))
        if storm != tally:
            mismatches.append((record["event_type"], "bogus keyword", storm, tally))
    assert not mismatches, "\n".join(map(repr, mismatches[:30])) + f"\n({len(mismatches)} in all)"


def test_events_are_unhashable_values(side):
    ctx = side.CorrelationContext(**CONTEXT)
    make = lambda metadata: side.IterationEvent(  # noqa: E731
        context=ctx, event_id="e", iteration_ref=side.EntityRef("p", "i"), start_ns=1, end_ns=5, metadata=metadata)
    one, real, flag = make({"a": 1}), make({"a": 1.0}), make({"a": True})
    # Python's dict equality, as stormlog's dataclasses compare.
    assert one == real == flag
    assert make({"a": 2}) != one
    assert one != side.IterationEvent(context=ctx, event_id="e2", iteration_ref=side.EntityRef("p", "i"))
    with pytest.raises(TypeError):
        hash(one)
    assert one.elapsed_ns == 4 and one.schema_version == 2
    assert pickle.loads(pickle.dumps(one)) == one
    assert type(pickle.loads(pickle.dumps(one))) is type(one)
    assert pickle.loads(pickle.dumps(one)).metadata == {"a": 1}


def test_loaded_events_pickle_and_compare(tmp_path):
    path = generate.write_v4(tmp_path / "p.jsonl", generate.random_run(4))
    tally = c.TALLY.load_inference_artifact(path)
    storm = c.STORM.load_inference_artifact(path)
    for event in tally:
        again = pickle.loads(pickle.dumps(event))
        assert again == event and type(again) is type(event)
        assert c.strict(again.to_record()) == c.strict(event.to_record())
    # Equality within each library agrees, pair by pair.
    for i in range(0, len(tally), 3):
        for j in range(0, len(tally), 5):
            assert (tally[i] == tally[j]) == (storm[i] == storm[j]), (i, j)


def test_device_clock_and_results(side):
    clock = side.DeviceClock("GPU-0", "cuda:0")
    assert clock.clock_kind == "monotonic"
    assert clock == side.DeviceClock("GPU-0", "cuda:0", "monotonic")
    assert hash(clock) == hash(side.DeviceClock(device_uuid="GPU-0", clock_domain="cuda:0"))
    assert clock != side.DeviceClock("GPU-0", "cuda:0", "device")
    assert side.GpuTime(1, 2, 3) == side.GpuTime(1, 2, 3) != side.GpuTime(1, 2, 4)
    assert hash(side.GpuTime(1, 2, 3)) == hash(side.GpuTime(1, 2, 3))
    assert side.AlignedTimestamp(1, 2, "x") == side.AlignedTimestamp(1, 2, "x")


def test_results_compare_equal_when_equal(tmp_path):
    path = generate.write_v2(tmp_path / "r.jsonl", generate.random_run(8))
    for side in (c.STORM, c.TALLY):
        graph_a = side.resolve_inference_events(side.load_inference_artifact(path))
        graph_b = side.resolve_inference_events(list(reversed(side.load_inference_artifact(path))))
        assert graph_a.unresolved == graph_b.unresolved
        assert side.account_gpu_time(graph_a) == side.account_gpu_time(graph_b)
        with pytest.raises(TypeError):
            hash(side.account_gpu_time(graph_a))


# --------------------------------------------------------------------------
# Mixing the libraries' objects


@pytest.mark.parametrize("seed", [0, 1, 2, 17, 42, 99])
def test_stormlog_objects_resolve_as_tallys(tmp_path, seed):
    """A graph resolved from stormlog's own objects equals one resolved from
    tally's objects of the same artifact; so do their accountings."""
    path = generate.write_v4(tmp_path / f"m{seed}.jsonl", generate.random_run(seed))
    storm_records = c.STORM.load_inference_artifact(path)
    tally_records = c.TALLY.load_inference_artifact(path)
    from_storm = c.TALLY.resolve_inference_events(storm_records)
    from_tally = c.TALLY.resolve_inference_events(tally_records)
    assert from_storm == from_tally
    assert c.TALLY.account_gpu_time(from_storm) == c.TALLY.account_gpu_time(from_tally)
    # Plain dicts (the records stormlog reads) and a mixed list.
    dicts = c.STORM.read_inference_records(path)
    assert c.TALLY.resolve_inference_events(dicts) == from_tally
    mixed = [item if i % 3 == 0 else storm_records[i] if i % 3 == 1 else tally_records[i]
             for i, item in enumerate(dicts)]
    assert c.TALLY.resolve_inference_events(mixed) == from_tally
    assert c.graph(from_storm) == c.graph(c.STORM.resolve_inference_events(storm_records))


def test_resolve_takes_any_iterable_and_skips_other_objects(tmp_path):
    path = generate.write_v2(tmp_path / "i.jsonl", generate.random_run(3))
    records = c.TALLY.load_inference_artifact(path)
    expected = c.TALLY.resolve_inference_events(records)
    assert c.TALLY.resolve_inference_events(iter(records)) == expected
    assert c.TALLY.resolve_inference_events(tuple(records)) == expected
    # stormlog passes over objects that are not correlation events.
    storm = c.STORM.resolve_inference_events([*c.STORM.load_inference_artifact(path), 3, "x"])
    tally = c.TALLY.resolve_inference_events([*records, 3, "x"])
    assert c.graph(tally) == c.graph(storm)


def test_invalid_dicts_are_rejected_with_stormlogs_message():
    record = copy.deepcopy(_base_records()[2])
    record["end_ns"] = 0
    with pytest.raises(ValueError) as storm:
        c.STORM.parse_inference_record(record)
    with pytest.raises(ValueError) as tally:
        c.TALLY.resolve_inference_events([record])
    assert str(tally.value) == str(storm.value)
    with pytest.raises(ValueError) as tally:
        c.TALLY.parse_inference_record(record)
    assert str(tally.value) == str(storm.value)


def test_rules_are_checked_in_stormlogs_order():
    """Two broken fields: the error is the one stormlog checks first."""
    record = _base_records()[6]
    for change in [
        dict(activity_domain="bogus", attribution_status="bogus"),
        dict(activity_domain="bogus", attribution_status="linked"),
        dict(start_ns=-1, attempt_ref="x"),
        dict(activity_kind="", activity_domain="bogus"),
        dict(start_ns=5, end_ns=1, stream_id=-1),
    ]:
        changed = dict(copy.deepcopy(record), **change)
        c.assert_same_failure(lambda: c.STORM.parse_inference_record(changed),
                              lambda: c.TALLY.parse_inference_record(changed))
