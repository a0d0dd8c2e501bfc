//! Without `libcuda` every public operation answers unavailable with the
//! reason, and nothing panics. On a machine whose driver is present these
//! answers cannot be provoked in-process (the system's `libcuda` is always
//! found), so the tests say they skipped; the fake-driver tests cover a
//! driver that is present but has no device.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use tally_cuda::{
    CudaDevice, CudaError, CudaProfileAdapter, device_count, driver_available, driver_version, probe,
};
use tally_profile::profile::{DeviceMeasurementStatus, OperationStatus};
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};

/// The reason when no driver is there, or `None` (and a skip message).
fn no_driver_reason() -> Option<String> {
    match driver_available() {
        Ok(()) => {
            tally_testkit::skip("a CUDA driver is present, so its absence cannot be tested here");
            None
        }
        Err(error) => Some(error.reason()),
    }
}

fn assert_unavailable<T: std::fmt::Debug>(what: &str, result: Result<T, CudaError>, reason: &str) {
    match result {
        Err(CudaError::Unavailable { reason: got }) => assert_eq!(got, reason, "{what}"),
        other => panic!("{what}: expected unavailable, got {other:?}"),
    }
}

#[test]
fn the_reason_names_the_missing_library() {
    let Some(reason) = no_driver_reason() else { return };
    assert!(reason.starts_with("no CUDA driver found ("), "{reason}");
    assert!(reason.contains("libcuda.so"), "{reason}");
    // Asked again, the same answer (the probe runs once).
    assert_eq!(driver_available().unwrap_err().reason(), reason);
}

#[test]
fn every_driver_operation_is_unavailable() {
    let Some(reason) = no_driver_reason() else { return };
    assert_unavailable("driver_version", driver_version(), &reason);
    assert_unavailable("device_count", device_count(), &reason);
    assert_unavailable("probe", probe(), &reason);
    assert_unavailable("CudaDevice::open", CudaDevice::open(0), &reason);
}

#[test]
fn every_adapter_hook_is_unavailable() {
    let Some(reason) = no_driver_reason() else { return };
    let mut adapter = CudaProfileAdapter::open(0);
    assert_eq!(adapter.device().unwrap_err(), reason);
    let metadata = adapter.metadata().expect("metadata never fails");
    assert_eq!(metadata.backend.as_deref(), Some("cuda"));
    assert_eq!(metadata.device, None);
    assert_eq!(metadata.device_resolution.as_str(), "unavailable");
    assert_eq!(metadata.synchronization_method.as_deref(), Some("cuStreamSynchronize"));
    for result in [adapter.synchronize().unwrap(), adapter.reset_peak_device_memory().unwrap()] {
        assert_eq!(result.status, OperationStatus::Unavailable);
        assert_eq!(result.reason.as_deref(), Some(reason.as_str()));
    }
    let peak = adapter.peak_device_memory().unwrap();
    assert_eq!(peak.status(), DeviceMeasurementStatus::Unavailable);
    assert_eq!(peak.readings().unavailable_reason.as_deref(), Some(reason.as_str()));
    assert_eq!(adapter.profiling_device_hint(), None);
}

#[test]
fn a_profile_through_the_adapter_records_the_reason() {
    let Some(reason) = no_driver_reason() else { return };
    let adapter = CudaProfileAdapter::open(0);
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
    let value = profiler.measure_call(|| 21 * 2, CallSpec::new(1, "batch"));
    assert_eq!(value, 42);
    let json = profiler.finish(false).to_json_value().unwrap();
    assert_eq!(json["device_memory"]["status"], "unavailable");
    assert_eq!(json["device_memory"]["unavailable_reason"], reason.as_str());
    assert_eq!(json["device_memory"]["backend"], "cuda");
    // Synchronization was attempted and could not be done, so latency is
    // what the host saw.
    assert_eq!(json["context"]["synchronization_status"], "host_observed", "{}", json["context"]);
}
