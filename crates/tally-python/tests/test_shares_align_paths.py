"""validate_request_shares, align_timestamp and covering_alignments against
stormlog on generated runs; account_paths (single files, rank sets, gzip);
tally.trace.import_trace on the repository's Kineto fixtures."""

from __future__ import annotations

import gzip
import json
import random
import os
import pathlib
import shutil
import subprocess

import pytest

import conftest as c
import generate


def _both(path):
    out = {}
    for side in (c.STORM, c.TALLY):
        graph = side.resolve_inference_events(side.load_inference_artifact(path))
        out[side.name] = (side, graph, side.account_gpu_time(graph))
    return out


def _both_of_run(write, path, seed):
    """``_both`` of generated run ``seed``, written to ``path`` by ``write``:
    each side's name with its (side, graph, accounting)."""
    return _both(write(path, generate.random_run(seed))).items()


def _share_models(side, graph, accounting, rng):
    """Share models for each measured iteration: valid ones and ones that
    break each rule (keyword dicts for validate_request_shares)."""
    R = side.EntityRef
    for iteration, timing in sorted(accounting.iterations.items(), key=lambda kv: c.ref(kv[0])):
        members = sorted({(c.ref(m.request_ref), c.ref(m.attempt_ref)) for m in graph.memberships
                          if m.iteration_ref == iteration}, key=repr)
        clocks = sorted(timing.gpu, key=c.clock) or [side.DeviceClock("GPU-0", "cuda:0", "device")]
        for clock in clocks:
            budget = timing.gpu[clock].busy_ns if clock in timing.gpu else 0

            def share(member, duration, model="m"):
                (request, attempt) = member
                return dict(request=R(*request), attempt=R(*attempt) if attempt else None,
                            duration=duration, model=model)

            plans = [([], budget), ([], budget + 1), ([], -1), ([], True)]
            if members:
                first = members[0]
                generic = (first[0], None)
                plans += [
                    ([share(first, budget)], 0),
                    ([share(generic, budget)], 0),
                    ([share(first, 1), share(first, 1)], budget - 2),
                    ([share(generic, 1), share((first[0], ("api", "other-try")), 1)], budget - 2),
                    ([share(first, 1, "a"), share(members[-1], 1, "b")], budget - 2),
                    ([share((("api", "stranger"), None), 0)], budget),
                    ([share(first, rng.randint(0, max(0, budget)))], rng.randint(0, max(0, budget))),
                ]
            yield iteration, clock, plans
            yield iteration, side.DeviceClock("GPU-none", clock.clock_domain, clock.clock_kind), plans[:1]
    yield R("nobody", "nothing"), side.DeviceClock("GPU-0", "cuda:0"), [([], 0)]


def _validate(side, graph, accounting, iteration, clock, plan, remainder):
    shares = tuple(side.RequestShareEstimate(request_ref=s["request"], duration_ns=s["duration"], model=s["model"],
                                             attempt_ref=s["attempt"]) for s in plan)
    result = side.validate_request_shares(graph, accounting, iteration_ref=iteration, device_clock=clock,
                                          shares=shares, unattributed_ns=remainder)
    return (c.ref(result.iteration_ref), c.clock(result.device_clock), result.budget_ns,
            tuple((c.ref(s.request_ref), c.ref(s.attempt_ref), s.duration_ns, s.model) for s in result.shares),
            result.unattributed_ns)


@pytest.mark.parametrize("seed", range(0, 40, 2))
def test_share_validation_agrees(tmp_path, seed):
    outcomes = {}
    for name, (side, graph, accounting) in _both_of_run(generate.write_v4, tmp_path / f"s{seed}.jsonl", seed):
        rng = random.Random(seed)
        outcomes[name] = [
            c.outcome(lambda: _validate(side, graph, accounting, iteration, clock, plan, remainder))
            for iteration, clock, plans in _share_models(side, graph, accounting, rng)
            for plan, remainder in plans
        ]
    assert outcomes["tally"] == outcomes["stormlog"]


def test_share_estimate_rules(side):
    R = side.EntityRef("api", "r")
    for duration, model in [(-1, "m"), (True, "m"), (1.5, "m"), ("1", "m"), (1, ""), (-1, ""), (0, None)]:
        storm = c.outcome(lambda: c.STORM.RequestShareEstimate(request_ref=R, duration_ns=duration, model=model))
        tally = c.outcome(lambda: c.TALLY.RequestShareEstimate(request_ref=R, duration_ns=duration, model=model))
        assert (tally[0], tally[1] if tally[0] == "error" else None) == (
            storm[0], storm[1] if storm[0] == "error" else None), (duration, model)


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_alignment_agrees(tmp_path, seed):
    results = {}
    for name, (side, graph, _accounting) in _both_of_run(generate.write_v2, tmp_path / f"a{seed}.jsonl", seed):
        pairs = sorted({(a.from_clock_domain, a.to_clock_domain) for a in graph.alignments})
        pairs += [("host-a", "host-a"), ("host-a", "nowhere"), ("cuda:0", "host-a")]
        rows = []
        for source, target in pairs:
            for timestamp in (0, 1, 3_999, 4_000, 4_999, 5_000, 10**12, -1, True):
                where = dict(from_clock_domain=source, to_clock_domain=target, alignments=graph.alignments)
                aligned = c.outcome(lambda: side.align_timestamp(timestamp, **where))
                if aligned[0] == "ok":
                    aligned = ("ok", (aligned[1].value_ns, aligned[1].uncertainty_ns, aligned[1].clock_domain))
                covering = c.outcome(lambda: [a.to_record() for a in side.covering_alignments(timestamp, **where)])
                rows.append((source, target, timestamp, aligned, covering))
        rows.append([side.alignment_offset_bounds(a) for a in graph.alignments])
        results[name] = rows
    assert results["tally"] == results["stormlog"]


# --------------------------------------------------------------------------
# account_paths


def test_account_paths_single_files_and_gzip(tmp_path):
    for seed in range(0, 30, 3):
        records = generate.random_run(seed)
        for writer in (generate.write_v2, generate.write_v4):
            path = writer(tmp_path / f"p{seed}.jsonl", records)
            graph = c.TALLY.resolve_inference_events(c.TALLY.load_inference_artifact(path))
            expected = c.TALLY.account_gpu_time(graph)
            storm = c.STORM.account_gpu_time(c.STORM.resolve_inference_events(c.STORM.load_inference_artifact(path)))
            assert c.accounting(expected) == c.accounting(storm)
            streamed_graph, streamed = c.TALLY.account_paths(path)
            assert streamed == expected
            assert streamed_graph.unresolved == graph.unresolved
            assert streamed_graph.run_id == graph.run_id
            # gzip: stormlog cannot read it, tally reads it by content.
            packed = tmp_path / f"p{seed}.jsonl.gz"
            with path.open("rb") as source, gzip.open(packed, "wb") as target:
                shutil.copyfileobj(source, target)
            assert c.TALLY.account_paths([packed])[1] == expected
            assert c.TALLY.account_gpu_time(c.TALLY.resolve_inference_events(
                c.TALLY.load_inference_artifact(packed))) == expected
            assert c.records(c.TALLY.load_inference_artifact(packed)) == c.records(c.STORM.load_inference_artifact(path))


def test_account_paths_rank_sets(tmp_path):
    for seed in range(3):
        paths = []
        for rank in range(3):
            records = generate.retag(generate.random_run(100 * seed + rank, run_id=f"ranks-{seed}"), f"@{rank}")
            writer = generate.write_v4 if rank % 2 else generate.write_v2
            paths.append(writer(tmp_path / f"s{seed}-rank{rank}.jsonl", records))
        storm_records = [r for p in paths for r in c.STORM.load_inference_artifact(p)]
        storm = c.STORM.account_gpu_time(c.STORM.resolve_inference_events(storm_records))
        tally_records = [r for p in paths for r in c.TALLY.load_inference_artifact(p)]
        tally = c.TALLY.account_gpu_time(c.TALLY.resolve_inference_events(tally_records))
        assert c.accounting(tally) == c.accounting(storm)
        assert c.TALLY.account_paths(paths)[1] == tally
        assert c.TALLY.account_paths(reversed(paths))[1] == tally


def test_account_paths_graph_has_no_event_tables(tmp_path):
    path = generate.write_v2(tmp_path / "g.jsonl", generate.random_run(1))
    graph, _ = c.TALLY.account_paths([path])
    with pytest.raises(AttributeError):
        graph.requests


def test_missing_file(tmp_path):
    for call in (c.STORM.load_inference_artifact, c.TALLY.load_inference_artifact):
        with pytest.raises(FileNotFoundError):
            call(tmp_path / "absent.jsonl")
    with pytest.raises(OSError):
        c.TALLY.account_paths([tmp_path / "absent.jsonl"])


# --------------------------------------------------------------------------
# Trace import

KINETO = c.ROOT / "crates" / "tally-trace" / "tests" / "fixtures" / "kineto"
TRACES = sorted(KINETO.glob("*.json.gz")) if KINETO.is_dir() else []


@pytest.mark.parametrize("trace", TRACES or [None], ids=lambda p: p.name if p else "none")
def test_import_trace(tmp_path, trace):
    if trace is None:
        pytest.skip(f"no Kineto trace fixtures under {KINETO}")
    import tally.trace

    records = tally.trace.import_trace(trace)
    activities = [r for r in records if isinstance(r, c.TALLY.ActivityReferenceEvent)]
    assert activities, "the trace gave no activity"
    gpu = [a for a in activities if a.activity_domain == "gpu"]
    assert all(a.start_ns is None or a.end_ns is None or a.end_ns >= a.start_ns for a in activities)
    graph = c.TALLY.resolve_inference_events(records)
    accounting = c.TALLY.account_gpu_time(graph)
    if gpu:
        assert accounting.device_totals, "GPU activities but no device total"
        for total in accounting.device_totals.values():
            assert 0 < total.busy_ns <= total.summed_activity_ns
            assert total.activity_count > 0
    # Written with tally and read back by stormlog, the accounting is the same.
    path = tmp_path / "imported.jsonl"
    c.TALLY.write_inference_artifact(path, records)
    storm = c.STORM.account_gpu_time(c.STORM.resolve_inference_events(c.STORM.load_inference_artifact(path)))
    assert c.accounting(storm) == c.accounting(accounting)
    # The command's import of the same trace, when the binary is built.
    # `cargo xtask test` names the binary its `cargo test` built.
    candidates = [os.environ.get("TALLY_BIN"), c.ROOT / "target" / "debug" / "tally", c.ROOT / "target" / "release" / "tally"]
    binary = next((pathlib.Path(found) for found in candidates if found and pathlib.Path(found).exists()), None)
    if binary is None:
        pytest.skip("no tally binary is built (TALLY_BIN, target/debug, target/release); the in-memory comparison above ran")
    cli = tmp_path / "cli.jsonl"
    run = subprocess.run([str(binary), "import", str(trace), "-o", str(cli)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    from_cli = c.TALLY.account_gpu_time(c.TALLY.resolve_inference_events(c.TALLY.load_inference_artifact(cli)))
    assert c.accounting(from_cli) == c.accounting(accounting)


def test_import_trace_json_is_loadable_as_list_of_paths():
    if len(TRACES) < 2:
        pytest.skip("fewer than two Kineto trace fixtures")
    import tally.trace

    ranks = [p for p in TRACES if p.name.startswith("sampled-rank-")]
    if len(ranks) < 2:
        pytest.skip("no sampled-rank-* pair among the Kineto fixtures")
    records = tally.trace.import_trace(ranks)
    assert len({r.context.run_id for r in records if hasattr(r, "context")}) == 1
    assert json.dumps([r.to_record() for r in records[:3]])
