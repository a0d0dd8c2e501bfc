//! The profiler's overhead around a real libtorch call, for
//! `cargo xtask bench torch`: a 4-layer MLP (512 wide, tch::nn on the CPU,
//! one intra-op thread) whose batch is calibrated so one call takes about
//! 1 ms, run N times bare and N times inside `ResourceProfiler::measure_call`
//! with the Torch adapter (host and device memory on, as `tally profile`
//! runs), each bare call paired with a measured one. Prints one JSON object.
//!
//! Options: `--calls N --rounds N --target-us N --threads N --disabled`.

use tally_profile::CallSpec;
use tally_tests::overhead::{
    MLP_LAYERS as LAYERS, MLP_WIDTH, PairedOptions, calibrate_batch, empty_call_ns, exit_on_error,
    paired_rounds, time_ns,
};
use tally_torch::TorchResourceProfileAdapter;
use tally_torch::tch::nn::{self, Module, VarStore};
use tally_torch::tch::{self, Device, Kind, Tensor};

/// [`MLP_WIDTH`] as tch takes sizes (512 fits).
const HIDDEN: i64 = MLP_WIDTH as i64;

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let options = PairedOptions::parse(i32::MAX as u64, |_, _| false)?;
    // parse() refused a thread count above i32::MAX.
    let threads = i32::try_from(options.threads).expect("--threads fits i32");
    tch::set_num_threads(threads);
    let var_store = VarStore::new(Device::Cpu);
    let mut model = nn::seq();
    for layer in 0..LAYERS {
        model =
            model.add(nn::linear(var_store.root() / format!("l{layer}"), HIDDEN, HIDDEN, Default::default()));
        model = model.add_fn(|x| x.relu());
    }
    let input_of = |batch: i64| Tensor::ones([batch, HIDDEN], (Kind::Float, Device::Cpu));
    let call = |input: &Tensor| tch::no_grad(|| model.forward(input));

    // Each timed call drops its output inside the timing, as a caller would.
    let mut input = input_of(8);
    let mut input_batch = 8;
    let samples = calibrate_batch(8, options.target_ns, 8192, |batch| {
        if batch != input_batch {
            input = input_of(i64::try_from(batch)?);
            input_batch = batch;
        }
        Ok::<_, std::num::TryFromIntError>(time_ns(|| drop(call(&input))).1)
    })?;
    let batch = i64::try_from(samples)?;
    if samples != input_batch {
        input = input_of(batch);
    }
    for _ in 0..20 {
        let _ = call(&input);
    }

    let adapter = || Box::new(TorchResourceProfileAdapter::for_var_store(&var_store));
    // The paired method (tally_tests::overhead); one profiler per round.
    let timings = paired_rounds(
        &options,
        adapter,
        |profiler| {
            let ns = match profiler {
                Some(profiler) => {
                    time_ns(|| drop(profiler.measure_call(|| call(&input), CallSpec::new(samples, "batch"))))
                        .1
                }
                None => time_ns(|| drop(call(&input))).1,
            };
            Ok::<_, Box<dyn std::error::Error>>(ns)
        },
        |recorded, expected| {
            if recorded != expected {
                return Err("a call was not recorded".into());
            }
            Ok(())
        },
    )?;
    let summary = timings.summary().ok_or("--calls and --rounds must be positive")?;

    // The profiler's own cost per call around an empty call (the adapter
    // synchronizes before and after: resolving devices reads the model).
    let per_empty_call_ns = empty_call_ns(adapter(), samples, 5_000);

    let report = serde_json::json!({
        "hidden": HIDDEN,
        "layers": LAYERS,
        "batch": batch,
        "threads": threads,
        "profiler_enabled": !options.disabled,
        "calls": summary.pairs,
        "bare_total_ns": summary.bare_total_ns as f64,
        "measured_total_ns": summary.measured_total_ns as f64,
        "bare_median_ns": summary.bare_median_ns as f64,
        "paired_difference_median_ns": summary.paired_difference_median_ns,
        "relative_overhead_paired": summary.relative_overhead(),
        "measure_call_empty_ns": per_empty_call_ns,
    });
    println!("{report}");
    Ok(())
}

fn main() {
    exit_on_error("torch_overhead", run);
}
