"""vertebrae 1.1.0's ``vertebrae.profiling`` API over tally's measurement core.

Change ``from vertebrae.profiling import ...`` to ``from tally.profiling
import ...``: the classes are dataclasses with vertebrae's names, fields and
frozenness (``dataclasses.asdict`` gives vertebrae's dict), and the profiler
measures with tally-profile (integer-nanosecond timing, the kernel's exact
host high-water mark, no sampler thread). Everything here is defined by the
native module ``tally._native``; this module only names what it exports.
"""

from ._native import (
    AdapterOperationResult,
    ArtifactFootprint,
    BaseResourceProfileAdapter,
    DeploymentArtifact,
    DeviceMemoryMeasurement,
    DeviceMemoryProfile,
    DistributedResourceProfile,
    EmbeddingFootprint,
    HostMemoryProfile,
    InferenceProfile,
    JAXResourceProfileAdapter,
    KerasResourceProfileAdapter,
    LatencyDistribution,
    ModelFootprint,
    ModelFootprintMeasurement,
    ONNXResourceProfileAdapter,
    PersistedArtifactFootprint,
    ResourceAdapterMetadata,
    ResourceProfile,
    ResourceProfiler,
    ResourceProfilingConfig,
    aggregate_distributed_resource_profiles,
    TorchResourceProfileAdapter,
    TensorFlowResourceProfileAdapter,
    distributed_resource_profile_from_dict,
    resource_profile_columns,
    resource_profile_from_dict,
    resource_profile_like_from_dict,
    with_distributed_embedding_footprint,
    with_embedding_footprint,
)

#: A local or a distributed resource profile.
ResourceProfileLike = ResourceProfile | DistributedResourceProfile

__all__ = [
    "AdapterOperationResult",
    "ArtifactFootprint",
    "BaseResourceProfileAdapter",
    "DeploymentArtifact",
    "DeviceMemoryMeasurement",
    "DeviceMemoryProfile",
    "DistributedResourceProfile",
    "EmbeddingFootprint",
    "HostMemoryProfile",
    "InferenceProfile",
    "JAXResourceProfileAdapter",
    "KerasResourceProfileAdapter",
    "LatencyDistribution",
    "ModelFootprint",
    "ModelFootprintMeasurement",
    "ONNXResourceProfileAdapter",
    "PersistedArtifactFootprint",
    "ResourceAdapterMetadata",
    "ResourceProfile",
    "ResourceProfileLike",
    "ResourceProfiler",
    "ResourceProfilingConfig",
    "aggregate_distributed_resource_profiles",
    "TorchResourceProfileAdapter",
    "TensorFlowResourceProfileAdapter",
    "distributed_resource_profile_from_dict",
    "resource_profile_columns",
    "resource_profile_from_dict",
    "resource_profile_like_from_dict",
    "with_distributed_embedding_footprint",
    "with_embedding_footprint",
]
