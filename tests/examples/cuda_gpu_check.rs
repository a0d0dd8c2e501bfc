//! The GPU check of tally-cuda, run by `cargo xtask gpu-check`: on a machine
//! with a CUDA GPU it checks what only a GPU can show and prints a table;
//! elsewhere it prints why it skipped and exits 0.
//!
//! - `kernel_vs_host`: a spin kernel (PTX, JIT-compiled by the driver: no
//!   nvrtc) timed by events agrees with host timing within the launch
//!   overhead (measured with an empty kernel).
//! - `kernel_length`: the event time agrees with the length the kernel
//!   spun for on the device's `%globaltimer`.
//! - `memory_window`: the profile adapter's device-memory window sees a
//!   1 GiB allocation made inside it.
//! - `calibration`: the clock calibration's uncertainty is under 50 µs.
//! - `aligned_order`: device timestamps of a sequence of windows, aligned to
//!   the host clock through the emitted `infer.clock_alignment` with
//!   `tally-clock`, are monotonic and inside each window's host bracket.
//!
//! Exit status: 0 when every check passed or the GPU is absent, 1 otherwise.

use std::sync::Arc;
use std::time::Duration;

use tally_cuda::cudarc::driver::{CudaFunction, CudaStream, DriverError, LaunchConfig, PushKernelArg};
use tally_cuda::cudarc::nvrtc::Ptx;
use tally_cuda::{CudaDevice, CudaError, CudaProfileAdapter, CudaRecorder, Producer, WindowOptions};
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};

/// A kernel that spins until `%globaltimer` (device nanoseconds) has
/// advanced by its parameter. PTX ISA 7.0 / sm_50 so any driver since
/// CUDA 11 JIT-compiles it for the GPU at hand.
const SPIN_PTX: &str = r#"
.version 7.0
.target sm_50
.address_size 64

.visible .entry spin_ns(
    .param .u64 duration_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [duration_ns];
    mov.u64 %rd2, %globaltimer;
SPIN:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra SPIN;
    ret;
}
"#;

/// The calibration's uncertainty limit the issue sets.
const CALIBRATION_LIMIT_NS: u64 = 50_000;
const GIB: u64 = 1 << 30;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The check.
    pub check: &'static str,
    /// Whether it passed.
    pub passed: bool,
    /// What was measured.
    pub measured: String,
    /// What it had to meet.
    pub limit: String,
}

/// The outcome of the whole check.
#[derive(Debug)]
pub enum Outcome {
    /// No usable driver or device: the reason.
    Skipped(String),
    /// The device checked, and one row per check.
    Ran {
        /// `name (uuid), CUDA x.y`.
        device: String,
        /// The rows, in order.
        rows: Vec<Row>,
    },
}

/// Runs every check on device 0.
pub fn run() -> Outcome {
    let device = match CudaDevice::open(0) {
        Ok(device) => device,
        Err(error) if error.is_unavailable() => return Outcome::Skipped(error.reason()),
        Err(error) => {
            let row = failed("open_device", error);
            return Outcome::Ran { device: "device 0".to_owned(), rows: vec![row] };
        }
    };
    let version = tally_cuda::driver_version().map(|v| v.to_string()).unwrap_or_else(|e| e.to_string());
    let label = format!("{} ({}), CUDA {version}", device.name(), device.uuid());
    let mut rows = Vec::new();
    let producer = Producer::new("gpu-check", "gpu-check", "tally-cuda-gpu-check");
    let recorder = producer.and_then(|producer| CudaRecorder::new(&device, producer));
    let mut recorder = match recorder {
        Ok(recorder) => recorder,
        Err(error) => {
            rows.push(failed("recorder", error));
            return Outcome::Ran { device: label, rows };
        }
    };
    let spin = load_spin(&device);
    match spin.as_ref().map_err(Clone::clone).and_then(|spin| kernel_timing(&mut recorder, spin)) {
        Ok(timing) => rows.extend(timing),
        Err(error) => rows.push(failed("kernel_timing", error)),
    }
    rows.push(memory_window(&device).unwrap_or_else(|error| failed("memory_window", error)));
    rows.push(calibration(&mut recorder).unwrap_or_else(|error| failed("calibration", error)));
    rows.push(match &spin {
        Ok(spin) => aligned_order(&device, spin).unwrap_or_else(|error| failed("aligned_order", error)),
        Err(error) => failed("aligned_order", error.clone()),
    });
    Outcome::Ran { device: label, rows }
}

fn failed(check: &'static str, error: CudaError) -> Row {
    Row { check, passed: false, measured: format!("error: {error}"), limit: "no error".to_owned() }
}

fn load_spin(device: &CudaDevice) -> Result<CudaFunction, CudaError> {
    let context = device.context().clone();
    let module =
        context.load_module(Ptx::from_src(SPIN_PTX)).map_err(|error| driver("cuModuleLoadData", error))?;
    module.load_function("spin_ns").map_err(|error| driver("cuModuleGetFunction", error))
}

fn driver(call: &'static str, error: DriverError) -> CudaError {
    CudaError::Driver { call, name: format!("{:?}", error.0), description: error.to_string() }
}

#[allow(unsafe_code, reason = "launching a kernel is unsafe in cudarc: the arguments must match it")]
fn launch_spin(stream: &Arc<CudaStream>, spin: &CudaFunction, duration_ns: u64) -> Result<(), CudaError> {
    let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let mut launch = stream.launch_builder(spin);
    launch.arg(&duration_ns);
    // SAFETY: spin_ns takes exactly one .u64 parameter, passed here by
    // reference to a live u64.
    unsafe { launch.launch(config) }.map(|_| ()).map_err(|error| driver("cuLaunchKernel", error))
}

/// (device ns, host ns) of a window around one spin kernel.
fn timed_spin(
    recorder: &mut CudaRecorder,
    spin: &CudaFunction,
    duration_ns: u64,
    options: WindowOptions,
) -> Result<(u64, u64), CudaError> {
    let window = recorder.window(options, |stream| launch_spin(stream, spin, duration_ns))?;
    window.value.clone()?;
    Ok((window.device_duration_ns(), window.host_duration_ns()))
}

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

/// Two rows: `kernel_vs_host` (event time agrees with host time within the
/// launch overhead) and `kernel_length` (event time agrees with the spin's
/// own `%globaltimer` length: the event clock runs at the right rate).
fn kernel_timing(recorder: &mut CudaRecorder, spin: &CudaFunction) -> Result<[Row; 2], CudaError> {
    // The first launch JIT-compiles and loads the kernel.
    timed_spin(recorder, spin, 0, WindowOptions::labelled("warm-up"))?;
    let mut overheads = Vec::new();
    for _ in 0..9 {
        let (device, host) = timed_spin(recorder, spin, 0, WindowOptions::labelled("empty"))?;
        overheads.push(host.saturating_sub(device));
    }
    let overhead = median(&mut overheads);
    // Launch overhead varies from launch to launch: allow twice the median
    // and 100 µs of scheduling noise.
    let allowance = 2 * overhead + 100_000;
    let resolution = i128::from(tally_cuda::EVENT_RESOLUTION_NS);
    let (mut gap_ok, mut length_ok) = (true, true);
    let mut worst_gap: i128 = 0;
    let mut worst_length: i128 = 0;
    for requested in [1_000_000u64, 5_000_000, 20_000_000] {
        // Best of three: a host thread descheduled between the events (or
        // a GPU time-sliced with another process) stretches one try, not
        // the agreement itself.
        let mut best_gap = i128::MAX;
        let mut best_length = i128::MAX;
        for _ in 0..3 {
            let (device, host) = timed_spin(recorder, spin, requested, WindowOptions::labelled("spin"))?;
            let gap = i128::from(host) - i128::from(device);
            let length = i128::from(device) - i128::from(requested);
            if gap.abs() < best_gap.abs() {
                best_gap = gap;
            }
            if length.abs() < best_length.abs() {
                best_length = length;
            }
        }
        worst_gap = worst_gap.max(best_gap.abs());
        worst_length = worst_length.max(best_length.abs());
        // The device time cannot exceed the host time around it (beyond the
        // event resolution), nor fall short of the spin it measured.
        gap_ok &= best_gap >= -resolution && best_gap <= i128::from(allowance);
        length_ok &= best_length >= -resolution && best_length <= i128::from(requested / 50 + 50_000);
    }
    Ok([
        Row {
            check: "kernel_vs_host",
            passed: gap_ok,
            measured: format!(
                "launch overhead {} us; |host - device| <= {} us (spins of 1, 5, 20 ms)",
                overhead / 1000,
                worst_gap / 1000
            ),
            limit: format!("best of 3: host - device in [-0.5, {}] us", allowance / 1000),
        },
        Row {
            check: "kernel_length",
            passed: length_ok,
            measured: format!("|device - requested| <= {} us", worst_length / 1000),
            limit: "best of 3: within 2% + 50 us".to_owned(),
        },
    ])
}

fn memory_window(device: &CudaDevice) -> Result<Row, CudaError> {
    let adapter = CudaProfileAdapter::new(device.clone()).with_sample_interval(Duration::from_millis(1));
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
    let stream = device.stream().clone();
    let allocated = profiler.measure_call(
        || -> Result<(), CudaError> {
            let block =
                stream.alloc_zeros::<u8>(GIB as usize).map_err(|error| driver("cuMemAlloc", error))?;
            stream.synchronize().map_err(|error| driver("cuStreamSynchronize", error))?;
            // Held for many sampler intervals, then freed inside the window.
            std::thread::sleep(Duration::from_millis(50));
            drop(block);
            Ok(())
        },
        CallSpec::new(1, "allocate"),
    );
    allocated?;
    let profile = profiler.finish(false);
    let json = profile.to_json_value().map_err(CudaError::from)?;
    let memory = &json["device_memory"];
    let status = memory["status"].as_str().unwrap_or("missing").to_owned();
    let increase = memory["peak_allocated_increase_bytes"].as_u64().unwrap_or(0);
    Ok(Row {
        check: "memory_window",
        passed: status == "measured" && increase >= GIB,
        measured: format!("status {status}, peak - baseline = {:.3} GiB", increase as f64 / GIB as f64),
        limit: "measured, >= 1 GiB".to_owned(),
    })
}

fn calibration(recorder: &mut CudaRecorder) -> Result<Row, CudaError> {
    let calibration = recorder.calibrate(200)?;
    let uncertainty = calibration.uncertainty_ns();
    Ok(Row {
        check: "calibration",
        passed: uncertainty < CALIBRATION_LIMIT_NS,
        measured: format!(
            "uncertainty {:.1} us over {} samples (spread {:.1} us)",
            uncertainty as f64 / 1000.0,
            calibration.samples().len(),
            calibration.spread_ns() as f64 / 1000.0
        ),
        limit: format!("< {} us", CALIBRATION_LIMIT_NS / 1000),
    })
}

fn aligned_order(device: &CudaDevice, spin: &CudaFunction) -> Result<Row, CudaError> {
    // A clock of its own, calibrated just before and just after the
    // sequence: the offset is taken as constant over the calibration's
    // window, so the window is kept to the tens of milliseconds the
    // sequence needs, where drift between the clocks is negligible.
    let producer = Producer::new("gpu-check", "gpu-check", "tally-cuda-gpu-check-order")?;
    let mut recorder = CudaRecorder::new(device, producer)?;
    recorder.calibrate(100)?;
    let mut windows = Vec::new();
    for index in 0..50u64 {
        let window = recorder.window(WindowOptions::labelled(format!("sequence-{index}")), |stream| {
            launch_spin(stream, spin, 20_000 + 1_000 * (index % 7))
        })?;
        window.value.clone()?;
        windows.push(window);
        std::thread::sleep(Duration::from_micros(200));
    }
    // A second calibration extends the alignment's validity over the windows.
    recorder.calibrate(100)?;
    let alignment = recorder.emit_clock_alignment()?;
    let uncertainty = recorder.calibration().map_or(0, |calibration| calibration.uncertainty_ns());
    let host = tally_cuda::host_clock_domain();
    let device_domain = recorder.clock().domain().to_string();
    let mut previous: Option<i128> = None;
    let mut monotonic = true;
    let mut inside = true;
    let mut worst_outside: i128 = 0;
    for window in &windows {
        let align = |device_ns: u64| {
            tally_clock::align_timestamp(i128::from(device_ns), &device_domain, &host, [&alignment])
                .map(|aligned| aligned.value_ns)
                .map_err(|error| CudaError::Measurement(format!("alignment failed: {error}")))
        };
        let start = align(window.device_start_ns)?;
        let end = align(window.device_end_ns)?;
        if previous.is_some_and(|previous| start < previous) || end < start {
            monotonic = false;
        }
        previous = Some(end);
        let slack = i128::from(uncertainty);
        let below = i128::from(window.host_start_ns) - slack - start;
        let above = end - (i128::from(window.host_end_ns) + slack);
        worst_outside = worst_outside.max(below).max(above);
        if below > 0 || above > 0 {
            inside = false;
        }
    }
    Ok(Row {
        check: "aligned_order",
        passed: monotonic && inside,
        measured: format!(
            "{} windows: monotonic {monotonic}, inside host brackets {inside} (worst excess {} ns)",
            windows.len(),
            worst_outside.max(0)
        ),
        limit: "monotonic, inside ± uncertainty".to_owned(),
    })
}

/// The table, one line per row.
pub fn table(device: &str, rows: &[Row]) -> String {
    let width = rows.iter().map(|row| row.measured.len()).max().unwrap_or(0).max(8);
    let mut text = format!("tally-cuda gpu-check on {device}\n");
    text += &format!("{:<14} {:<6} {:<width$}  {}\n", "check", "result", "measured", "limit");
    for row in rows {
        let result = if row.passed { "pass" } else { "FAIL" };
        text += &format!("{:<14} {:<6} {:<width$}  {}\n", row.check, result, row.measured, row.limit);
    }
    text
}

fn main() -> std::process::ExitCode {
    match run() {
        Outcome::Skipped(reason) => {
            println!("skipped: {reason}");
            std::process::ExitCode::SUCCESS
        }
        Outcome::Ran { device, rows } => {
            print!("{}", table(&device, &rows));
            if rows.iter().all(|row| row.passed) {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
    }
}
