//! The crate against a fake `libcuda` (tests/fake_driver/libcuda.c), so the
//! paths that need a driver run on machines without a GPU: probing, devices,
//! windows, calibration and alignment, and the memory window (the GPU check
//! program runs on it in tally-tests' `cuda_gpu_check` test). Each test runs
//! in a child process; see tests/support.
//!
//! The fake's "device" is synchronous and its events are stamped with the
//! host clock at record time, which makes exact expectations possible: a
//! device time is a host time minus the origin's.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod support;

use std::path::Path;
use std::time::Duration;

use support::{Fake, on_fake_driver};
use tally_core::{ActivityDomain, ClockKind, EntityRef, EventBody, InferenceRecord, parse_inference_record};
use tally_cuda::{
    CudaDevice, CudaProfileAdapter, CudaRecorder, DriverVersion, Producer, WindowOptions, driver_available,
    probe,
};
use tally_profile::profile::{DeviceMeasurementStatus, OperationStatus};
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};

const GIB: u64 = 1 << 30;
/// What the fake reports: 80 GiB total, 512 MiB held by the context.
const TOTAL: u64 = 80 * GIB;
const CONTEXT: u64 = 512 << 20;

#[test]
fn probe_reports_the_fake_device() {
    on_fake_driver("probe_reports_the_fake_device", Fake::Working, &[], || {
        driver_available().expect("the fake driver loads and initializes");
        let info = probe().expect("probe");
        assert_eq!(info.version, DriverVersion(12080));
        assert_eq!(info.version.to_string(), "12.8");
        assert!(info.device_errors.is_empty(), "{:?}", info.device_errors);
        let [device] = info.devices.as_slice() else { panic!("one device: {:?}", info.devices) };
        assert_eq!(device.name, "Fake CUDA Device");
        assert_eq!(device.uuid, "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");
        assert_eq!(device.compute_capability, (9, 0));
        assert_eq!(device.total_bytes, TOTAL);
        assert_eq!(device.free_bytes, TOTAL - CONTEXT);
    });
}

#[test]
fn a_missing_ordinal_is_unavailable() {
    on_fake_driver("a_missing_ordinal_is_unavailable", Fake::Working, &[], || {
        let error = CudaDevice::open(3).expect_err("the fake has one device");
        assert!(error.is_unavailable(), "{error:?}");
        assert!(error.reason().contains("device 3 does not exist"), "{error}");
        let mut adapter = CudaProfileAdapter::open(3);
        let result = adapter.synchronize().expect("no hook error");
        assert_eq!(result.status, OperationStatus::Unavailable);
    });
}

#[test]
fn windows_are_timed_on_the_device_clock_and_align_to_the_host() {
    on_fake_driver("windows_are_timed_on_the_device_clock_and_align_to_the_host", Fake::Working, &[], || {
        let device = CudaDevice::open(0).expect("open");
        let producer = Producer::new("run-1", "session-1", "worker-0").expect("producer");
        let mut recorder = CudaRecorder::new(&device, producer).expect("recorder");
        let first = recorder.calibrate(8).expect("calibrate");
        assert_eq!(first.samples().len(), 9, "the origin and eight samples");

        let iteration = EntityRef::new("engine", "step-7").expect("ref");
        let mut windows = Vec::new();
        for index in 0..5u64 {
            let options = if index == 2 {
                WindowOptions::labelled("linked").in_iteration(iteration.clone())
            } else {
                WindowOptions::labelled(format!("w{index}"))
            };
            // The fake device is synchronous: work spent inside the closure
            // is device time.
            let window = recorder
                .window(options, |_stream| std::thread::sleep(Duration::from_millis(2)))
                .expect("window");
            assert!(window.device_duration_ns() >= 2_000_000, "{}", window.device_duration_ns());
            // The host bracket contains the device interval.
            assert!(window.host_duration_ns() >= window.device_duration_ns());
            windows.push(window);
        }
        let calibration = recorder.calibrate(8).expect("calibrate again").clone();
        let alignment = recorder.emit_clock_alignment().expect("alignment");

        // The alignment: device → host monotonic, valid from the origin to
        // past the last sample, so it covers every window.
        let EventBody::ClockAlignment(body) = alignment.body() else { panic!("not an alignment") };
        assert_eq!(body.from_clock_domain.as_str(), recorder.clock().domain().as_str());
        assert_eq!(body.to_clock_domain.as_str(), tally_cuda::host_clock_domain());
        assert_eq!(body.uncertainty_ns, calibration.uncertainty_ns());
        assert_eq!(
            alignment.metadata().get("alignment_basis").and_then(|v| v.as_str()),
            Some(tally_cuda::ALIGNMENT_BASIS)
        );
        let (valid_from, valid_to) = body.validity.bounds().expect("bounded validity");
        assert_eq!(valid_from, 0);
        assert!(windows.iter().all(|window| window.device_end_ns < valid_to));

        let host = tally_cuda::host_clock_domain();
        let domain = recorder.clock().domain().to_string();
        let mut previous = i128::MIN;
        for window in &windows {
            let start = tally_clock::align_timestamp(
                i128::from(window.device_start_ns),
                &domain,
                &host,
                [&alignment],
            )
            .expect("start aligns");
            let end =
                tally_clock::align_timestamp(i128::from(window.device_end_ns), &domain, &host, [&alignment])
                    .expect("end aligns");
            assert_eq!(start.uncertainty_ns, u128::from(calibration.uncertainty_ns()));
            assert_eq!(
                (start.value_ns, u64::try_from(start.uncertainty_ns).unwrap()),
                calibration.to_host_ns(window.device_start_ns)
            );
            // On the host clock the device interval lies inside the host
            // bracket, within the alignment's uncertainty.
            let slack = start.uncertainty_ns as i128;
            assert!(start.value_ns + slack >= i128::from(window.host_start_ns), "start before the window");
            assert!(end.value_ns - slack <= i128::from(window.host_end_ns), "end after the window");
            assert!(start.value_ns >= previous && end.value_ns >= start.value_ns, "not monotonic");
            previous = end.value_ns;
        }

        // The activity events: GPU domain, on the device clock of the
        // device's UUID, linked only where an iteration was given.
        let activities: Vec<_> = recorder
            .events()
            .iter()
            .filter_map(|event| match event.body() {
                EventBody::ActivityRef(activity) => Some((event, activity)),
                _ => None,
            })
            .collect();
        assert_eq!(activities.len(), 5);
        for (index, (event, activity)) in activities.iter().enumerate() {
            assert_eq!(activity.activity_domain, ActivityDomain::Gpu);
            assert_eq!(event.context().clock_kind, ClockKind::Device);
            assert_eq!(event.context().device_uuid.as_deref(), Some(device.uuid()));
            assert_eq!(
                activity.span.bounds(),
                Some((windows[index].device_start_ns, windows[index].device_end_ns))
            );
            let expected = if index == 2 { "linked" } else { "unresolved" };
            assert_eq!(activity.attribution_status(), expected);
            assert_eq!(
                event.metadata().get("host_start_ns").and_then(|v| v.as_u64()),
                Some(windows[index].host_start_ns)
            );
            // Every event survives the model's own parser unchanged.
            let record = serde_json::Value::Object(event.to_record());
            let InferenceRecord::Event(parsed) = parse_inference_record(record).expect("valid record") else {
                panic!("not an event")
            };
            assert_eq!(&parsed, *event);
        }
        assert_eq!(activities[2].1.iteration_ref.as_ref(), Some(&iteration));
        // IDs are unique.
        let mut ids: Vec<_> = recorder.events().iter().map(|event| event.event_id().to_string()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), recorder.events().len());
    });
}

#[test]
fn the_memory_window_sees_allocations_and_other_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = dir.path().join("extra");
    std::fs::write(&extra, "0").expect("write");
    let env: [(&str, &Path); 1] = [("FAKE_CUDA_EXTRA_USED_FILE", &extra)];
    on_fake_driver("the_memory_window_sees_allocations_and_other_processes", Fake::Working, &env, || {
        let extra = std::env::var("FAKE_CUDA_EXTRA_USED_FILE").expect("set by the parent");
        let device = CudaDevice::open(0).expect("open");
        let adapter = CudaProfileAdapter::new(device.clone()).with_sample_interval(Duration::from_millis(1));
        let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
        let stream = device.stream().clone();
        profiler.measure_call(
            || {
                let block = stream.alloc_zeros::<u8>(GIB as usize).expect("alloc");
                std::thread::sleep(Duration::from_millis(20));
                drop(block);
                // Another process takes 3 GiB for a while: device-wide
                // memory counts it.
                std::fs::write(&extra, (3 * GIB).to_string()).expect("write");
                std::thread::sleep(Duration::from_millis(100));
                std::fs::write(&extra, "0").expect("write");
                std::thread::sleep(Duration::from_millis(5));
            },
            CallSpec::new(1, "allocate"),
        );
        let profile = profiler.finish(false);
        let json = profile.to_json_value().expect("json");
        let memory = &json["device_memory"];
        assert_eq!(memory["status"], "measured", "{memory}");
        assert_eq!(memory["backend"], "cuda");
        assert_eq!(memory["device"], format!("Fake CUDA Device ({})", device.uuid()));
        assert_eq!(memory["baseline_allocated_bytes"], CONTEXT);
        assert_eq!(memory["peak_allocated_increase_bytes"], 3 * GIB);
        assert_eq!(memory["measurement_scope"], "profile_window");
        let reason = memory["unavailable_reason"].as_str().expect("the scope note");
        assert!(reason.contains("not allocator-scoped"), "{reason}");
        assert_eq!(json["context"]["synchronization_status"], "synchronized", "{}", json["context"]);
        let metadata = &json["context"];
        assert_eq!(metadata["synchronization_method"], "cuStreamSynchronize", "{metadata}");
    });
}

#[test]
fn hooks_report_and_reset_windows() {
    on_fake_driver("hooks_report_and_reset_windows", Fake::Working, &[], || {
        let mut adapter = CudaProfileAdapter::open(0);
        let metadata = adapter.metadata().expect("metadata");
        assert_eq!(metadata.backend.as_deref(), Some("cuda"));
        assert!(metadata.asynchronous);
        assert_eq!(metadata.device_resolution.as_str(), "explicit");
        assert_eq!(adapter.profiling_device_hint().as_deref(), Some("cuda:0"));
        // A read without a reset has no window.
        let early = adapter.peak_device_memory().expect("no hook error");
        assert_eq!(early.status(), DeviceMeasurementStatus::Unavailable);
        assert_eq!(adapter.reset_peak_device_memory().expect("reset").status, OperationStatus::Succeeded);
        let measured = adapter.peak_device_memory().expect("peak");
        assert_eq!(measured.status(), DeviceMeasurementStatus::Measured);
        assert_eq!(measured.readings().peak_allocated_bytes, Some(CONTEXT));
        // The read closes the window.
        let again = adapter.peak_device_memory().expect("no hook error");
        assert_eq!(again.status(), DeviceMeasurementStatus::Unavailable);
    });
}

#[test]
fn a_driver_without_devices_is_unavailable_without_panicking() {
    on_fake_driver("a_driver_without_devices_is_unavailable_without_panicking", Fake::NoDevice, &[], || {
        let error = driver_available().expect_err("cuInit fails");
        assert!(error.is_unavailable());
        // The fake lacks cuGetErrorName: asking for the name panics inside
        // cudarc, is contained, and the raw code names the error instead.
        let reason = error.reason();
        assert!(reason.contains("cuInit failed") && reason.contains("CUDA_ERROR_NO_DEVICE"), "{reason}");
        assert!(probe().expect_err("probe").is_unavailable());
        assert!(CudaDevice::open(0).expect_err("open").is_unavailable());
        let mut adapter = CudaProfileAdapter::open(0);
        assert_eq!(
            adapter.reset_peak_device_memory().expect("no hook error").status,
            OperationStatus::Unavailable
        );
        assert_eq!(
            adapter.peak_device_memory().expect("no hook error").readings().unavailable_reason,
            Some(reason)
        );
    });
}
