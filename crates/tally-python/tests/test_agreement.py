"""Live agreement with stormlog on generated artifacts.

Each seed of ``generate.random_run`` is written in embedded (v2/v3) and
compact (v4, stormlog's encoder) form; stormlog and tally each load,
resolve and account it, and every result's canonical form must be equal.
"""

from __future__ import annotations

import json

import pytest

import conftest as c
import generate

SEEDS = range(200)


def _load_both(path):
    storm = c.STORM.load_inference_artifact(path)
    tally = c.TALLY.load_inference_artifact(path)
    return storm, tally


@pytest.mark.parametrize("form", ["v2", "v4"])
@pytest.mark.parametrize("block", range(10))
def test_generated_artifacts_agree(tmp_path, form, block):
    """Records, graph (tables, their order, unresolved) and accounting, 20
    seeds per test so a failure names a small block."""
    writer = generate.write_v2 if form == "v2" else generate.write_v4
    for seed in SEEDS[block::10]:
        path = writer(tmp_path / f"run-{seed}.{form}.jsonl", generate.random_run(seed))
        storm_records, tally_records = _load_both(path)
        assert c.records(tally_records) == c.records(storm_records), seed
        assert [type(r).__name__ for r in tally_records] == [type(r).__name__ for r in storm_records]

        storm_graph = c.STORM.resolve_inference_events(storm_records)
        tally_graph = c.TALLY.resolve_inference_events(tally_records)
        assert c.graph(tally_graph) == c.graph(storm_graph), seed
        assert c.table_orders(tally_graph) == c.table_orders(storm_graph), seed

        storm_accounting = c.STORM.account_gpu_time(storm_graph)
        tally_accounting = c.TALLY.account_gpu_time(tally_graph)
        assert c.accounting(tally_accounting) == c.accounting(storm_accounting), seed

        # The dicts in stormlog's order: a program that prints them prints
        # the same lines.
        assert dict_orders(tally_accounting) == dict_orders(storm_accounting), seed

        # The streamed path over the same file.
        streamed_graph, streamed = c.TALLY.account_paths([path])
        assert streamed == tally_accounting, seed
        assert dict_orders(streamed) == dict_orders(storm_accounting), seed
        assert tuple(streamed_graph.unresolved) == tuple(tally_graph.unresolved), seed
        assert streamed_graph.counts == tally_graph.counts, seed


def dict_orders(accounting):
    """The iteration order of a RunAccounting's dicts."""
    return (
        [c.ref(key) for key in accounting.iterations],
        [[c.clock(clock) for clock in timing.gpu] for timing in accounting.iterations.values()],
        [c.clock(clock) for clock in accounting.device_totals],
    )


def test_iterators_and_record_readers_agree(tmp_path):
    """iter_inference_events / iter_inference_records / read_inference_records
    give stormlog's physical line numbers and expanded dicts."""
    for seed in range(0, 40, 3):
        for writer in (generate.write_v2, generate.write_v4):
            path = writer(tmp_path / f"r{seed}.jsonl", generate.random_run(seed))
            storm = [(line, c.strict(r.to_record())) for line, r in c.STORM.iter_inference_events(path)]
            tally = [(line, c.strict(r.to_record())) for line, r in c.TALLY.iter_inference_events(path)]
            assert tally == storm
            # Each line's own dict, context restored, as stormlog gives it.
            storm = [(line, c.strict(r)) for line, r in c.STORM.iter_inference_records(path)]
            tally = [(line, c.strict(r)) for line, r in c.TALLY.iter_inference_records(path)]
            assert tally == storm
            assert [c.strict(r) for r in c.TALLY.read_inference_records(path)] == [
                c.strict(r) for r in c.STORM.read_inference_records(path)
            ]


def _canonical(record):
    return c.STORM.parse_inference_record(record).to_record()


def test_record_dicts_are_the_lines_own(tmp_path):
    """Each line's own dict (sparse where the line is, in its key order),
    a v4 reference's context restored as stormlog restores it."""
    records = generate.random_run(0)
    for path in (generate.write_v2(tmp_path / "sparse.jsonl", records), generate.write_v4(tmp_path / "v4.jsonl", records)):
        theirs = c.STORM.read_inference_records(path)
        ours = c.TALLY.read_inference_records(path)
        assert ours == theirs
        assert [list(row) for row in ours] == [list(row) for row in theirs], "key order"
        assert [c.strict(row) for _, row in c.TALLY.iter_inference_records(path)] == [c.strict(row) for row in theirs]


def test_blank_lines_count_as_lines(tmp_path):
    """Line numbers are physical: blank lines count, as in stormlog."""
    records = generate.random_run(5)
    text = "\n\n".join(json.dumps(r, sort_keys=True) for r in records) + "\n  \n"
    path = tmp_path / "blank.jsonl"
    path.write_text(text, encoding="utf-8")
    storm = [line for line, _ in c.STORM.iter_inference_events(path)]
    tally = [line for line, _ in c.TALLY.iter_inference_events(path)]
    assert tally == storm


def test_event_properties_agree(tmp_path):
    """schema_version, elapsed_ns, the typed fields and busy intervals of
    every loaded event are stormlog's."""
    fields = (
        "schema_version", "elapsed_ns", "event_id", "metadata", "EVENT_TYPE",
    )
    for seed in range(0, 30, 2):
        path = generate.write_v4(tmp_path / f"p{seed}.jsonl", generate.random_run(seed))
        storm_records, tally_records = _load_both(path)
        for storm, tally in zip(storm_records, tally_records):
            if isinstance(storm, c.STORM.LegacyInferenceRecord):
                assert isinstance(tally, c.TALLY.LegacyInferenceRecord)
                assert tally.raw == storm.raw
                continue
            for name in fields:
                assert getattr(tally, name) == getattr(storm, name), name
            assert isinstance(tally, getattr(c.TALLY, type(storm).__name__))
            assert isinstance(tally, c.TALLY.CorrelationEvent)
            assert c.strict(_context(tally)) == c.strict(_context(storm))
            if isinstance(storm, c.STORM.ActivityReferenceEvent):
                assert c.TALLY.activity_busy_intervals(tally) == c.STORM.activity_busy_intervals(storm)
                assert tally.attribution_status == storm.attribution_status
                assert tally.activity_domain == storm.activity_domain
                assert c.ref(tally.iteration_ref) == c.ref(storm.iteration_ref)
            if isinstance(storm, c.STORM.ClockAlignmentEvent):
                assert c.TALLY.alignment_offset_bounds(tally) == c.STORM.alignment_offset_bounds(storm)
                assert tally.offset_ns == storm.offset_ns


def _context(event):
    names = (
        "run_id", "session_id", "producer_id", "source", "clock_domain", "clock_kind", "collection_mode",
        "provenance", "source_version", "engine", "engine_version", "backend", "backend_version", "host", "pid",
        "device_uuid", "rank", "local_rank", "world_size",
    )
    return {name: getattr(event.context, name) for name in names}


def test_writer_round_trips(tmp_path):
    """write_inference_artifact writes what stormlog reads back as the same
    records, compact and embedded; tally's encoder gives stormlog's rows."""
    for seed in range(0, 20, 4):
        records = generate.random_run(seed)
        for compact in (True, False):
            path = tmp_path / f"w{seed}-{compact}.jsonl"
            c.TALLY.write_inference_artifact(path, c.TALLY.load_inference_artifact(
                generate.write_v2(tmp_path / f"src{seed}.jsonl", records)), compact=compact)
            expected = c.records(c.STORM.load_inference_artifact(tmp_path / f"src{seed}.jsonl"))
            assert c.records(c.STORM.load_inference_artifact(path)) == expected
        # Byte for byte the compact form of stormlog's encoder, given records
        # in their full form (stormlog's encoder writes a sparse dict as it
        # is given; tally writes every record's to_record()).
        full = [_canonical(r) for r in records]
        storm_path = generate.write_v4(tmp_path / f"s{seed}.jsonl", full)
        tally_path = tmp_path / f"t{seed}.jsonl"
        c.TALLY.write_inference_artifact(tally_path, full, compact=True)
        assert tally_path.read_bytes() == storm_path.read_bytes()


def test_a_line_longer_than_the_commands_default_limit_reads_as_in_stormlog(tmp_path):
    """stormlog reads a line of any length; the Python API reads one far
    past the `tally` command's default `--max-record-bytes` (8 MiB)."""
    records = generate.random_run(3)
    big = next(record for record in records if isinstance(record.get("metadata"), dict))
    note = "x" * (9 << 20)
    for record in records:
        # Every delivery of the event alike: a second one without the note
        # would be a conflicting identity.
        if record.get("event_id") == big["event_id"] and isinstance(record.get("metadata"), dict):
            record["metadata"]["note"] = note
    path = generate.write_v2(tmp_path / "long-line.jsonl", records)
    assert c.records(c.TALLY.load_inference_artifact(path)) == c.records(c.STORM.load_inference_artifact(path))
    assert c.TALLY.read_inference_records(path) == c.STORM.read_inference_records(path)
    assert len(list(c.TALLY.iter_inference_events(path))) == len(list(c.STORM.iter_inference_events(path)))
    _, streamed = c.TALLY.account_paths(path)
    storm = c.STORM.account_gpu_time(c.STORM.resolve_inference_events(c.STORM.load_inference_artifact(path)))
    assert c.accounting(streamed) == c.accounting(storm)
