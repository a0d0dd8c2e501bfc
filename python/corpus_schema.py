"""The conformance corpus's schema for accounting results (tests/conformance/README.md).

One home for turning a resolved graph and its GPU-time accounting into the
corpus's accounting object (the `tally account --format json` object), and
for the rule names the corpus gives stormlog's share-validation messages.
Used by python/fixtures/make_accounting_fixtures.py (which wrote the corpus),
python/conform/stormlog_batch.py (stormlog as a `tally conform`
implementation) and crates/tally-python/tests/conftest.py (tally.accounting
against the corpus); the scripts put this folder on `sys.path` to import it.

It reads attributes only, never imports stormlog: stormlog 0.4.3's objects
and tally.accounting's (the same names) both serve.
"""

from __future__ import annotations

from typing import Any

#: stormlog's `validate_request_shares` messages and the corpus's name of
#: the rule each breaks.
SHARE_RULES = {
    "estimated duration_ns must be non-negative": "negative-duration",
    "request share needs a model name": "missing-model",
    "no measured GPU budget for iteration and device clock": "no-budget",
    "unattributed_ns must be non-negative": "negative-remainder",
    "estimated request is not a member of the iteration": "not-member",
    "duplicate request share": "duplicate-share",
    "generic and attempt-specific request shares overlap": "generic-and-attempt",
    "request shares must use one estimation model": "several-models",
    "estimated shares and remainder must equal the measured budget": "sum-mismatch",
}

#: The graph's tables the accounting object counts, in the schema's order.
COUNTED_TABLES = ("requests", "iterations", "stages", "memberships", "activities", "alignments")


def ref_json(entity: Any) -> dict:
    """An EntityRef as the schema writes it."""
    return {"producer_id": entity.producer_id, "id": entity.id}


def clock_key(clock: Any) -> tuple[str, str, str]:
    """A DeviceClock's sort key: device, clock domain, clock kind."""
    return clock.device_uuid, clock.clock_domain, clock.clock_kind


def gpu_rows(table: dict) -> list[dict]:
    """A `{DeviceClock: GpuTime}` table as the schema's rows, by clock."""
    return [
        {
            "device_uuid": clock.device_uuid,
            "clock_domain": clock.clock_domain,
            "clock_kind": clock.clock_kind,
            "summed_activity_ns": time.summed_activity_ns,
            "busy_ns": time.busy_ns,
            "activity_count": time.activity_count,
        }
        for clock, time in sorted(table.items(), key=lambda item: clock_key(item[0]))
    ]


def account_json(graph: Any, accounting: Any) -> dict:
    """The corpus's accounting object from a resolved graph and its
    accounting (`resolve_inference_events` + `account_gpu_time`, or
    tally.accounting's `account_paths`).

    The counts are the graph's `counts` where it has them (tally's streamed
    graph keeps the counts, not the tables), else the sizes of its tables.
    """
    counts = getattr(graph, "counts", None)
    if counts is None:
        counts = {name: len(getattr(graph, name)) for name in COUNTED_TABLES}
    return {
        "run_id": accounting.run_id,
        "counts": dict(counts),
        "device_totals": gpu_rows(accounting.device_totals),
        "iterations": [
            {"iteration_ref": ref_json(iteration), "elapsed_ns": timing.elapsed_ns, "gpu": gpu_rows(timing.gpu)}
            for iteration, timing in sorted(
                accounting.iterations.items(), key=lambda item: (item[0].producer_id, item[0].id)
            )
        ],
        "unattributed_activity_refs": [ref_json(item) for item in accounting.unattributed_activity_refs],
        "unmeasured_gpu_activity_refs": [ref_json(item) for item in accounting.unmeasured_gpu_activity_refs],
        "unresolved": [
            {"event_id": item.event_id, "kind": item.kind, "ref": ref_json(item.ref)} for item in graph.unresolved
        ],
    }
