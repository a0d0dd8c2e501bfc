"""tally.partials: a run's files made into partials, merged in any order and
grouping, and accounted or broken down, give exactly what
``tally.accounting.account_paths`` / ``breakdown_paths`` give for all the
files in one process."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import tally.accounting as accounting
import tally.partials as partials

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "serving-run.jsonl"
KINETO = [
    ROOT / "crates" / "tally-trace" / "tests" / "fixtures" / "kineto" / f"sampled-rank-{rank}.json.gz"
    for rank in (0, 1)
]


def split_artifact(source: Path, directory: Path, files: int) -> list[Path]:
    """The v4 artifact dealt round robin between `files` files, every
    ``infer.context`` line copied into each (a record names its context by
    ID, so each file needs them)."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    contexts = [line for line in lines if '"event_type": "infer.context"' in line]
    others = [line for line in lines if line not in contexts]
    assert contexts and others
    paths = []
    for index in range(files):
        path = directory / f"part-{index}.jsonl"
        path.write_text("".join(contexts + others[index::files]), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture
def artifacts(tmp_path: Path) -> list[Path]:
    return split_artifact(EXAMPLE, tmp_path, 3)


def same_accounting(got, expected) -> None:
    """Two ``(graph, accounting)`` pairs are equal: the accounting, and all
    a streamed graph has (run ID, unresolved references, table sizes)."""
    (got_graph, got_accounting), (graph, expected_accounting) = got, expected
    assert got_accounting == expected_accounting
    assert got_graph.run_id == graph.run_id
    assert tuple(got_graph.unresolved) == tuple(graph.unresolved)
    assert got_graph.counts == graph.counts


def test_artifact_partials_account_as_one_process(artifacts):
    expected = accounting.account_paths(artifacts)
    # The split loses nothing: the same as the original file.
    same_accounting(expected, accounting.account_paths(EXAMPLE))
    assert expected[1].device_totals, "the example has GPU activity to account"
    parts = [partials.make(path) for path in artifacts]
    assert all(isinstance(part, bytes) for part in parts)
    same_accounting(partials.account(parts), expected)
    # One partial of all the files is the same partial of the run.
    same_accounting(partials.account([partials.make(artifacts)]), expected)


def test_merge_order_and_grouping_do_not_matter(artifacts):
    expected = accounting.account_paths(artifacts)
    parts = [partials.make(path) for path in artifacts]
    for order in itertools.permutations(parts):
        a, b, c = order
        same_accounting(partials.account(order), expected)
        same_accounting(partials.account([partials.merge(order)]), expected)
        same_accounting(partials.account([partials.merge([a, b]), c]), expected)
        same_accounting(partials.account([partials.merge([c, partials.merge([b, a])])]), expected)
    # A partial merged with itself (the same files twice) adds nothing.
    same_accounting(partials.account([partials.merge(parts), *parts]), expected)


def test_artifact_partials_break_down_as_one_process(artifacts):
    for options in ({}, {"by_iteration": True}, {"category_patterns": ["communication=*gemm*"]}):
        expected = accounting.breakdown_paths(artifacts, **options)
        assert expected["devices"], "the example has devices to break down"
        parts = [partials.make(path, per_kernel=True) for path in artifacts]
        assert partials.breakdown(parts, **options) == expected
        assert partials.breakdown([partials.merge(parts[::-1])], **options) == expected
    assert accounting.breakdown_paths(artifacts, by_iteration=True)["devices"][0]["iterations"]


def test_trace_partials_share_the_run_id(tmp_path):
    run_id = partials.default_run_id(KINETO)
    assert run_id and run_id.startswith("trace-import-")
    # What each machine computes of its own traces gives the same ID.
    ids = [id_ for path in KINETO for id_ in partials.trace_attachment_ids(path)]
    assert len(ids) == 2
    assert partials.run_id_of_attachments(ids) == run_id
    assert partials.run_id_of_attachments([]) is None
    assert partials.default_run_id(EXAMPLE) is None

    expected = accounting.account_paths(KINETO)
    assert expected[0].run_id == run_id
    assert expected[1].device_totals
    parts = [partials.make(path, run_id=run_id) for path in KINETO]
    same_accounting(partials.account(parts), expected)
    same_accounting(partials.account(parts[::-1]), expected)
    # Each trace's own default run ID is another run: refused, as one
    # process refuses an artifact of two runs.
    with pytest.raises(ValueError, match="multiple run_id values"):
        partials.account([partials.make(path) for path in KINETO])

    given = accounting.account_paths(KINETO, run_id="ranks")
    assert given[0].run_id == "ranks"
    same_accounting(partials.account([partials.make(path, run_id="ranks") for path in KINETO]), given)

    breakdown = accounting.breakdown_paths(KINETO)
    assert breakdown["run_id"] == run_id and breakdown["devices"]
    parts = [partials.make(path, run_id=run_id, per_kernel=True) for path in KINETO]
    assert partials.breakdown(parts) == breakdown
    assert partials.breakdown([partials.merge(parts[::-1])], by_iteration=True) == accounting.breakdown_paths(
        KINETO, by_iteration=True
    )


def test_trace_partials_made_for_the_other_purpose_are_refused():
    run_id = partials.default_run_id(KINETO)
    per_launch = [partials.make(path, run_id=run_id) for path in KINETO]
    per_kernel = [partials.make(path, run_id=run_id, per_kernel=True) for path in KINETO]
    with pytest.raises(ValueError, match="make the partials with per_kernel=True"):
        partials.breakdown(per_launch)
    with pytest.raises(ValueError, match="make the partials without per_kernel"):
        partials.account(per_kernel)
    # Two imports of one run's traces are never merged.
    with pytest.raises(ValueError, match=r"^partial 1: its traces were imported one record per kernel"):
        partials.merge([per_launch[0], per_kernel[1]])


def test_a_mix_of_traces_and_artifacts(artifacts):
    # The traces imported into the artifacts' run.
    run_id = accounting.account_paths(artifacts)[0].run_id
    expected = accounting.account_paths([*artifacts, *KINETO], run_id=run_id)
    assert expected[0].run_id == run_id
    parts = [partials.make(path, run_id=run_id) for path in [*artifacts, *KINETO]]
    same_accounting(partials.account(parts), expected)


def test_damaged_partials_are_refused(artifacts):
    part = partials.make(artifacts[0])
    good = partials.make(artifacts[1])
    damaged = {
        "truncated": part[: len(part) // 2],
        "empty": b"",
        "not a partial": b'{"event_type": "infer.context"}\n',
        "flipped": part[:-9] + bytes([part[-9] ^ 0xFF]) + part[-8:],
    }
    for name, bytes_ in damaged.items():
        for call in (partials.merge, partials.account, partials.breakdown):
            with pytest.raises(ValueError, match=r"^partial 1: byte \d+: ") as raised:
                call([good, bytes_])
            assert "panic" not in str(raised.value), name
    with pytest.raises(TypeError, match="a partial must be bytes"):
        partials.merge([good, 42])
    # bytearray and memoryview are bytes too.
    same_accounting(
        partials.account([bytearray(part), memoryview(good)]), partials.account([part, good])
    )


def test_errors_name_the_file(artifacts, tmp_path):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(FileNotFoundError) as raised:
        partials.make([artifacts[0], missing])
    assert raised.value.filename == str(missing)
    with pytest.raises(FileNotFoundError):
        partials.default_run_id([missing])
    # A rejection found only when partials merge (a redelivery of an event
    # with other content) names the original file and line, as one process
    # names it.
    lines = artifacts[0].read_text(encoding="utf-8").splitlines()
    contexts = [line for line in lines if '"event_type": "infer.context"' in line]
    iteration = next(json.loads(line) for line in lines if '"event_type": "infer.iteration"' in line)
    bad = tmp_path / "redelivered.jsonl"
    changed = {**iteration, "end_ns": iteration["end_ns"] + 1}
    bad.write_text("\n".join([*contexts, json.dumps(changed)]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as single:
        accounting.account_paths([artifacts[0], bad])
    with pytest.raises(ValueError) as merged:
        partials.account([partials.make(artifacts[0]), partials.make(bad)])
    assert str(merged.value) == str(single.value)
    assert str(merged.value) == f"{bad}: line {len(contexts) + 1}: conflicting event identity"
