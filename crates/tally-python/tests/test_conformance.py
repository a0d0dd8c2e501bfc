"""The conformance corpus (tests/conformance/, computed by stormlog 0.4.3)
through the Python API: the same expected values the `tally` binary is
held to, reached through load + resolve + account, and through
account_paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import conftest as c

MANIFEST = c.CONFORMANCE / "manifest.json"
CASES = json.loads(MANIFEST.read_text(encoding="utf-8"))["cases"]


def _cases(kind: str) -> list[dict]:
    return [case for case in CASES if case["kind"] == kind]


def _inputs(case: dict) -> list[Path]:
    return [c.CONFORMANCE / name for name in case["inputs"]]


def _expected(case: dict):
    return json.loads((c.CONFORMANCE / case["expected"]).read_text(encoding="utf-8"))


def _load(paths: list[Path]) -> list:
    return [record for path in paths for record in c.TALLY.load_inference_artifact(path)]


def test_manifest_has_every_kind():
    assert {case["kind"] for case in CASES} == {"account", "rejected", "shares", "align"}


@pytest.mark.parametrize("case", _cases("account"), ids=lambda case: case["name"])
def test_account_cases(case):
    graph = c.TALLY.resolve_inference_events(_load(_inputs(case)))
    accounting = c.TALLY.account_gpu_time(graph)
    expected = _expected(case)
    assert c.corpus_accounting(graph, accounting) == expected
    # Without tally's `counts`: the sizes of the tables themselves.
    assert {name: len(getattr(graph, name)) for name in expected["counts"]} == expected["counts"]
    streamed_graph, streamed = c.TALLY.account_paths(_inputs(case))
    assert c.corpus_accounting(streamed_graph, streamed) == expected
    assert streamed == accounting


@pytest.mark.parametrize("case", _cases("rejected"), ids=lambda case: case["name"])
def test_rejected_cases(case):
    expected = _expected(case)
    with pytest.raises(ValueError) as error:
        c.TALLY.resolve_inference_events(_load(_inputs(case)))
    assert str(error.value) == expected["message"]
    # account_paths names the file and line as `tally account` does.
    with pytest.raises(ValueError) as error:
        c.TALLY.account_paths(_inputs(case))
    message = str(error.value)
    assert message.endswith(expected["message"])
    assert f"line {expected['line']}:" in message, message
    assert expected["file"].split("/")[-1] in message, message


def _share_inputs(case: dict):
    model = json.loads((c.CONFORMANCE / case["model"]).read_text(encoding="utf-8"))
    T = c.TALLY
    estimates = []
    for share in model["shares"]:
        estimates.append(lambda share=share: T.RequestShareEstimate(
            request_ref=T.EntityRef(**share["request_ref"]),
            duration_ns=share["duration_ns"],
            model=share["model"],
            attempt_ref=T.EntityRef(**share["attempt_ref"]) if "attempt_ref" in share else None,
        ))
    return model, estimates


@pytest.mark.parametrize("case", _cases("shares"), ids=lambda case: case["name"])
def test_share_cases(case):
    T = c.TALLY
    graph = T.resolve_inference_events(_load(_inputs(case)))
    accounting = T.account_gpu_time(graph)
    model, estimates = _share_inputs(case)
    expected = _expected(case)
    try:
        shares = tuple(make() for make in estimates)
        result = T.validate_request_shares(
            graph, accounting, iteration_ref=T.EntityRef(**model["iteration_ref"]),
            device_clock=T.DeviceClock(**model["device_clock"]), shares=shares,
            unattributed_ns=model["unattributed_ns"],
        )
    except ValueError as error:
        assert expected["valid"] is False, error
        assert str(error) == expected["message"]
    else:
        assert expected == {
            "valid": True,
            "budget_ns": result.budget_ns,
            "attributed_ns": sum(share.duration_ns for share in result.shares),
            "unattributed_ns": result.unattributed_ns,
            "share_count": len(result.shares),
        }


@pytest.mark.parametrize("case", _cases("align"), ids=lambda case: case["name"])
def test_align_cases(case):
    T = c.TALLY
    graph = T.resolve_inference_events(_load(_inputs(case)))
    queries = _expected(case)
    assert len(queries) > 20
    for query in queries:
        where = dict(from_clock_domain=query["from"], to_clock_domain=query["to"], alignments=graph.alignments)
        if query["timestamp_ns"] >= 0:
            assert len(T.covering_alignments(query["timestamp_ns"], **where)) == query["covering"], query
        if "error" in query:
            with pytest.raises(ValueError) as error:
                T.align_timestamp(query["timestamp_ns"], **where)
            assert str(error.value) == query["error"]
        else:
            aligned = T.align_timestamp(query["timestamp_ns"], **where)
            assert (aligned.value_ns, aligned.uncertainty_ns, aligned.clock_domain) == (
                query["value_ns"], query["uncertainty_ns"], query["clock_domain"]), query
