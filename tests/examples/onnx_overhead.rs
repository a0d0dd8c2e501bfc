//! The profiler's overhead on a real ONNX Runtime call, for `cargo xtask
//! bench onnx`: the same model run N times bare and N times inside
//! `ResourceProfiler::measure_call` (with the ONNX adapter and the default
//! configuration `tally profile` uses), each bare call paired with a
//! measured one so load from elsewhere hits both alike. The model is an MLP written here, its batch calibrated so one
//! call takes about the target time. Prints one JSON object.
//!
//! ```text
//! onnx_overhead --lib libonnxruntime.so --dir DIR [--calls N] [--rounds R] [--target-us T] [--threads K] [--disabled]
//! ```

use std::path::PathBuf;

use tally_onnx::write::{GraphWriter, Node, TensorPayload};
use tally_onnx::{
    DataType, OnnxResourceProfileAdapter, OnnxRuntime, OnnxSession, SessionOptions, ShapeBindings,
};
use tally_profile::CallSpec;
use tally_tests::overhead::{
    MLP_LAYERS as LAYERS, MLP_WIDTH as HIDDEN, PairedOptions, calibrate_batch, empty_call_ns, exit_on_error,
    paired_rounds, time_ns,
};

struct Options {
    library: PathBuf,
    dir: PathBuf,
    paired: PairedOptions,
}

fn parse() -> Result<Options, String> {
    let mut library = PathBuf::new();
    let mut dir = std::env::temp_dir();
    let paired = PairedOptions::parse(u64::MAX, |flag, value| match flag {
        "--lib" => {
            library = PathBuf::from(value);
            true
        }
        "--dir" => {
            dir = PathBuf::from(value);
            true
        }
        _ => false,
    })?;
    if library.as_os_str().is_empty() {
        return Err("--lib is required".to_owned());
    }
    Ok(Options { library, dir, paired })
}

/// An MLP of `LAYERS` square layers with a dynamic batch.
fn write_model(dir: &std::path::Path) -> std::io::Result<PathBuf> {
    let mut graph = GraphWriter::new("overhead_mlp");
    graph.input("x", DataType::Float, &[None, Some(HIDDEN)]);
    graph.output("y", DataType::Float, &[None, Some(HIDDEN)]);
    let mut previous = "x".to_owned();
    for layer in 0..LAYERS {
        let weights: Vec<u8> = (0..HIDDEN * HIDDEN)
            .flat_map(|i| (((i * 7 + layer as u64) % 13) as f32 / 13.0 - 0.5).to_le_bytes())
            .collect();
        let bias: Vec<u8> = (0..HIDDEN).flat_map(|i| ((i % 5) as f32 * 0.01).to_le_bytes()).collect();
        let (w, b) = (format!("w{layer}"), format!("b{layer}"));
        graph.initializer(&w, DataType::Float, &[HIDDEN, HIDDEN], TensorPayload::Raw(weights));
        graph.initializer(&b, DataType::Float, &[HIDDEN], TensorPayload::Raw(bias));
        let (product, sum) = (format!("p{layer}"), format!("s{layer}"));
        let out = if layer + 1 == LAYERS { "y".to_owned() } else { format!("h{layer}") };
        graph.node(Node::new("MatMul", &[&previous, &w], &[&product]));
        graph.node(Node::new("Add", &[&product, &b], &[&sum]));
        graph.node(Node::new("Relu", &[&sum], &[&out]));
        previous = out;
    }
    std::fs::create_dir_all(dir)?;
    let path = dir.join("overhead_mlp.onnx");
    std::fs::write(&path, graph.model_bytes(17))?;
    Ok(path)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let options = parse()?;
    let runtime = OnnxRuntime::load(Some(&options.library))?;
    let model = write_model(&options.dir)?;
    let session_options = SessionOptions { intra_op_threads: Some(options.paired.threads as usize) };
    let mut session = OnnxSession::open(&runtime, &model, &session_options)?;

    // Calibrate the batch so one call takes about the target time.
    let inputs_for = |batch: u64| ShapeBindings { batch: Some(batch), ..Default::default() };
    let mut inputs = session.synthetic_inputs(&inputs_for(8))?;
    let mut inputs_batch = 8;
    let batch = calibrate_batch(8, options.paired.target_ns, 8192, |batch| {
        if batch != inputs_batch {
            inputs = session.synthetic_inputs(&inputs_for(batch))?;
            inputs_batch = batch;
        }
        let (ran, ns) = time_ns(|| session.run(&inputs));
        ran.map(|()| ns)
    })?;
    if batch != inputs_batch {
        inputs = session.synthetic_inputs(&inputs_for(batch))?;
    }
    for _ in 0..20 {
        session.run(&inputs)?;
    }

    let template = OnnxResourceProfileAdapter::for_session(&session);
    let adapter = || Box::new(template.clone());
    // The paired method (tally_tests::overhead); one profiler per round.
    let timings = paired_rounds(
        &options.paired,
        adapter,
        |profiler| {
            let (ran, ns) = match profiler {
                Some(profiler) => {
                    time_ns(|| profiler.measure_call(|| session.run(&inputs), CallSpec::new(batch, "batch")))
                }
                None => time_ns(|| session.run(&inputs)),
            };
            ran.map(|()| ns)
        },
        |recorded, expected| {
            assert_eq!(recorded, expected, "every call was recorded");
            Ok(())
        },
    )?;
    let summary = timings.summary().ok_or("--calls and --rounds must be positive")?;
    let bare_median = summary.bare_median_ns as f64;
    let measured_median = summary.measured_median_ns as f64;
    let bare_total = summary.bare_total_ns as f64;
    let measured_total = summary.measured_total_ns as f64;

    // The profiler's own cost per call, measured around an empty call:
    // stable where the difference above is within the machine's noise.
    let per_empty_call_ns = empty_call_ns(adapter(), batch, 20_000);

    let report = serde_json::json!({
        "library": runtime.library().display().to_string(),
        "onnxruntime_version": runtime.version(),
        "hidden": HIDDEN,
        "layers": LAYERS,
        "batch": batch,
        "threads": options.paired.threads,
        "profiler_enabled": !options.paired.disabled,
        "calls": summary.pairs,
        "bare_total_ns": bare_total,
        "measured_total_ns": measured_total,
        "bare_median_ns": bare_median,
        "measured_median_ns": measured_median,
        "paired_difference_median_ns": summary.paired_difference_median_ns,
        "relative_overhead_paired": summary.relative_overhead(),
        "relative_overhead_median": (measured_median - bare_median) / bare_median,
        "relative_overhead_total": (measured_total - bare_total) / bare_total,
        "measure_call_empty_ns": per_empty_call_ns,
        "measure_call_empty_relative": per_empty_call_ns / bare_median,
    });
    println!("{report}");
    Ok(())
}

fn main() {
    exit_on_error("onnx_overhead", run);
}
