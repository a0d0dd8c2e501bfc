//! vertebrae 1.1.0's `vertebrae.profiling` dataclasses as data: each class's
//! name, docstring, frozenness, and fields in declaration order with their
//! defaults and nesting.
//!
//! The profile types of this crate (and tally-distributed's aggregate, which
//! is vertebrae's too) serialize as `dataclasses.asdict` of these classes;
//! the `tally` Python package builds its `tally.profiling` dataclasses from
//! this one table, so a field is declared once. The tests check the table
//! against the JSON the types write.

/// A field's default, as vertebrae declares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldDefault {
    /// No default: the field must be given.
    Required,
    /// `None`.
    None,
    /// `False`.
    False,
    /// `True`.
    True,
    /// `0`.
    Zero,
    /// A float.
    Real(f64),
    /// A string.
    Text(&'static str),
    /// `()`.
    EmptyTuple,
    /// `field(default_factory=list)`.
    EmptyList,
    /// `field(default_factory=dict)`.
    EmptyDict,
}

/// What a field holds when it holds one of the table's classes (named).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nested {
    /// A plain value (number, string, list or dict of them).
    Plain,
    /// An instance of the class.
    One(&'static str),
    /// An instance of the class or `None`.
    Optional(&'static str),
    /// A list of instances of the class.
    ListOf(&'static str),
}

/// One dataclass field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataclassField {
    /// The field's name.
    pub name: &'static str,
    /// Its default.
    pub default: FieldDefault,
    /// Whether it holds one of the table's classes.
    pub nested: Nested,
}

/// One of vertebrae's dataclasses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataclassSchema {
    /// The class name.
    pub name: &'static str,
    /// `@dataclass(frozen=True)`.
    pub frozen: bool,
    /// The docstring.
    pub doc: &'static str,
    /// The fields in declaration order.
    pub fields: &'static [DataclassField],
    /// Whether vertebrae's `__post_init__` checks an instance (the rules this
    /// crate's type of the same name applies when it loads).
    pub validated: bool,
}

/// The table, written compactly: per class its docstring, `frozen` or
/// `mutable`, `validated` or `plain`, its name, then `field: Default` pairs
/// (a default's argument in parentheses), a nested class after `in`.
macro_rules! dataclasses {
    ($(
        $doc:literal $frozen:ident $validated:ident $name:ident {
            $($field:ident: $default:ident $(($arg:expr))? $(in $kind:ident($inner:ident))?),* $(,)?
        }
    )*) => {
        /// Every dataclass of `vertebrae.profiling` that tally mirrors, in
        /// the order the `tally` package defines them.
        pub const DATACLASSES: &[DataclassSchema] = &[$(DataclassSchema {
            name: stringify!($name),
            frozen: dataclasses!(@flag $frozen),
            doc: $doc,
            fields: &[$(DataclassField {
                name: stringify!($field),
                default: FieldDefault::$default $(($arg))?,
                nested: dataclasses!(@nested $($kind($inner))?),
            }),*],
            validated: dataclasses!(@flag $validated),
        }),*];
    };
    (@flag frozen) => { true };
    (@flag mutable) => { false };
    (@flag validated) => { true };
    (@flag plain) => { false };
    (@nested) => { Nested::Plain };
    (@nested $kind:ident($inner:ident)) => { Nested::$kind(stringify!($inner)) };
}

dataclasses! {
    "Outcome of an optional framework-specific profiling operation."
    frozen validated AdapterOperationResult { status: Required, reason: None }

    "Framework, device, and synchronization context supplied by an adapter."
    frozen validated ResourceAdapterMetadata {
        backend: None, device: None, device_resolution: Text("unavailable"), asynchronous: False,
        synchronization_method: None, weight_dtypes: EmptyTuple,
    }

    "Framework allocator memory observed for one profiling session."
    frozen validated DeviceMemoryMeasurement {
        status: Required, backend: None, device: None, baseline_allocated_bytes: None,
        baseline_reserved_bytes: None, peak_allocated_bytes: None, peak_reserved_bytes: None,
        measurement_scope: None, unavailable_reason: None,
    }

    "In-memory model state exposed by a framework adapter."
    frozen validated ModelFootprintMeasurement {
        status: Required, parameter_count: None, parameter_bytes: None, trainable_parameter_count: None,
        trainable_parameter_bytes: None, buffer_bytes: None, in_memory_bytes: None,
        weight_dtypes: EmptyTuple, unavailable_reason: None,
    }

    "Explicit local artifact whose deployment footprint should be measured."
    frozen validated DeploymentArtifact { path: Required, role: Text("checkpoint"), recursive: False }

    "Measured footprint for one declared deployment artifact."
    frozen plain ArtifactFootprint {
        path: Required, resolved_path: Required, role: Required, recursive: Required, status: Required,
        bytes: Zero, file_count: Zero, reason: None,
    }

    "First-call and warm latency and throughput of the measured calls."
    mutable plain InferenceProfile {
        status: Required, first_call_seconds: None, first_call_includes_fit: False, warm_call_count: Zero,
        warm_mean_seconds: None, warm_median_seconds: None, warm_p95_seconds: None,
        warm_max_seconds: None, warm_mean_seconds_per_sample: None, total_materialized_seconds: None,
        materialized_samples: Zero, throughput_samples_per_second: None, batch_sizes: EmptyList,
    }

    "Process resident-set baseline and peak over the profiling window."
    mutable plain HostMemoryProfile {
        status: Required, baseline_rss_bytes: None, peak_rss_bytes: None, peak_increase_bytes: None,
        sample_interval_seconds: None,
    }

    "Framework allocator baseline and peaks over the profiling window."
    mutable validated DeviceMemoryProfile {
        status: Required, backend: None, device: None, baseline_allocated_bytes: None,
        baseline_reserved_bytes: None, peak_allocated_bytes: None, peak_reserved_bytes: None,
        peak_allocated_increase_bytes: None, peak_reserved_increase_bytes: None,
        measurement_scope: None, unavailable_reason: None,
    }

    "Parameter, in-memory and checkpoint footprint of the model."
    mutable plain ModelFootprint {
        status: Required, parameter_status: Text("unavailable"), checkpoint_status: Text("unavailable"),
        parameter_count: None, parameter_bytes: None, trainable_parameter_count: None,
        trainable_parameter_bytes: None, buffer_bytes: None, in_memory_bytes: None,
        checkpoint_bytes: None, weight_dtypes: EmptyList,
        artifacts: EmptyList in ListOf(ArtifactFootprint),
    }

    "Persisted size of one stored embedding array."
    mutable plain PersistedArtifactFootprint {
        status: Required, bytes: None, uri: None, storage_format: None, reason: None,
    }

    "Resident and persisted size of raw and evaluated embeddings."
    mutable plain EmbeddingFootprint {
        raw_bytes: Required, evaluated_bytes: Required, bytes_per_embedding: Required,
        compression_savings_ratio: Required,
        raw_persisted: None in Optional(PersistedArtifactFootprint),
        evaluated_persisted: None in Optional(PersistedArtifactFootprint),
    }

    "The measured resource profile of one local profiling window."
    mutable plain ResourceProfile {
        status: Required,
        inference: Required in One(InferenceProfile),
        host_memory: Required in One(HostMemoryProfile),
        device_memory: Required in One(DeviceMemoryProfile),
        model: Required in One(ModelFootprint),
        embedding: Required in Optional(EmbeddingFootprint),
        context: EmptyDict, warnings: EmptyList,
    }

    "Distribution of worker first-call latencies."
    mutable plain LatencyDistribution {
        count: Zero, median_seconds: None, p95_seconds: None, max_seconds: None,
    }

    "Aggregation of independent worker-local profiling windows."
    mutable plain DistributedResourceProfile {
        status: Required, shard_count: Required, profiled_shard_count: Required,
        worker_first_calls: Required in One(LatencyDistribution),
        total_compute_seconds: None, materialized_samples: Zero,
        aggregate_compute_throughput_samples_per_second: None, warm_call_count: Zero,
        warm_mean_seconds: None, max_worker_peak_rss_bytes: None, max_worker_peak_rss_shard_key: None,
        max_worker_peak_device_allocated_bytes: None, max_worker_peak_device_shard_key: None,
        model: None in Optional(ModelFootprint),
        embedding: None in Optional(EmbeddingFootprint),
        shard_persisted_bytes: None, shard_keys: EmptyList, context: EmptyDict, warnings: EmptyList,
        scope: Text("distributed_shards"),
    }

    "Opt-in measurement of extraction cost and representation footprint (vertebrae.config)."
    mutable validated ResourceProfilingConfig {
        enabled: False, host_memory: True, device_memory: True, persisted_storage: True,
        host_sample_interval_seconds: Real(0.01), quality_tolerance: Real(0.01),
    }
}

/// The table's class `name`.
pub fn dataclass_schema(name: &str) -> Option<&'static DataclassSchema> {
    DATACLASSES.iter().find(|class| class.name == name)
}
