//! `tally profile MODEL.onnx` on ONNX Runtime.

use std::process::ExitCode;

use anyhow::anyhow;
use serde_json::{Value, json};
use tally_onnx::{
    IoInfo, IoType, LibrarySource, LoadError, OnnxError, OutputValue, ProfileOptions, SessionOptions,
    ShapeBindings, ShapeError, TensorData, profile_model,
};

use super::Args;
use super::report::{Report, print, write_json_atomically};

fn describe(input: &IoInfo) -> String {
    match &input.io_type {
        IoType::Tensor { data_type, dims } => {
            let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
            format!("{}: {data_type} [{}]", input.name, dims.join(", "))
        }
        IoType::Other { description, .. } => format!("{}: {description}", input.name),
    }
}

fn tensor_json(tensor: &TensorData) -> Value {
    let values = tensor.to_f64().map(|values| {
        values
            .into_iter()
            .map(|value| if value.is_finite() { json!(value) } else { Value::Null })
            .collect::<Vec<_>>()
    });
    json!({
        "name": tensor.name,
        "data_type": tensor.data_type.onnx_name(),
        "shape": tensor.shape,
        "values": values,
    })
}

/// Runs the command for an ONNX model.
pub(super) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let options = ProfileOptions {
        library: args.ort_lib.clone(),
        bindings: ShapeBindings { dims: args.dims.iter().cloned().collect(), batch: args.batch },
        calls: args.calls,
        warmup: args.warmup,
        session: SessionOptions {
            intra_op_threads: args.threads.map(|threads| usize::try_from(threads).unwrap_or(usize::MAX)),
        },
        ..ProfileOptions::default()
    };
    let run = profile_model(&args.model, &options).map_err(in_flag_terms)?;
    if run.runtime_origin == LibrarySource::PythonPackage {
        eprintln!(
            "tally: ONNX Runtime {} {}: {}",
            run.runtime_version,
            run.runtime_origin,
            run.runtime_library.display()
        );
    }
    let report = Report {
        model: args.model.clone(),
        runtime: format!("ONNX Runtime {} ({})", run.runtime_version, run.runtime_library.display()),
        inputs: run
            .inputs
            .iter()
            .map(|tensor| {
                let shape: Vec<String> = tensor.shape.iter().map(ToString::to_string).collect();
                format!("{}: {} [{}]", tensor.name, tensor.data_type, shape.join(", "))
            })
            .collect(),
        samples_per_call: run.samples_per_call,
    };
    if let Some(dir) = &args.dump_outputs {
        let outputs: Vec<Value> = run
            .outputs
            .iter()
            .map(|output| match output {
                OutputValue::Tensor(tensor) => tensor_json(tensor),
                OutputValue::Other { name, description } => {
                    json!({"name": name, "data_type": description, "shape": null, "values": null})
                }
            })
            .collect();
        let dump = json!({
            "model": args.model.display().to_string(),
            "declared_inputs": run.declared_inputs.iter().map(describe).collect::<Vec<_>>(),
            "samples_per_call": run.samples_per_call,
            "inputs": run.inputs.iter().map(tensor_json).collect::<Vec<_>>(),
            "outputs": outputs,
        });
        write_json_atomically(dir, "io.json", &dump)?;
    }
    print(&report, &run.profile, args.format)?;
    Ok(ExitCode::SUCCESS)
}

/// tally-onnx's typed errors in the terms of this command's flags: the
/// library names none, since only this crate knows the command line.
fn in_flag_terms(error: OnnxError) -> anyhow::Error {
    match error {
        OnnxError::Shape(shape) => anyhow!(match shape {
            ShapeError::FixedBatch { input, size, batch } => {
                format!("input '{input}' has a fixed first dimension of {size}; --batch {batch} cannot apply")
            }
            ShapeError::BindingConflictsWithBatch { input, binding, size, batch } => {
                format!("input '{input}': --dim {binding}={size} conflicts with --batch {batch}")
            }
            ShapeError::Unbound { input, index, dimension, binding } => {
                // A positional key (`x[1]`) needs quoting in a shell.
                let hint = if binding.ends_with(']') {
                    format!("--dim '{binding}=N'")
                } else {
                    format!("--dim {binding}=N")
                };
                format!(
                    "input '{input}' dimension {index} ({dimension}) is dynamic: give its size with {hint}"
                )
            }
            ShapeError::UnusedBinding { binding } => {
                format!("--dim {binding} matches no dynamic dimension of the model's inputs")
            }
            // A case added later keeps the library's words until worded here.
            other => other.to_string(),
        }),
        OnnxError::Load(LoadError::NotConfigured) => anyhow!(
            "{}; provide one in any of three ways: --ort-lib PATH, ORT_DYLIB_PATH=PATH, or \
             `pip install onnxruntime` for the python3 on PATH",
            LoadError::NotConfigured
        ),
        other => other.into(),
    }
}
