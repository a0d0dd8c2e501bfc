"""stormlog 0.4.3's correlation API, computed by tally's Rust crates.

Change ``from stormlog.infer.correlation_accounting import ...`` (or
``correlation_events`` / ``correlation_codec``) to ``from tally.accounting
import ...``: the classes, functions, fields and exceptions are stormlog's.
Everything here is defined by the native module ``tally._native``; this
module only names what it exports.

Beyond stormlog: ``account_paths`` streams files as ``tally account`` does,
``write_inference_artifact`` writes an artifact, ``load_inference_artifact``
reads gzip, and ``resolve_inference_events`` also takes record dicts and
stormlog's own event objects.
"""

from ._native import (
    ACTIVITY_INTERVALS_SCHEMA_VERSION,
    CONTEXT_REFERENCE_SCHEMA_VERSION,
    CORRELATION_SCHEMA_VERSION,
    ActivityReferenceEvent,
    AlignedTimestamp,
    ArtifactIdentityEvent,
    CapabilityEvent,
    ClockAlignmentEvent,
    CorrelationContext,
    CorrelationEvent,
    CorrelationGraph,
    CorrelationRecordDecoder,
    CorrelationRecordEncoder,
    DeviceClock,
    EntityRef,
    GpuTime,
    InferenceRecordIterator,
    IterationEvent,
    IterationTiming,
    LegacyInferenceRecord,
    MembershipEvent,
    RequestEvent,
    RequestShareEstimate,
    RunAccounting,
    ShareBudget,
    StageEvent,
    UnresolvedReference,
    account_gpu_time,
    account_paths,
    activity_busy_intervals,
    align_timestamp,
    alignment_offset_bounds,
    covering_alignments,
    expand_inference_records,
    is_correlation_event_type,
    iter_inference_events,
    iter_inference_records,
    load_inference_artifact,
    parse_inference_record,
    read_inference_records,
    resolve_inference_events,
    validate_request_shares,
    write_inference_artifact,
)

#: A record of an artifact: a correlation event or an unchanged v1 record.
InferenceRecord = CorrelationEvent | LegacyInferenceRecord

__all__ = [
    "ACTIVITY_INTERVALS_SCHEMA_VERSION",
    "CONTEXT_REFERENCE_SCHEMA_VERSION",
    "CORRELATION_SCHEMA_VERSION",
    "ActivityReferenceEvent",
    "AlignedTimestamp",
    "ArtifactIdentityEvent",
    "CapabilityEvent",
    "ClockAlignmentEvent",
    "CorrelationContext",
    "CorrelationEvent",
    "CorrelationGraph",
    "CorrelationRecordDecoder",
    "CorrelationRecordEncoder",
    "DeviceClock",
    "EntityRef",
    "GpuTime",
    "InferenceRecord",
    "InferenceRecordIterator",
    "IterationEvent",
    "IterationTiming",
    "LegacyInferenceRecord",
    "MembershipEvent",
    "RequestEvent",
    "RequestShareEstimate",
    "RunAccounting",
    "ShareBudget",
    "StageEvent",
    "UnresolvedReference",
    "account_gpu_time",
    "account_paths",
    "activity_busy_intervals",
    "align_timestamp",
    "alignment_offset_bounds",
    "covering_alignments",
    "expand_inference_records",
    "is_correlation_event_type",
    "iter_inference_events",
    "iter_inference_records",
    "load_inference_artifact",
    "parse_inference_record",
    "read_inference_records",
    "resolve_inference_events",
    "validate_request_shares",
    "write_inference_artifact",
]
