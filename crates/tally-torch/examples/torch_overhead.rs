//! The profiler's overhead around a real libtorch call, for
//! `cargo xtask bench torch`: a 4-layer MLP (512 wide, tch::nn on the CPU,
//! one intra-op thread) whose batch is calibrated so one call takes about
//! 1 ms, run N times bare and N times inside `ResourceProfiler::measure_call`
//! with the Torch adapter (host and device memory on, as `tally profile`
//! runs), each bare call paired with a measured one. Prints one JSON object.
//!
//! Options: `--calls N --rounds N --target-us N --threads N --disabled`.

use std::time::Instant;

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

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 { values[middle] } else { (values[middle - 1] + values[middle]) / 2.0 }
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

    let mut batch = 8i64;
    let mut input = input_of(batch);
    for _ in 0..4 {
        let mut times = Vec::new();
        for _ in 0..15 {
            let start = Instant::now();
            let _ = call(&input);
            times.push(start.elapsed().as_nanos() as f64);
        }
        let call_ns = median(&mut times);
        let scaled = ((batch as f64) * options.target_ns as f64 / call_ns).round().clamp(1.0, 8192.0) as i64;
        if scaled == batch {
            break;
        }
        batch = scaled;
        input = input_of(batch);
    }
    for _ in 0..20 {
        let _ = call(&input);
    }

    let samples = batch.unsigned_abs();
    let adapter = || Box::new(TorchResourceProfileAdapter::for_var_store(&var_store));
    let mut bare_ns = Vec::with_capacity(options.calls * options.rounds);
    let mut measured_ns = Vec::with_capacity(options.calls * options.rounds);
    for _ in 0..options.rounds {
        let config = ProfilerConfig { enabled: !options.disabled, ..ProfilerConfig::default() };
        let mut profiler = ResourceProfiler::new(config).with_adapter(adapter());
        for index in 0..options.calls {
            let bare = || {
                let start = Instant::now();
                let _ = call(&input);
                start.elapsed().as_nanos() as f64
            };
            let mut measured = || {
                let start = Instant::now();
                let _ = profiler.measure_call(|| call(&input), CallSpec::new(samples, "batch"));
                start.elapsed().as_nanos() as f64
            };
            if index % 2 == 0 {
                bare_ns.push(bare());
                measured_ns.push(measured());
            } else {
                measured_ns.push(measured());
                bare_ns.push(bare());
            }
        }
        let profile = profiler.finish(false);
        let recorded = if options.disabled { 0 } else { options.calls };
        if profile.inference.batch_sizes.len() != recorded {
            return Err("a call was not recorded".into());
        }
    }
    // Each pair ran back to back: the median of the paired differences
    // cancels load that changes slower than a pair.
    let mut differences: Vec<f64> = measured_ns.iter().zip(&bare_ns).map(|(m, b)| m - b).collect();
    let paired_difference = median(&mut differences);
    let bare_median = median(&mut bare_ns.clone());
    let bare_total: f64 = bare_ns.iter().sum();
    let measured_total: f64 = measured_ns.iter().sum();

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
        "calls": bare_ns.len(),
        "bare_total_ns": bare_total,
        "measured_total_ns": measured_total,
        "bare_median_ns": bare_median,
        "paired_difference_median_ns": paired_difference,
        "relative_overhead_paired": paired_difference / bare_median,
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
