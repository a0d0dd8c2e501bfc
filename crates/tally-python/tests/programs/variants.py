"""Test cases built as variants of one base event with dataclasses.replace,
at import time, as a test module of a serving program builds them."""

import dataclasses
import json
import sys

from stormlog.infer.correlation_events import (
    ActivityReferenceEvent,
    CorrelationContext,
    EntityRef,
    IterationEvent,
    MembershipEvent,
    RequestEvent,
)

CONTEXT = CorrelationContext(
    run_id="run-1", session_id="s-1", producer_id="server", source="engine",
    clock_domain="host-mono", clock_kind="monotonic", collection_mode="active", provenance="observed",
)
BASE = ActivityReferenceEvent(
    context=CONTEXT, event_id="act-0", activity_ref=EntityRef("server", "k-0"),
    activity_kind="kernel", attribution_status="linked", activity_domain="gpu",
    iteration_ref=EntityRef("server", "it-0"), start_ns=100, end_ns=250,
)
# The variants a test module makes at import time.
VARIANTS = [
    dataclasses.replace(BASE, event_id=f"act-{n}", activity_ref=EntityRef("server", f"k-{n}"),
                        start_ns=100 + 50 * n, end_ns=260 + 50 * n)
    for n in range(1, 4)
]
TAGGED = dataclasses.replace(BASE, metadata={"kernel": "gemm", "grid": [4, 1, 1]})
ITERATION = IterationEvent(context=CONTEXT, event_id="it-0", iteration_ref=EntityRef("server", "it-0"),
                           start_ns=90, end_ns=400)
REQUEST = RequestEvent(context=CONTEXT, event_id="req-0", request_ref=EntityRef("server", "r-0"),
                       start_ns=50, end_ns=500, status="ok", input_tokens=12)
MEMBER = MembershipEvent(context=CONTEXT, event_id="m-0", request_ref=REQUEST.request_ref,
                         iteration_ref=ITERATION.iteration_ref, role="decode")


def describe(event):
    match event:
        case ActivityReferenceEvent(activity_kind="kernel", start_ns=start, end_ns=end):
            return f"kernel {event.activity_ref.id} {end - start} ns"
        case IterationEvent(iteration_ref=EntityRef(id=ident)):
            return f"iteration {ident}"
        case _:
            return type(event).__name__


def main():
    events = [BASE, *VARIANTS, TAGGED, ITERATION, REQUEST, MEMBER]
    for event in events:
        print(describe(event), event.elapsed_ns, event.schema_version)
        print(json.dumps(event.to_record(), sort_keys=True))
        print(json.dumps(dataclasses.asdict(event), sort_keys=True))
    print([field.name for field in dataclasses.fields(REQUEST)])
    print(dataclasses.astuple(REQUEST.request_ref), dataclasses.is_dataclass(REQUEST))
    print(all(variant.context is BASE.context for variant in VARIANTS))
    print(TAGGED.iteration_ref is BASE.iteration_ref, TAGGED.metadata)
    try:
        dataclasses.replace(BASE, start_ns=-5)
    except ValueError as error:
        print("rejected:", error)
    try:
        dataclasses.replace(BASE, end_ns=10)
    except ValueError as error:
        print("rejected:", error)
    try:
        BASE.event_id = "mutated"
    except dataclasses.FrozenInstanceError as error:
        print("frozen:", error)
    print(repr(BASE.activity_ref), BASE == dataclasses.replace(BASE), hash(BASE.activity_ref) == hash(EntityRef("server", "k-0")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
