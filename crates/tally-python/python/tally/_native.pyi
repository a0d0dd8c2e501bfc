"""Type stubs of tally's native module (``tally._native``).

The classes and functions mirror stormlog 0.4.3's
``stormlog.infer.correlation_events``, ``correlation_codec`` and
``correlation_accounting``; ``tally.accounting`` re-exports them.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, ClassVar, final

_Path = str | PathLike[str]

CORRELATION_SCHEMA_VERSION: int
ACTIVITY_INTERVALS_SCHEMA_VERSION: int
CONTEXT_REFERENCE_SCHEMA_VERSION: int
#: The package's version: the Rust crates' version.
__version__: str

# stormlog's classes are frozen dataclasses (the events keyword-only); tally's
# native classes carry that dataclass protocol (fields, frozen assignment,
# replace), so they are declared here as stormlog declares them.

@final
@dataclass(frozen=True)
class EntityRef:
    """An ID scoped to its producer within a run."""

    producer_id: str
    id: str

@final
@dataclass(frozen=True)
class CorrelationContext:
    """Capture identity and evidence quality shared by one emitted record."""

    run_id: str
    session_id: str
    producer_id: str
    source: str
    clock_domain: str
    clock_kind: str
    collection_mode: str
    provenance: str
    source_version: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    backend: str | None = None
    backend_version: str | None = None
    host: str | None = None
    pid: int | None = None
    device_uuid: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None

# Not constructible itself (``init=False``): each event class is.
@dataclass(frozen=True, kw_only=True, init=False)
class CorrelationEvent:
    """Common event identity; subclasses own their event-specific evidence."""

    context: CorrelationContext
    event_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    EVENT_TYPE: ClassVar[str]
    @property
    def schema_version(self) -> int: ...
    @property
    def elapsed_ns(self) -> int | None: ...
    def to_record(self) -> dict[str, Any]: ...

@final
@dataclass(frozen=True, kw_only=True)
class ArtifactIdentityEvent(CorrelationEvent):
    """Versioned run identity for an inference JSONL artifact."""

    artifact_kind: str
    created_at_ns: int

@final
@dataclass(frozen=True, kw_only=True)
class RequestEvent(CorrelationEvent):
    """One logical request observation; attempts are separate identities."""

    request_ref: EntityRef
    attempt_ref: EntityRef | None = None
    backend_request_ref: EntityRef | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    status: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    kv_bytes: int | None = None

@final
@dataclass(frozen=True, kw_only=True)
class IterationEvent(CorrelationEvent):
    """One server execution iteration, recorded once for all participants."""

    iteration_ref: EntityRef
    batch_ref: EntityRef | None = None
    start_ns: int | None = None
    end_ns: int | None = None

@final
@dataclass(frozen=True, kw_only=True)
class StageEvent(CorrelationEvent):
    """A generic named stage span, for LLM and non-LLM workloads."""

    stage_ref: EntityRef
    name: str
    request_ref: EntityRef | None = None
    iteration_ref: EntityRef | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    kv_bytes: int | None = None

@final
@dataclass(frozen=True, kw_only=True)
class MembershipEvent(CorrelationEvent):
    """One request's role in one shared execution iteration."""

    request_ref: EntityRef
    iteration_ref: EntityRef
    role: str
    attempt_ref: EntityRef | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    kv_bytes: int | None = None

@final
@dataclass(frozen=True, kw_only=True)
class ActivityReferenceEvent(CorrelationEvent):
    """A scoped trace activity and its optional link to an iteration."""

    activity_ref: EntityRef
    activity_kind: str
    attribution_status: str
    activity_domain: str = "unknown"
    iteration_ref: EntityRef | None = None
    correlation_scope: EntityRef | None = None
    trace_attachment_id: str | None = None
    runtime_correlation_id: int | None = None
    cuda_correlation_id: int | None = None
    stream_id: int | None = None
    graph_id: int | None = None
    start_ns: int | None = None
    end_ns: int | None = None

@final
@dataclass(frozen=True, kw_only=True)
class CapabilityEvent(CorrelationEvent):
    """Availability and outcome for one optional capture component."""

    component: str
    available: bool
    supported: list[str] = field(default_factory=list)
    enabled: list[str] = field(default_factory=list)
    collected: list[str] = field(default_factory=list)

@final
@dataclass(frozen=True, kw_only=True)
class ClockAlignmentEvent(CorrelationEvent):
    """Offset and uncertainty for comparing two distinct clock domains."""

    from_clock_domain: str
    to_clock_domain: str
    offset_ns: int
    uncertainty_ns: int
    valid_from_ns: int | None = None
    valid_to_ns: int | None = None

@final
@dataclass(frozen=True)
class LegacyInferenceRecord:
    """An unchanged v1 record; server correlation remains unknown."""

    raw: dict[str, Any]
    def to_record(self) -> dict[str, Any]: ...

InferenceRecord = CorrelationEvent | LegacyInferenceRecord

def parse_inference_record(record: Mapping[str, Any]) -> InferenceRecord:
    """Parse one embedded v1/v2/v3 JSONL record without fabricating missing evidence."""

def is_correlation_event_type(event_type: object) -> bool:
    """Whether ``event_type`` names a correlation event that carries a context."""

def activity_busy_intervals(activity: ActivityReferenceEvent) -> list[tuple[int, int]] | None:
    """The intervals in which a GPU activity kept its device busy, or None."""

def load_inference_artifact(path: _Path) -> list[InferenceRecord]:
    """Read mixed legacy and correlation records in their original order (plain or gzip)."""

def read_inference_records(path: _Path) -> list[dict[str, Any]]:
    """Expanded record dicts, definitions consumed."""

@final
class InferenceRecordIterator(Iterator[tuple[int, Any]]):
    """``(line_number, record)`` pairs of an artifact, read as they are asked for."""

    def __iter__(self) -> InferenceRecordIterator: ...
    def __next__(self) -> tuple[int, Any]: ...

def iter_inference_events(
    path: _Path, decoder: CorrelationRecordDecoder | None = None
) -> Iterator[tuple[int, InferenceRecord]]:
    """Typed events, each parsed once, with physical line numbers."""

def iter_inference_records(
    path: _Path, decoder: CorrelationRecordDecoder | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Expanded record dicts (each line's own), definitions consumed, with physical line numbers."""

def write_inference_artifact(path: _Path, records: Iterable[Any], *, compact: bool = True) -> None:
    """Write records as stormlog writes them, compact (v4) or embedded (v2/v3), atomically."""

@final
class ContextRegistry:
    """Validated immutable contexts, with the first ID retained for aliases."""

    def __init__(self) -> None: ...
    def register(self, identity: str, context: CorrelationContext) -> None: ...
    def lookup(self, identity: str) -> CorrelationContext: ...
    def identity(self, context: CorrelationContext) -> str | None: ...
    def check(self, identity: str, context: CorrelationContext) -> None: ...
    def copy(self) -> ContextRegistry: ...

@final
class CorrelationRecordEncoder:
    """Turns embedded records into artifact rows; a new context's definition comes first."""

    def __init__(self, registry: ContextRegistry | None = None, *, compact: bool = True) -> None: ...
    @property
    def registry(self) -> ContextRegistry: ...
    def prepare(self, record: Mapping[str, Any]) -> list[dict[str, Any]]: ...
    def commit(self, rows: Iterable[Mapping[str, Any]]) -> None: ...
    def encode(self, record: Mapping[str, Any]) -> list[dict[str, Any]]: ...

@final
class CorrelationRecordDecoder:
    """Consumes v4 definitions before the references that name them, one row at a time."""

    def __init__(self) -> None: ...
    @property
    def registry(self) -> ContextRegistry: ...
    def decode(self, record: Mapping[str, Any]) -> dict[str, Any] | None: ...
    def decode_event(self, record: Mapping[str, Any]) -> InferenceRecord | None: ...

def expand_inference_records(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows held in memory, definitions consumed and references expanded."""

@final
@dataclass(frozen=True)
class UnresolvedReference:
    """A reference to an entity no event reported."""

    event_id: str
    kind: str
    ref: EntityRef

@final
@dataclass(frozen=True)
class CorrelationGraph:
    """The resolved evidence of one run."""

    run_id: str | None
    requests: dict[tuple[EntityRef, EntityRef | None], RequestEvent]
    iterations: dict[EntityRef, IterationEvent]
    stages: dict[EntityRef, StageEvent]
    memberships: tuple[MembershipEvent, ...]
    activities: dict[EntityRef, ActivityReferenceEvent]
    alignments: tuple[ClockAlignmentEvent, ...]
    unresolved: tuple[UnresolvedReference, ...]
    @property
    def counts(self) -> dict[str, int]: ...

@final
@dataclass(frozen=True)
class DeviceClock:
    """A device and the clock its timestamps are on."""

    device_uuid: str
    clock_domain: str
    clock_kind: str = "monotonic"

@final
@dataclass(frozen=True)
class GpuTime:
    """Summed activity time, busy time and activity count of one device clock."""

    summed_activity_ns: int
    busy_ns: int
    activity_count: int

@final
@dataclass(frozen=True)
class IterationTiming:
    """One iteration's elapsed time and its GPU time per device clock."""

    elapsed_ns: int | None
    gpu: dict[DeviceClock, GpuTime]

@final
@dataclass(frozen=True)
class RunAccounting:
    """Overlap-aware GPU time of one run."""

    run_id: str | None
    iterations: dict[EntityRef, IterationTiming]
    device_totals: dict[DeviceClock, GpuTime]
    unattributed_activity_refs: tuple[EntityRef, ...]
    unmeasured_gpu_activity_refs: tuple[EntityRef, ...]

@final
@dataclass(frozen=True)
class RequestShareEstimate:
    """One request's modelled share of an iteration's GPU time."""

    request_ref: EntityRef
    duration_ns: int
    model: str
    attempt_ref: EntityRef | None = None

@final
@dataclass(frozen=True)
class ShareBudget:
    """A share model that matched its iteration's measured GPU budget."""

    iteration_ref: EntityRef
    device_clock: DeviceClock
    budget_ns: int
    shares: tuple[RequestShareEstimate, ...]
    unattributed_ns: int

@final
@dataclass(frozen=True)
class AlignedTimestamp:
    """A timestamp translated into another clock domain, with its uncertainty."""

    value_ns: int
    uncertainty_ns: int
    clock_domain: str

def resolve_inference_events(records: Iterable[Any]) -> CorrelationGraph:
    """Deduplicate events, then resolve references independent of delivery order."""

def account_gpu_time(graph: CorrelationGraph) -> RunAccounting:
    """Keep summed activity, interval union, and iteration elapsed separate."""

def validate_request_shares(
    graph: CorrelationGraph,
    accounting: RunAccounting,
    *,
    iteration_ref: EntityRef,
    device_clock: DeviceClock,
    shares: tuple[RequestShareEstimate, ...],
    unattributed_ns: int,
) -> ShareBudget:
    """Validate an explicit model against one measured iteration GPU budget."""

def align_timestamp(
    timestamp_ns: int,
    *,
    from_clock_domain: str,
    to_clock_domain: str,
    alignments: Iterable[ClockAlignmentEvent],
) -> AlignedTimestamp:
    """Translate one timestamp while preserving calibration uncertainty."""

def covering_alignments(
    timestamp_ns: int,
    *,
    from_clock_domain: str,
    to_clock_domain: str,
    alignments: Iterable[ClockAlignmentEvent],
) -> list[ClockAlignmentEvent]:
    """The alignments whose domains and validity window cover a timestamp."""

def alignment_offset_bounds(alignment: ClockAlignmentEvent) -> tuple[int, int]:
    """The interval the true offset lies in."""

def account_paths(
    paths: _Path | Iterable[_Path], *, run_id: str | None = None
) -> tuple[CorrelationGraph, RunAccounting]:
    """Stream one run's artifacts (or traces) and account them as ``tally account`` does."""

def breakdown_paths(
    paths: _Path | Iterable[_Path],
    *,
    category_patterns: Sequence[str] = (),
    by_iteration: bool = False,
    run_id: str | None = None,
) -> dict[str, Any]:
    """The overlap breakdown of one run, the object ``tally breakdown --format json`` prints."""

# tally.partials: exact partial results as bytes, merged and accounted as one run.

def make(
    paths: _Path | Iterable[_Path], *, run_id: str | None = None, per_kernel: bool = False, threads: int = 0
) -> bytes:
    """A partial of some of a run's files."""

def merge(parts: Iterable[bytes]) -> bytes:
    """Partials merged into the partial of all their files."""

def account(parts: Iterable[bytes]) -> tuple[CorrelationGraph, RunAccounting]:
    """Partials merged and accounted: ``account_paths`` of all their files."""

def breakdown(
    parts: Iterable[bytes], *, category_patterns: Sequence[str] = (), by_iteration: bool = False
) -> dict[str, Any]:
    """Partials merged and broken down: ``breakdown_paths`` of all their files."""

# The breakdown's page (tally report), for ``_repr_html_``.

class BreakdownTimelines:
    """Each device clock's timeline of one breakdown (opaque: what its page draws)."""

def report_html(
    breakdown: dict[str, Any], timelines: BreakdownTimelines | None = None, *, page: bool = False
) -> str:
    """The page ``tally report`` writes of a breakdown: the whole document, or the fragment a notebook shows."""

class Breakdown(dict[str, Any]):
    """The overlap breakdown of one run: a ``dict`` equal to the JSON ``tally breakdown --format json``
    prints, shown in a notebook as ``tally report``'s page."""

    def _repr_html_(self) -> str:
        """The fragment of ``tally report``'s page a notebook shows."""
    def report_html(self) -> str:
        """The whole page ``tally report`` writes for this breakdown."""

def trace_attachment_ids(paths: _Path | Iterable[_Path]) -> list[str]:
    """The attachment ID of each trace among the paths, in order."""

def run_id_of_attachments(ids: Sequence[str]) -> str | None:
    """The default run ID of traces with these attachment IDs; None for none."""

def default_run_id(paths: _Path | Iterable[_Path]) -> str | None:
    """The run ID one process derives for the traces among the paths; None for none."""

def import_trace(path: _Path | Iterable[_Path], *, run_id: str | None = None) -> list[InferenceRecord]:
    """The records ``tally import`` writes for one run's traces."""

# tally.profiling: vertebrae 1.1.0's vertebrae.profiling (dataclasses made at import).

@dataclass(frozen=True)
class AdapterOperationResult:
    """Outcome of an optional framework-specific profiling operation."""

    status: str
    reason: str | None = None

@dataclass(frozen=True)
class ResourceAdapterMetadata:
    """Framework, device, and synchronization context supplied by an adapter."""

    backend: str | None = None
    device: str | None = None
    device_resolution: str = "unavailable"
    asynchronous: bool = False
    synchronization_method: str | None = None
    weight_dtypes: tuple[str, ...] = ()

@dataclass(frozen=True)
class DeviceMemoryMeasurement:
    """Framework allocator memory observed for one profiling session."""

    status: str
    backend: str | None = None
    device: str | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    measurement_scope: str | None = None
    unavailable_reason: str | None = None

@dataclass(frozen=True)
class ModelFootprintMeasurement:
    """In-memory model state exposed by a framework adapter."""

    status: str
    parameter_count: int | None = None
    parameter_bytes: int | None = None
    trainable_parameter_count: int | None = None
    trainable_parameter_bytes: int | None = None
    buffer_bytes: int | None = None
    in_memory_bytes: int | None = None
    weight_dtypes: tuple[str, ...] = ()
    unavailable_reason: str | None = None

@dataclass(frozen=True)
class DeploymentArtifact:
    """Explicit local artifact whose deployment footprint should be measured."""

    path: str
    role: str = "checkpoint"
    recursive: bool = False

@dataclass(frozen=True)
class ArtifactFootprint:
    """Measured footprint for one declared deployment artifact."""

    path: str
    resolved_path: str
    role: str
    recursive: bool
    status: str
    bytes: int = 0
    file_count: int = 0
    reason: str | None = None

@dataclass
class InferenceProfile:
    """First-call and warm latency and throughput of the measured calls."""

    status: str
    first_call_seconds: float | None = None
    first_call_includes_fit: bool = False
    warm_call_count: int = 0
    warm_mean_seconds: float | None = None
    warm_median_seconds: float | None = None
    warm_p95_seconds: float | None = None
    warm_max_seconds: float | None = None
    warm_mean_seconds_per_sample: float | None = None
    total_materialized_seconds: float | None = None
    materialized_samples: int = 0
    throughput_samples_per_second: float | None = None
    batch_sizes: list[int] = field(default_factory=list)

@dataclass
class HostMemoryProfile:
    """Process resident-set baseline and peak over the profiling window."""

    status: str
    baseline_rss_bytes: int | None = None
    peak_rss_bytes: int | None = None
    peak_increase_bytes: int | None = None
    sample_interval_seconds: float | None = None

@dataclass
class DeviceMemoryProfile:
    """Framework allocator baseline and peaks over the profiling window."""

    status: str
    backend: str | None = None
    device: str | None = None
    baseline_allocated_bytes: int | None = None
    baseline_reserved_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    peak_allocated_increase_bytes: int | None = None
    peak_reserved_increase_bytes: int | None = None
    measurement_scope: str | None = None
    unavailable_reason: str | None = None

@dataclass
class ModelFootprint:
    """Parameter, in-memory and checkpoint footprint of the model."""

    status: str
    parameter_status: str = "unavailable"
    checkpoint_status: str = "unavailable"
    parameter_count: int | None = None
    parameter_bytes: int | None = None
    trainable_parameter_count: int | None = None
    trainable_parameter_bytes: int | None = None
    buffer_bytes: int | None = None
    in_memory_bytes: int | None = None
    checkpoint_bytes: int | None = None
    weight_dtypes: list[str] = field(default_factory=list)
    artifacts: list[ArtifactFootprint] = field(default_factory=list)

@dataclass
class PersistedArtifactFootprint:
    """Persisted size of one stored embedding array."""

    status: str
    bytes: int | None = None
    uri: str | None = None
    storage_format: str | None = None
    reason: str | None = None

@dataclass
class EmbeddingFootprint:
    """Resident and persisted size of raw and evaluated embeddings."""

    raw_bytes: int
    evaluated_bytes: int
    bytes_per_embedding: float
    compression_savings_ratio: float
    raw_persisted: PersistedArtifactFootprint | None = None
    evaluated_persisted: PersistedArtifactFootprint | None = None

@dataclass
class ResourceProfile:
    """The measured resource profile of one local profiling window."""

    status: str
    inference: InferenceProfile
    host_memory: HostMemoryProfile
    device_memory: DeviceMemoryProfile
    model: ModelFootprint
    embedding: EmbeddingFootprint | None
    context: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

@dataclass
class LatencyDistribution:
    """Distribution of worker first-call latencies."""

    count: int = 0
    median_seconds: float | None = None
    p95_seconds: float | None = None
    max_seconds: float | None = None

@dataclass
class DistributedResourceProfile:
    """Aggregation of independent worker-local profiling windows."""

    status: str
    shard_count: int
    profiled_shard_count: int
    worker_first_calls: LatencyDistribution
    total_compute_seconds: float | None = None
    materialized_samples: int = 0
    aggregate_compute_throughput_samples_per_second: float | None = None
    warm_call_count: int = 0
    warm_mean_seconds: float | None = None
    max_worker_peak_rss_bytes: int | None = None
    max_worker_peak_rss_shard_key: str | None = None
    max_worker_peak_device_allocated_bytes: int | None = None
    max_worker_peak_device_shard_key: str | None = None
    model: ModelFootprint | None = None
    embedding: EmbeddingFootprint | None = None
    shard_persisted_bytes: int | None = None
    shard_keys: list[str] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    scope: str = "distributed_shards"

@dataclass
class ResourceProfilingConfig:
    """Opt-in measurement of extraction cost and representation footprint (vertebrae.config)."""

    enabled: bool = False
    host_memory: bool = True
    device_memory: bool = True
    persisted_storage: bool = True
    host_sample_interval_seconds: float = 0.01
    quality_tolerance: float = 0.01

class BaseResourceProfileAdapter:
    """Default unavailable implementations for custom resource adapters."""

    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def metadata(self) -> ResourceAdapterMetadata: ...
    def synchronize(self) -> AdapterOperationResult: ...
    def reset_peak_device_memory(self) -> AdapterOperationResult: ...
    def peak_device_memory(self) -> DeviceMemoryMeasurement: ...
    def model_footprint(self) -> ModelFootprintMeasurement: ...
    def deployment_artifacts(self) -> Sequence[DeploymentArtifact]: ...

class JAXResourceProfileAdapter(BaseResourceProfileAdapter):
    """Synchronization and device metadata for JAX-backed extractors."""

    extractor: Any
    backend: str
    profiling_device: str | None
    def __init__(
        self,
        extractor: Any,
        *,
        values_getter: Callable[[], Any] | None = None,
        jax_loader: Callable[[], Any] | None = None,
        backend: str = "jax",
        profiling_device: str | None = None,
    ) -> None: ...

class TorchResourceProfileAdapter(BaseResourceProfileAdapter):
    """Resource hooks for a Torch-backed extractor without forcing model loading."""

    extractor: Any
    def __init__(
        self,
        extractor: Any,
        artifacts: Sequence[str | DeploymentArtifact] = (),
        *,
        model_getter: Callable[[], Any] | None = None,
        device_resolver: Callable[[Any], Any] | None = None,
        torch_loader: Callable[[], Any] | None = None,
    ) -> None: ...

class ONNXResourceProfileAdapter(BaseResourceProfileAdapter):
    """Resource hooks for an ONNX Runtime extractor."""

    extractor: Any
    def __init__(
        self,
        extractor: Any,
        external_artifacts: Sequence[str | DeploymentArtifact] = (),
    ) -> None: ...

class TensorFlowResourceProfileAdapter(BaseResourceProfileAdapter):
    """Resource hooks shared by Keras and TensorFlow Hub extractors."""

    extractor: Any
    backend: str
    profiling_device: str | None
    def __init__(
        self,
        extractor: Any,
        artifacts: Sequence[str | DeploymentArtifact] = (),
        *,
        model_getter: Callable[[], Any] | None = None,
        backend: str = "tensorflow",
        profiling_device: str | None = None,
    ) -> None: ...

class KerasResourceProfileAdapter(BaseResourceProfileAdapter):
    """Backend-aware resource hooks for multi-backend Keras models."""

    extractor: Any
    profiling_device: str | None
    def __init__(
        self,
        extractor: Any,
        artifacts: Sequence[str | DeploymentArtifact] = (),
        *,
        profiling_device: str | None = None,
    ) -> None: ...

@final
class ResourceProfiler:
    """Observe real extractor calls without introducing repeat inference."""

    config: Any
    extractor: Any
    streaming: bool
    adapter: Any
    #: How the last finished profile's host high-water mark was measured, or None.
    host_memory_method: str | None
    def __init__(
        self, config: Any, extractor: Any, *, streaming: bool, context: dict[str, Any] | None = None
    ) -> None: ...
    @property
    def records(self) -> list[Any]: ...
    def measure_call(
        self,
        fn: Callable[[], Any],
        *,
        samples: int,
        call_type: str,
        materialized: bool = True,
        includes_fit: bool = False,
    ) -> Any: ...
    def mark_last_call_materialized(self) -> None: ...
    def finish(self, *, cache_hit: bool = False) -> ResourceProfile: ...

def resource_profile_columns(
    profile: ResourceProfile | DistributedResourceProfile, *, prefix: str = ""
) -> dict[str, Any]:
    """Flatten stable local or worker-aggregate fields for result tables."""

def resource_profile_from_dict(value: dict[str, Any]) -> ResourceProfile:
    """Reconstruct a typed local resource profile from serialized data."""

def distributed_resource_profile_from_dict(value: dict[str, Any]) -> DistributedResourceProfile:
    """Reconstruct a typed distributed resource summary from serialized data."""

def resource_profile_like_from_dict(
    value: dict[str, Any] | None,
) -> ResourceProfile | DistributedResourceProfile | None:
    """A local or distributed profile from serialized data; None stays None."""

def with_embedding_footprint(
    profile: ResourceProfile | DistributedResourceProfile | None,
    raw_embeddings: Any,
    evaluated_embeddings: Any,
    *,
    store: Any = None,
    raw_key: str | None = None,
    evaluated_key: str | None = None,
    raw_stat: Any = None,
    evaluated_stat: Any = None,
    persisted_storage: bool = True,
) -> ResourceProfile | DistributedResourceProfile | None:
    """The profile with the resident and persisted footprint of its raw and
    evaluated embeddings and the store's warnings; None stays None.

    Embeddings are numpy arrays (or anything ``numpy.asarray`` takes), scipy
    sparse matrices, or metadata dicts (``shape``, ``dtype``, ``sparse``,
    ``nnz``). ``store.stat_array(key)`` gives persisted sizes: a
    ``FileNotFoundError`` means not persisted, another exception unavailable
    with a warning. A stat given directly is used instead of the store.
    Incomplete metadata and arrays that are not two-dimensional raise
    ``ValueError``, unknown dtypes ``TypeError``, as in vertebrae."""

def with_distributed_embedding_footprint(
    profile: DistributedResourceProfile | ResourceProfile | None,
    raw_embeddings: Any,
    evaluated_embeddings: Any,
    *,
    store: Any = None,
    raw_key: str | None = None,
    evaluated_key: str | None = None,
    raw_stat: Any = None,
    evaluated_stat: Any = None,
    persisted_storage: bool = True,
) -> DistributedResourceProfile | ResourceProfile | None:
    """Update variant storage while retaining distributed inference evidence:
    the aggregate with its variant's raw and evaluated embedding footprint
    and the store's warnings; None stays None (see
    ``with_embedding_footprint`` for the arguments)."""

def aggregate_distributed_resource_profiles(
    profiles: Iterable[tuple[str, ResourceProfile]],
    *,
    merged_embeddings: Any,
    all_shard_keys: Sequence[str] | None = None,
    store: Any = None,
    merged_key: str | None = None,
    merged_stat: Any = None,
    persisted_storage: bool = True,
) -> DistributedResourceProfile:
    """Aggregate worker observations without presenting them as one local
    run: ``profiles`` are ``(shard_key, ResourceProfile)`` pairs, of which
    only the ``measured`` count towards latency, compute, samples, peaks and
    the model; ``all_shard_keys`` names every shard of the job, reported or
    not; ``merged_embeddings`` is the merged array, sparse matrix or metadata
    dict. Workers measuring different models raise ``ValueError``."""
