#!/usr/bin/env python3
"""stormlog 0.4.3 as a batch-form implementation for `tally conform`.

Reads one JSON request per line on stdin and answers each with one JSON
line on stdout (tests/conformance/README.md, "The implementation contract"):

    {"kind": "account", "inputs": [paths]}              -> the accounting object
    {"kind": "shares", "inputs": [...], "model": path}  -> the share verdict
    {"kind": "align", "inputs": [...], "queries": path} -> {"answers": [...]}

and {"error": "..."} when stormlog refuses the inputs. Every answer is
computed by stormlog's own functions; this script only reads the files
(stormlog reads plain files only, so gzip is decompressed here) and writes
the results in the corpus's schema.

`--break RULE` makes it deliberately wrong in one rule, to prove that
`tally conform` catches and shrinks such a bug (see WRONG_RULES).

    .venv/bin/python python/conform/stormlog_batch.py [--break RULE]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import io
import json
import sys
from pathlib import Path
from typing import Any

from stormlog.infer import correlation_accounting as accounting_module
from stormlog.infer import correlation_events as events_module
from stormlog.infer.correlation_accounting import (
    DeviceClock,
    RequestShareEstimate,
    account_gpu_time,
    align_timestamp,
    covering_alignments,
    resolve_inference_events,
    validate_request_shares,
)
from stormlog.infer.correlation_codec import CorrelationRecordDecoder
from stormlog.infer.correlation_events import EntityRef

# corpus_schema (the corpus's accounting object and share-rule names, shared
# with the other scripts and the tally.accounting tests) lives in python/, one
# folder up, which is not on sys.path when this script runs as a file.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpus_schema import SHARE_RULES, account_json  # noqa: E402


# --------------------------------------------------------------------------
# Reading


def open_text(path: Path) -> io.TextIOBase:
    """The file as text with universal newlines, as stormlog opens it;
    gzip (by its magic bytes) decompressed first."""
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open(encoding="utf-8")


def load(paths: list[str]) -> list:
    """Every file's events in order: stormlog's `iter_inference_events`,
    one decoder per file."""
    records = []
    for name in paths:
        decoder = CorrelationRecordDecoder()
        with open_text(Path(name)) as handle:
            for line_number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    value = decoder.decode_event(json.loads(line))
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"{name}: line {line_number}: {exc}") from exc
                if value is not None:
                    records.append(value)
    return records


# --------------------------------------------------------------------------
# Answers, in the corpus's schema (python/corpus_schema.py)


def resolve(paths: list[str]):
    records = load(paths)
    graph = resolve_inference_events(records)
    return records, graph, ACCOUNT(graph, records)


def answer_account(request: dict) -> dict:
    _, graph, accounting = resolve(request["inputs"])
    return account_json(graph, accounting)


def answer_shares(request: dict) -> dict:
    _, graph, accounting = resolve(request["inputs"])
    model = json.loads(Path(request["model"]).read_text(encoding="utf-8"))
    return share_verdict(graph, accounting, model)


def share_verdict(graph, accounting, model: dict) -> dict:
    """What stormlog's `validate_request_shares` says of a share model (in
    the corpus's JSON): the verdict object. The fixture script writes the
    corpus's expectations with it too."""
    clock = model["device_clock"]
    device_clock = DeviceClock(clock["device_uuid"], clock["clock_domain"], clock.get("clock_kind", "monotonic"))
    try:
        estimates = tuple(
            RequestShareEstimate(
                request_ref=EntityRef(**share["request_ref"]),
                duration_ns=share["duration_ns"],
                model=share["model"],
                attempt_ref=EntityRef(**share["attempt_ref"]) if share.get("attempt_ref") else None,
            )
            for share in model["shares"]
        )
        result = validate_request_shares(
            graph, accounting, iteration_ref=EntityRef(**model["iteration_ref"]), device_clock=device_clock,
            shares=estimates, unattributed_ns=model["unattributed_ns"],
        )
    except ValueError as error:
        return {"valid": False, "rule": SHARE_RULES[str(error)], "message": str(error)}
    return {
        "valid": True,
        "budget_ns": result.budget_ns,
        "attributed_ns": sum(share.duration_ns for share in result.shares),
        "unattributed_ns": result.unattributed_ns,
        "share_count": len(result.shares),
    }


def answer_align(request: dict) -> dict:
    _, graph, _ = resolve(request["inputs"])
    queries = json.loads(Path(request["queries"]).read_text(encoding="utf-8"))
    answers = []
    for query in queries:
        answers.append(alignment_answer(query["timestamp_ns"], query["from"], query["to"], graph.alignments))
    return {"answers": answers}


def alignment_answer(timestamp, source: str, target: str, alignments) -> dict:
    """stormlog's answer to one alignment query: how many alignments cover
    it, and `align_timestamp`'s result or its error. The fixture script
    writes the corpus's expectations with it too."""
    covering = len(covering_alignments(timestamp, from_clock_domain=source, to_clock_domain=target,
                                       alignments=alignments))
    try:
        aligned = align_timestamp(timestamp, from_clock_domain=source, to_clock_domain=target,
                                  alignments=alignments)
    except ValueError as error:
        return {"covering": covering, "error": str(error)}
    return {"covering": covering, "value_ns": aligned.value_ns, "uncertainty_ns": aligned.uncertainty_ns,
            "clock_domain": aligned.clock_domain}


ANSWERS = {"account": answer_account, "shares": answer_shares, "align": answer_align}


def ACCOUNT(graph, records):  # noqa: N802 - replaced by --break no-dedup
    return account_gpu_time(graph)


# --------------------------------------------------------------------------
# Deliberately wrong rules


def break_busy_is_sum() -> None:
    """Busy time as the sum of the intervals, not their union."""
    accounting_module._merged_duration = lambda intervals: sum(end - start for start, end in intervals)


def break_no_dedup() -> None:
    """Accounting counts every delivery of an activity, not each activity once."""
    global ACCOUNT

    class Deliveries(dict):
        def __init__(self, events):
            super().__init__()
            self.events = events

        def values(self):
            return self.events

    def account(graph, records):
        delivered = [r for r in records if isinstance(r, events_module.ActivityReferenceEvent)]
        return account_gpu_time(dataclasses.replace(graph, activities=Deliveries(delivered)))

    ACCOUNT = account


def break_intervals_ignored() -> None:
    """metadata.intervals ignored: an activity is busy for its whole span."""

    def busy(activity):
        if activity.start_ns is None or activity.end_ns is None:
            return None
        return [(activity.start_ns, activity.end_ns)]

    accounting_module.activity_busy_intervals = busy


def break_elapsed_on_wall() -> None:
    """Elapsed time computed on any clock, wall clocks included."""

    def elapsed(self):
        start, end = getattr(self, "start_ns", None), getattr(self, "end_ns", None)
        return None if start is None or end is None else end - start

    events_module.CorrelationEvent.elapsed_ns = property(elapsed)


def break_unresolved_order() -> None:
    """Unresolved references sorted by the reference first, not the event ID."""
    original = accounting_module._find_unresolved

    def find(graph):
        return tuple(sorted(original(graph), key=lambda item: (item.ref.id, item.kind, item.event_id)))

    accounting_module._find_unresolved = find


def break_wall_clock_measured() -> None:
    """Activities on a wall clock measured as if the clock were monotonic."""

    def device_clock(activity):
        context = activity.context
        if context.device_uuid is None or activity.start_ns is None or activity.end_ns is None:
            return None
        return DeviceClock(context.device_uuid, context.clock_domain, context.clock_kind)

    accounting_module._device_clock = device_clock


def break_share_budget_summed() -> None:
    """The share budget taken from summed activity time, not busy time."""
    original = accounting_module.validate_request_shares

    def validate(graph, accounting, *, iteration_ref, device_clock, shares, unattributed_ns):
        iteration = accounting.iterations.get(iteration_ref)
        if iteration is not None and device_clock in iteration.gpu:
            time = iteration.gpu[device_clock]
            summed = dataclasses.replace(time, busy_ns=time.summed_activity_ns)
            gpu = {**iteration.gpu, device_clock: summed}
            iterations = {**accounting.iterations, iteration_ref: dataclasses.replace(iteration, gpu=gpu)}
            accounting = dataclasses.replace(accounting, iterations=iterations)
        return original(graph, accounting, iteration_ref=iteration_ref, device_clock=device_clock,
                        shares=shares, unattributed_ns=unattributed_ns)

    global validate_request_shares
    validate_request_shares = validate


WRONG_RULES = {
    "busy-is-sum": break_busy_is_sum,
    "no-dedup": break_no_dedup,
    "intervals-ignored": break_intervals_ignored,
    "elapsed-on-wall": break_elapsed_on_wall,
    "unresolved-order": break_unresolved_order,
    "wall-clock-measured": break_wall_clock_measured,
    "share-budget-summed": break_share_budget_summed,
}


# --------------------------------------------------------------------------


def answer(request: dict) -> Any:
    handler = ANSWERS.get(request.get("kind"))
    if handler is None:
        return {"error": f"unsupported kind: {request.get('kind')!r}"}
    try:
        return handler(request)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, json.JSONDecodeError, EOFError, OSError) as error:
        return {"error": f"{type(error).__name__}: {error}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--break", dest="broken", choices=sorted(WRONG_RULES), help="be wrong in this one rule")
    arguments = parser.parse_args()
    if arguments.broken:
        WRONG_RULES[arguments.broken]()
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
