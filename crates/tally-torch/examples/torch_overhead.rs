//! The profiler's overhead around a real libtorch call, for
//! `cargo xtask bench torch`: a 4-layer MLP (512 wide, tch::nn on the CPU,
//! one intra-op thread) whose batch is calibrated so one call takes about
//! 1 ms, run N times bare and N times inside `ResourceProfiler::measure_call`
//! with the Torch adapter (host and device memory on, as `tally profile`
//! runs), each bare call paired with a measured one. Prints one JSON object.
//!
//! Options: `--calls N --rounds N --target-us N --threads N --disabled`.

use std::time::Instant;

use tally_profile::overhead::{PairedTimings, calibrate_batch, time_ns};
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
use tally_torch::TorchResourceProfileAdapter;
use tally_torch::tch::nn::{self, Module, VarStore};
use tally_torch::tch::{Device, Kind, Tensor};

const HIDDEN: i64 = 512;
const LAYERS: usize = 4;

struct Options {
    calls: usize,
    rounds: usize,
    target_ns: u64,
    threads: i32,
    disabled: bool,
}

fn parse() -> Result<Options, String> {
    let mut options = Options { calls: 200, rounds: 10, target_ns: 1_000_000, threads: 1, disabled: false };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--disabled" {
            options.disabled = true;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<u64>().map_err(|_| format!("{flag}: '{value}' is not a number"));
        match flag.as_str() {
            "--calls" => options.calls = number()? as usize,
            "--rounds" => options.rounds = number()? as usize,
            "--target-us" => options.target_ns = number()? * 1_000,
            "--threads" => options.threads = i32::try_from(number()?).map_err(|_| "--threads: too many")?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let options = parse()?;
    tch::set_num_threads(options.threads);
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
    // The paired method (tally_profile::overhead); one profiler per round.
    let mut timings = PairedTimings::with_capacity(options.calls * options.rounds);
    for _ in 0..options.rounds {
        let config = ProfilerConfig { enabled: !options.disabled, ..ProfilerConfig::default() };
        let mut profiler = ResourceProfiler::new(config).with_adapter(adapter());
        for _ in 0..options.calls {
            timings.pair(|measured| {
                let ns = if measured {
                    time_ns(|| drop(profiler.measure_call(|| call(&input), CallSpec::new(samples, "batch"))))
                        .1
                } else {
                    time_ns(|| drop(call(&input))).1
                };
                Ok::<_, std::convert::Infallible>(ns)
            })?;
        }
        let profile = profiler.finish(false);
        let recorded = if options.disabled { 0 } else { options.calls };
        if profile.inference.batch_sizes.len() != recorded {
            return Err("a call was not recorded".into());
        }
    }
    let summary = timings.summary().ok_or("--calls and --rounds must be positive")?;

    // The profiler's own cost per call around an empty call (the adapter
    // synchronizes before and after: resolving devices reads the model).
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(adapter());
    let empty_calls = 5_000u32;
    let start = Instant::now();
    for _ in 0..empty_calls {
        profiler.measure_call(|| (), CallSpec::new(samples, "batch"));
    }
    let per_empty_call_ns = start.elapsed().as_nanos() as f64 / f64::from(empty_calls);

    let report = serde_json::json!({
        "hidden": HIDDEN,
        "layers": LAYERS,
        "batch": batch,
        "threads": options.threads,
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
    if let Err(error) = run() {
        eprintln!("torch_overhead: {error}");
        std::process::exit(1);
    }
}
