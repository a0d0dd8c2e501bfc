"""Clock alignments, busy intervals and rejected lines, as a trace-merging tool uses them."""

import sys
from pathlib import Path

from stormlog.infer.correlation_accounting import (
    align_timestamp,
    alignment_offset_bounds,
    covering_alignments,
)
from stormlog.infer.correlation_events import (
    ActivityReferenceEvent,
    ClockAlignmentEvent,
    CorrelationContext,
    EntityRef,
    activity_busy_intervals,
    load_inference_artifact,
    parse_inference_record,
)

CONTEXT = CorrelationContext(
    run_id="run-a", session_id="s", producer_id="merger", source="tool",
    clock_domain="host", clock_kind="monotonic", collection_mode="active", provenance="observed",
)


def main(out_dir: str) -> int:
    alignments = [
        ClockAlignmentEvent(context=CONTEXT, event_id="a-1", from_clock_domain="gpu", to_clock_domain="host",
                            offset_ns=1_000, uncertainty_ns=20, valid_from_ns=0, valid_to_ns=10_000),
        ClockAlignmentEvent(context=CONTEXT, event_id="a-2", from_clock_domain="gpu", to_clock_domain="host",
                            offset_ns=1_010, uncertainty_ns=5, valid_from_ns=10_000, valid_to_ns=20_000),
    ]
    for timestamp in (5, 9_999, 15_000):
        aligned = align_timestamp(timestamp, from_clock_domain="gpu", to_clock_domain="host", alignments=alignments)
        print(timestamp, aligned.value_ns, aligned.uncertainty_ns, aligned.clock_domain)
        print([a.event_id for a in covering_alignments(timestamp, from_clock_domain="gpu", to_clock_domain="host",
                                                         alignments=alignments)])
    try:
        align_timestamp(50_000, from_clock_domain="gpu", to_clock_domain="host", alignments=alignments)
    except ValueError as error:
        print("no alignment:", error)
    print(alignment_offset_bounds(alignments[0]))
    activity = ActivityReferenceEvent(
        context=CONTEXT, event_id="k", activity_ref=EntityRef("merger", "k"), activity_kind="kernel",
        attribution_status="unresolved", activity_domain="gpu", start_ns=100, end_ns=200,
        metadata={"intervals": [[0, 30], [50, 50]]},
    )
    print(activity.schema_version, activity_busy_intervals(activity))
    record = activity.to_record()
    print(parse_inference_record(record) == activity)
    bad = Path(out_dir) / "bad.jsonl"
    bad.write_text('{"schema_version": 2, "event_type": "infer.request"}\n', encoding="utf-8")
    try:
        load_inference_artifact(bad)
    except ValueError as error:
        print("bad line:", str(error).split(":")[0])
    try:
        load_inference_artifact(Path(out_dir) / "missing.jsonl")
    except FileNotFoundError as error:
        print("missing:", error.errno, error.strerror, Path(error.filename).name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
