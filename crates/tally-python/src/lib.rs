//! The `tally` Python package's native module, `tally._native`: stormlog
//! 0.4.3's accounting API (`tally.accounting`) and trace import
//! (`tally.trace`) over tally's crates. It is a binding only: every rule is
//! in tally-core, tally-artifact, tally-resolve, tally-gpu-time,
//! tally-clock or tally-trace, and this crate converts between their types
//! and Python's.
//!
//! # Features
//!
#![doc = document_features::document_features!()]

mod accounting;
mod adapters;
mod codec;
mod convert;
mod dataclass;
mod decode;
mod embedding;
mod event_fields;
mod gc;
mod model;
mod partials;
mod paths;
mod profiler;
mod profiling;
mod records;
mod report;
mod results;
mod trace;

use pyo3::prelude::*;

// The module's Rust allocations only; Python's objects keep Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native module; `tally.accounting` and `tally.trace` re-export it.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    use accounting::*;
    use codec::*;
    use model::*;
    use results::*;
    module.add_class::<PyEntityRef>()?;
    module.add_class::<PyContext>()?;
    module.add_class::<PyEvent>()?;
    module.add_class::<ArtifactIdentityEvent>()?;
    module.add_class::<RequestEvent>()?;
    module.add_class::<IterationEvent>()?;
    module.add_class::<StageEvent>()?;
    module.add_class::<MembershipEvent>()?;
    module.add_class::<ActivityReferenceEvent>()?;
    module.add_class::<CapabilityEvent>()?;
    module.add_class::<ClockAlignmentEvent>()?;
    module.add_class::<PyLegacy>()?;
    module.add_function(wrap_pyfunction!(parse_inference_record, module)?)?;
    module.add_function(wrap_pyfunction!(is_correlation_event_type, module)?)?;
    module.add_function(wrap_pyfunction!(activity_busy_intervals, module)?)?;
    module.add_function(wrap_pyfunction!(_context_from_dict, module)?)?;

    module.add_function(wrap_pyfunction!(load_inference_artifact, module)?)?;
    module.add_function(wrap_pyfunction!(read_inference_records, module)?)?;
    module.add_function(wrap_pyfunction!(iter_inference_events, module)?)?;
    module.add_function(wrap_pyfunction!(iter_inference_records, module)?)?;
    module.add_function(wrap_pyfunction!(write_inference_artifact, module)?)?;
    module.add_class::<RecordIterator>()?;
    module.add_class::<CorrelationRecordEncoder>()?;
    module.add_class::<ContextRegistry>()?;
    module.add_class::<decode::CorrelationRecordDecoder>()?;
    module.add_function(wrap_pyfunction!(decode::expand_inference_records, module)?)?;

    module.add_class::<CorrelationGraph>()?;
    module.add_class::<RunAccounting>()?;
    module.add_class::<IterationTiming>()?;
    module.add_class::<GpuTime>()?;
    module.add_class::<DeviceClock>()?;
    module.add_class::<UnresolvedReference>()?;
    module.add_class::<RequestShareEstimate>()?;
    module.add_class::<ShareBudget>()?;
    module.add_class::<AlignedTimestamp>()?;
    module.add_function(wrap_pyfunction!(resolve_inference_events, module)?)?;
    module.add_function(wrap_pyfunction!(account_gpu_time, module)?)?;
    module.add_function(wrap_pyfunction!(validate_request_shares, module)?)?;
    module.add_function(wrap_pyfunction!(align_timestamp, module)?)?;
    module.add_function(wrap_pyfunction!(covering_alignments, module)?)?;
    module.add_function(wrap_pyfunction!(alignment_offset_bounds, module)?)?;
    module.add_function(wrap_pyfunction!(account_paths, module)?)?;
    module.add_function(wrap_pyfunction!(partials::breakdown_paths, module)?)?;
    partials::register(module)?;
    report::register(module)?;

    module.add_function(wrap_pyfunction!(trace::import_trace, module)?)?;

    module.add_function(wrap_pyfunction!(profiling::_check_dataclass, module)?)?;
    profiling::register(module)?;
    module.add_class::<profiler::ResourceProfiler>()?;
    module.add_class::<profiling::BaseResourceProfileAdapter>()?;
    adapters::register(module)?;
    module.add_function(wrap_pyfunction!(profiling::resource_profile_columns, module)?)?;
    module.add_function(wrap_pyfunction!(profiling::resource_profile_from_dict, module)?)?;
    module.add_function(wrap_pyfunction!(profiling::distributed_resource_profile_from_dict, module)?)?;
    module.add_function(wrap_pyfunction!(profiling::resource_profile_like_from_dict, module)?)?;
    module.add_function(wrap_pyfunction!(embedding::with_embedding_footprint, module)?)?;
    module.add_function(wrap_pyfunction!(embedding::with_distributed_embedding_footprint, module)?)?;
    module.add_function(wrap_pyfunction!(embedding::aggregate_distributed_resource_profiles, module)?)?;
    module.add("CORRELATION_SCHEMA_VERSION", tally_core::CORRELATION_SCHEMA_VERSION)?;
    module.add("ACTIVITY_INTERVALS_SCHEMA_VERSION", tally_core::ACTIVITY_INTERVALS_SCHEMA_VERSION)?;
    module.add("CONTEXT_REFERENCE_SCHEMA_VERSION", tally_core::CONTEXT_REFERENCE_SCHEMA_VERSION)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    dataclass::install(module)?;
    Ok(())
}
