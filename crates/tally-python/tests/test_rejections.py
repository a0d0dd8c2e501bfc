"""Every artifact stormlog rejects, tally rejects with the same exception and
message; every artifact it accepts, tally reads to the same records.

Rejections are made by mutating valid records field by field (empty
strings, negative integers, booleans and floats for integers, wrong enum
values, spans that end before they start, bad ``metadata.intervals``,
missing and unknown keys), by breaking the v4 transport rules, and by
conflicting deliveries that only ``resolve_inference_events`` can see.

Where tally's message cannot be stormlog's, the test still runs and
compares the exception class and the ``line N:`` prefix; each such case
names its documented difference (crates/tally-artifact/src/lib.rs, "Where
tally differs from stormlog", and docs/PARITY.md).
"""

from __future__ import annotations

import copy
import json
import random

import pytest

import conftest as c
import generate

#: Documented: stormlog's TypeError text comes from Python's dataclass
#: ``__init__`` ("... got an unexpected keyword argument ..."); tally words
#: a missing or unknown key in its own way (docs/PARITY.md).
TYPE_ERROR_WORDING = ("invalid infer.", "__init__()")


def _type_error_wording(message: str) -> bool:
    return any(part in message for part in TYPE_ERROR_WORDING)


def _base_records() -> list[dict]:
    """One valid record of every event type, in stormlog's full form, and
    some sparse ones: the material the mutations work on."""
    ctx = generate.context("run-x", "s", "p", "host-a", "monotonic", device_uuid="GPU-0", pid=3, rank=0,
                           world_size=2, host="h", engine="e")
    r = generate.ref
    sparse = [
        {"schema_version": 2, "event_type": "infer.artifact", "event_id": "a", "context": ctx,
         "artifact_kind": "k", "created_at_ns": 5},
        {"schema_version": 2, "event_type": "infer.request", "event_id": "b", "context": ctx,
         "request_ref": r("p", "q"), "attempt_ref": r("p", "q/1"), "backend_request_ref": r("b", "x"),
         "start_ns": 1, "end_ns": 9, "status": "ok", "input_tokens": 1, "output_tokens": 2, "kv_bytes": 3},
        {"schema_version": 2, "event_type": "infer.iteration", "event_id": "c", "context": ctx,
         "iteration_ref": r("p", "i"), "batch_ref": r("p", "b"), "start_ns": 2, "end_ns": 4},
        {"schema_version": 2, "event_type": "infer.stage", "event_id": "d", "context": ctx,
         "stage_ref": r("p", "s"), "name": "prefill", "request_ref": r("p", "q"), "iteration_ref": r("p", "i"),
         "start_ns": 2, "end_ns": 3, "input_tokens": 0},
        {"schema_version": 2, "event_type": "infer.membership", "event_id": "e", "context": ctx,
         "request_ref": r("p", "q"), "iteration_ref": r("p", "i"), "role": "decode", "attempt_ref": r("p", "q/1"),
         "kv_bytes": 8},
        {"schema_version": 3, "event_type": "infer.activity_ref", "event_id": "f", "context": ctx,
         "metadata": {"intervals": [[0, 2], [3, 4]]}, "activity_ref": r("p", "k"), "activity_kind": "kernel",
         "activity_domain": "gpu", "attribution_status": "linked", "iteration_ref": r("p", "i"),
         "correlation_scope": r("p", "scope"), "trace_attachment_id": "t", "runtime_correlation_id": 1,
         "cuda_correlation_id": 2, "stream_id": 7, "graph_id": 0, "start_ns": 10, "end_ns": 20},
        {"schema_version": 2, "event_type": "infer.activity_ref", "event_id": "g", "context": ctx,
         "activity_ref": r("p", "k2"), "activity_kind": "memcpy", "attribution_status": "unresolved"},
        {"schema_version": 2, "event_type": "infer.capabilities", "event_id": "h", "context": ctx,
         "component": "cupti", "available": True, "supported": ["a", "b"], "enabled": ["a"], "collected": ["a"]},
        {"schema_version": 2, "event_type": "infer.clock_alignment", "event_id": "i", "context": ctx,
         "metadata": {"gap_ns": 3}, "from_clock_domain": "x", "to_clock_domain": "y", "offset_ns": -4,
         "uncertainty_ns": 1, "valid_from_ns": 0, "valid_to_ns": 10},
    ]
    return sparse


#: What each value of a field is replaced with.
REPLACEMENTS = ["", -1, True, False, 1.5, "bogus", None, [], {}, 0, "x", {"producer_id": "p"},
                {"producer_id": "p", "id": ""}, {"producer_id": "p", "id": "i", "extra": 1}, [1, 2]]
#: Replacements whose rejection tally words differently (documented).
DOCUMENTED = {
    2**64: "integers beyond 64 bits are read as floats",
    -(2**63) - 1: "integers beyond 64 bits are read as floats",
}


def _mutations(rng: random.Random):
    """(label, record) pairs: each base record with one field replaced,
    removed, or one key added; and bad metadata.intervals."""
    for record in _base_records():
        kind = record["event_type"]
        for key in list(record):
            for value in REPLACEMENTS + list(DOCUMENTED):
                mutated = copy.deepcopy(record)
                mutated[key] = value
                yield f"{kind}.{key}={value!r}", mutated
            mutated = copy.deepcopy(record)
            del mutated[key]
            yield f"{kind} without {key}", mutated
        for key in list(record["context"]):
            for value in REPLACEMENTS[:9] + [0, 2**64]:
                mutated = copy.deepcopy(record)
                mutated["context"][key] = value
                yield f"{kind}.context.{key}={value!r}", mutated
            mutated = copy.deepcopy(record)
            del mutated["context"][key]
            yield f"{kind}.context without {key}", mutated
        mutated = copy.deepcopy(record)
        mutated["unknown_key"] = 1
        yield f"{kind} with an unknown key", mutated
        mutated = copy.deepcopy(record)
        mutated["context"]["unknown_key"] = 1
        yield f"{kind}.context with an unknown key", mutated
        for version in (1, 3, 4, 5, "2", True, 2.0):
            mutated = copy.deepcopy(record)
            mutated["schema_version"] = version
            yield f"{kind} schema_version={version!r}", mutated
        for event_type in ("infer.nothing", "request", 3, None, "infer.context"):
            mutated = copy.deepcopy(record)
            mutated["event_type"] = event_type
            yield f"{kind} event_type={event_type!r}", mutated
    activity = _base_records()[5]
    intervals = [
        None, [], [[0, 2]], [[0, 2], [1, 2]], [[0, 11]], [[0, 10]], [[-1, 2]], [[0, True]], [[0, 1.0]],
        [[0, 1, 2]], [0, 1], "x", {"a": 1}, [[2, 0], [2, 0]], [[0, 0]], [(5, 5)], [[0, 2**64]],
    ]
    for value in intervals:
        for version in (2, 3):
            mutated = copy.deepcopy(activity)
            mutated["metadata"] = {"intervals": value}
            mutated["schema_version"] = version
            yield f"intervals={value!r} v{version}", mutated
    for start, end in ((None, 20), (10, None), (None, None), (21, 20)):
        mutated = copy.deepcopy(activity)
        mutated["start_ns"], mutated["end_ns"] = start, end
        yield f"intervals with span {start}..{end}", mutated
    # Random combinations of two mutations.
    pool = list(_single_mutations_for_combining())
    for _ in range(150):
        record = copy.deepcopy(rng.choice(_base_records()))
        for _ in range(2):
            key, value = rng.choice(pool)
            if key in record or rng.random() < 0.3:
                record[key] = value
        yield f"combined {json.dumps(record, sort_keys=True)[:80]}", record


def _single_mutations_for_combining():
    for key in ("start_ns", "end_ns", "event_id", "attempt_ref", "iteration_ref", "attribution_status",
                "activity_domain", "role", "name", "offset_ns", "uncertainty_ns", "available", "supported"):
        for value in (None, "", -1, True, 3, "linked", "unresolved", ["a"], {"producer_id": "p", "id": "z"}):
            yield key, value


def _documented_difference(label: str, record: dict, storm_message: str) -> str | None:
    """The documented difference that makes tally's message differ, or None."""
    text = json.dumps(record)
    if "18446744073709551616" in text or "-9223372036854775809" in text:
        return "integers beyond 64 bits (crates/tally-artifact/src/lib.rs)"
    if _type_error_wording(storm_message):
        return "stormlog's TypeError wording from Python's dataclass __init__ (docs/PARITY.md)"
    return None


def test_every_field_rule_rejects_as_stormlog_does(tmp_path):
    """Each mutated record, after two valid lines, read by both libraries."""
    rng = random.Random(7)
    valid = [json.dumps(r, sort_keys=True) for r in _base_records()[:2]]
    mismatches, rejected, documented = [], 0, 0
    for index, (label, record) in enumerate(_mutations(rng)):
        path = generate.write_lines(tmp_path / f"m{index}.jsonl", [*valid, json.dumps(record, sort_keys=True)])
        storm = c.outcome(lambda: c.records(c.STORM.load_inference_artifact(path)))
        tally = c.outcome(lambda: c.records(c.TALLY.load_inference_artifact(path)))
        if storm[0] == "ok":
            if tally == storm:
                continue
            # Documented: Python's integers are unbounded, so stormlog accepts
            # 2**64 as a time; tally's u64/i64 fields refuse it, by line.
            big = _documented_difference(label, record, "")
            if big is not None and tally[0] == "error" and tally[1][0] == "ValueError" \
                    and tally[1][1].startswith("line 3: "):
                documented += 1
                continue
            mismatches.append((label, storm, tally))
            continue
        rejected += 1
        storm_class, storm_message = storm[1]
        why = _documented_difference(label, record, storm_message)
        if tally[0] != "error" or tally[1][0] != storm_class:
            # A documented difference may make tally reject what stormlog
            # accepts, never accept what it rejects.
            mismatches.append((label, storm, tally))
        elif why is not None:
            documented += 1
            if c.line_prefix(tally[1][1]) != c.line_prefix(storm_message):
                mismatches.append((label, storm, tally))
        elif tally[1][1] != storm_message:
            mismatches.append((label, storm, tally))
    assert not mismatches, "\n".join(map(repr, mismatches[:25])) + f"\n({len(mismatches)} in all)"
    assert rejected > 300 and documented > 10, (rejected, documented)


def test_documented_differences_keep_the_line_prefix(tmp_path):
    """Documented differences: integers beyond 64 bits in metadata (tally
    reads a float where stormlog keeps the integer: accepted by both),
    NaN/Infinity (Python's json reads them, tally's reader refuses: stormlog
    accepts), unpaired surrogates (Python accepts, tally refuses). Where
    stormlog accepts, tally's refusal must still be a line-numbered
    ValueError."""
    base = json.dumps(_base_records()[0], sort_keys=True)
    cases = {
        "nan": base.replace('"created_at_ns": 5', '"created_at_ns": 5, "metadata": {"x": NaN}'),
        "infinity": base.replace('"created_at_ns": 5', '"created_at_ns": 5, "metadata": {"x": -Infinity}'),
        "surrogate": base.replace('"artifact_kind": "k"', '"artifact_kind": "k\\ud800"'),
        "huge float": base.replace('"created_at_ns": 5', '"created_at_ns": 5, "metadata": {"x": 1e400}'),
    }
    for name, line in cases.items():
        path = generate.write_lines(tmp_path / f"{name}.jsonl", [base, line])
        assert c.outcome(lambda: c.STORM.load_inference_artifact(path))[0] == "ok", name
        with pytest.raises(ValueError, match=r"^line 2: "):
            c.TALLY.load_inference_artifact(path)
    # An integer beyond 64 bits where the model wants one: Python's int is
    # unbounded, so stormlog accepts it; tally refuses it (documented).
    line = base.replace('"created_at_ns": 5', '"created_at_ns": 18446744073709551616')
    path = generate.write_lines(tmp_path / "big.jsonl", [base, line])
    assert c.outcome(lambda: c.STORM.load_inference_artifact(path))[0] == "ok"
    with pytest.raises(ValueError, match=r"^line 2: "):
        c.TALLY.load_inference_artifact(path)
    # In metadata both accept; tally reads a float (documented).
    line = base.replace('"created_at_ns": 5', '"created_at_ns": 5, "metadata": {"x": 18446744073709551616}')
    path = generate.write_lines(tmp_path / "big-metadata.jsonl", [base, line])
    assert c.TALLY.load_inference_artifact(path)[1].metadata == {"x": float(2**64)}
    assert c.STORM.load_inference_artifact(path)[1].metadata == {"x": 2**64}


@pytest.mark.parametrize("text", [
    "{", "[1]", "3", "null", '"x"', '{"a": 1} x', "{'a': 1}", '{"a": }', "\x00", '{"schema_version": 2,}',
])
def test_invalid_json_lines(tmp_path, text):
    """Invalid JSON: Python's JSONDecodeError text is its own, so only the
    ``line N:`` prefix and the class (ValueError) must match; a JSON value
    that is not an object has stormlog's message."""
    base = json.dumps(_base_records()[0], sort_keys=True)
    path = generate.write_lines(tmp_path / "bad.jsonl", [base, "", text])
    storm = c.outcome(lambda: c.STORM.load_inference_artifact(path))
    prefix_only = storm[0] == "error" and "record must be an object" not in storm[1][1]
    c.assert_same_failure(lambda: c.STORM.load_inference_artifact(path),
                          lambda: c.TALLY.load_inference_artifact(path), prefix_only=prefix_only)


def _v4_lines(records: list[dict]) -> list[str]:
    encoder = c.STORM.CorrelationRecordEncoder()
    return [json.dumps(row, sort_keys=True) for record in records for row in encoder.encode(record)]


def _v4_mutations():
    """(label, lines) pairs that break the compact form's rules."""
    base = _base_records()
    lines = _v4_lines(base)
    rows = [json.loads(line) for line in lines]
    definition = rows[0]
    event = rows[1]
    dumps = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731

    def with_row(index: int, row: dict) -> list[str]:
        return [*lines[:index], dumps(row), *lines[index + 1:]]

    for key, value in (("context_id", ""), ("context_id", 5), ("context_id", None), ("schema_version", 3),
                       ("schema_version", True), ("schema_version", "4"), ("context", "x"), ("context", None),
                       ("extra", 1)):
        row = copy.deepcopy(definition)
        row[key] = value
        yield f"definition {key}={value!r}", with_row(0, row)
    for key in ("context_id", "context", "schema_version"):
        row = copy.deepcopy(definition)
        del row[key]
        yield f"definition without {key}", with_row(0, row)
    for key, value in (("clock_kind", "sundial"), ("run_id", ""), ("pid", -1), ("world_size", 0), ("x", 1)):
        row = copy.deepcopy(definition)
        row["context"][key] = value
        yield f"definition context.{key}={value!r}", with_row(0, row)
    conflicting = copy.deepcopy(definition)
    conflicting["context"]["host"] = "other"
    yield "conflicting context definition", [*lines, dumps(conflicting)]
    yield "same definition twice", [*lines, dumps(definition)]
    alias = copy.deepcopy(definition)
    alias["context_id"] = "alias"
    yield "alias definition", [*lines, dumps(alias)]
    for key, value in (("context_id", "unknown"), ("context_id", ""), ("context_id", 3), ("schema_version", 2),
                       ("schema_version", 5), ("context", definition["context"])):
        row = copy.deepcopy(event)
        row[key] = value
        yield f"event {key}={value!r}", with_row(1, row)
    row = copy.deepcopy(event)
    del row["context_id"]
    yield "v4 event without context_id", with_row(1, row)
    embedded = copy.deepcopy(base[1])
    embedded["context_id"] = definition["context_id"]
    yield "embedded record with context_id", [*lines, dumps(embedded)]
    embedded = copy.deepcopy(base[1])
    embedded["schema_version"] = 4
    yield "embedded record with schema_version 4", [*lines, dumps(embedded)]
    reference = lines[1]
    yield "reference before definition", [reference, *lines]
    activity = next(r for r in rows if r.get("metadata", {}).get("intervals"))
    for value in (None, [], [[0, 99]], [[0, 1]]):
        row = copy.deepcopy(activity)
        row["metadata"]["intervals"] = value
        yield f"v4 activity intervals={value!r}", [*lines, dumps(row)]
    row = copy.deepcopy(activity)
    del row["metadata"]
    yield "v4 activity without metadata", [*lines, dumps(row)]
    for key, value in (("end_ns", 0), ("event_id", ""), ("start_ns", -1), ("unknown", 1)):
        row = copy.deepcopy(event)
        row[key] = value
        yield f"v4 event {key}={value!r}", [*lines, dumps(row)]
    yield "v1 record with context_id", [*lines, dumps({"event_type": "infer.x", "context_id": "c"})]
    yield "definition of a v1 file", [dumps({"event_type": "infer.context", "schema_version": 1})]


def test_v4_rules_reject_as_stormlog_does(tmp_path):
    mismatches = []
    for index, (label, lines) in enumerate(_v4_mutations()):
        path = generate.write_lines(tmp_path / f"v4-{index}.jsonl", lines)
        storm = c.outcome(lambda: c.records(c.STORM.load_inference_artifact(path)))
        tally = c.outcome(lambda: c.records(c.TALLY.load_inference_artifact(path)))
        if storm[0] == "error" and tally[0] == "error" and _type_error_wording(storm[1][1]):
            # Documented: stormlog's dataclass TypeError wording.
            if tally[1][0] != storm[1][0] or c.line_prefix(tally[1][1]) != c.line_prefix(storm[1][1]):
                mismatches.append((label, storm, tally))
        elif tally != storm:
            mismatches.append((label, storm, tally))
    assert not mismatches, "\n".join(map(repr, mismatches))


# --------------------------------------------------------------------------
# Resolution errors


def _resolution_cases():
    records = generate.random_run(3, size=8)
    events = [r for r in records if r.get("schema_version", 1) != 1]
    iteration = next(r for r in events if r["event_type"] == "infer.iteration")
    changed = copy.deepcopy(iteration)
    changed["start_ns"] = changed["start_ns"] + 1
    if changed.get("end_ns") is not None and changed["end_ns"] < changed["start_ns"]:
        changed["end_ns"] = changed["start_ns"]
    yield "conflicting event identity", [*records, changed]
    metadata = copy.deepcopy(iteration)
    metadata["metadata"] = {"a": 1}
    same = copy.deepcopy(iteration)
    same["metadata"] = {"a": 1.0}
    yield "python-equal redelivery", [*records, metadata, same]
    other = copy.deepcopy(iteration)
    other["event_id"] = "zz-other"
    other["batch_ref"] = {"producer_id": "x", "id": "y"}
    yield "conflicting entity identity", [*records, other]
    stranger = copy.deepcopy(iteration)
    stranger["context"] = dict(stranger["context"], run_id="another")
    stranger["event_id"] = "stranger"
    yield "multiple run ids", [stranger, *records]
    yield "multiple run ids late", [*records, stranger]
    alignment = {"schema_version": 2, "event_type": "infer.clock_alignment", "event_id": "al",
                 "context": iteration["context"], "from_clock_domain": "a", "to_clock_domain": "b",
                 "offset_ns": 1, "uncertainty_ns": 1, "metadata": {"n": 1}}
    alignment2 = dict(alignment, event_id="al2", metadata={"n": 2})
    yield "conflicting alignment entity", [*records, alignment, alignment2]
    membership = next(r for r in events if r["event_type"] == "infer.membership") if any(
        r["event_type"] == "infer.membership" for r in events) else None
    if membership is not None:
        other = copy.deepcopy(membership)
        other["event_id"] = "m-other"
        other["metadata"] = {"different": True}
        yield "conflicting membership entity", [*records, other]


@pytest.mark.parametrize("form", ["v2", "v4"])
def test_resolution_errors_are_stormlogs(tmp_path, form):
    writer = generate.write_v2 if form == "v2" else generate.write_v4
    seen = set()
    for index, (label, records) in enumerate(_resolution_cases()):
        path = writer(tmp_path / f"res-{index}.jsonl", records)
        storm = c.outcome(lambda: c.graph(c.STORM.resolve_inference_events(c.STORM.load_inference_artifact(path))))
        tally = c.outcome(lambda: c.graph(c.TALLY.resolve_inference_events(c.TALLY.load_inference_artifact(path))))
        assert tally == storm, label
        # account_paths rejects the same artifacts; its message names the
        # file and line as `tally account` does, and ends with stormlog's.
        streamed = c.outcome(lambda: c.TALLY.account_paths([path]))
        if storm[0] == "error":
            seen.add(storm[1][1])
            assert streamed[0] == "error" and streamed[1][0] == "ValueError", label
            assert streamed[1][1].endswith(storm[1][1]), (label, streamed)
        else:
            assert streamed[0] == "ok", (label, streamed)
    assert seen == {"conflicting event identity", "conflicting entity identity",
                    "correlation artifact contains multiple run_id values"}


def test_rank_files_of_two_runs(tmp_path):
    a = generate.write_v2(tmp_path / "a.jsonl", generate.random_run(1, run_id="run-a"))
    b = generate.write_v4(tmp_path / "b.jsonl", generate.random_run(2, run_id="run-b"))
    storm = c.STORM.load_inference_artifact(a) + c.STORM.load_inference_artifact(b)
    tally = c.TALLY.load_inference_artifact(a) + c.TALLY.load_inference_artifact(b)
    c.assert_same_failure(lambda: c.STORM.resolve_inference_events(storm),
                          lambda: c.TALLY.resolve_inference_events(tally))
    with pytest.raises(ValueError, match="multiple run_id values"):
        c.TALLY.account_paths([a, b])
