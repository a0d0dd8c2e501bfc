//! `tally profile MODEL.pt` on libtorch (TorchScript).

use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tally_torch::tch::{Device, Tensor};
use tally_torch::{ScriptProfileOptions, profile_torchscript, tensor_json};

use super::Args;
use super::report::{Report, print, write_json_atomically};

/// `cpu`, `cuda`, `cuda:N` or `mps`, as torch.device reads them.
fn parse_device(text: &str) -> anyhow::Result<Device> {
    Ok(match text.trim() {
        "cpu" => Device::Cpu,
        "cuda" => Device::Cuda(0),
        "mps" => Device::Mps,
        other => match other.strip_prefix("cuda:").map(str::parse::<usize>) {
            Some(Ok(index)) => Device::Cuda(index),
            _ => bail!("--device '{text}': expected cpu, cuda, cuda:N or mps"),
        },
    })
}

fn tensors_json(prefix: &str, tensors: &[Tensor]) -> anyhow::Result<Vec<Value>> {
    tensors
        .iter()
        .enumerate()
        .map(|(index, tensor)| tensor_json(&format!("{prefix}{index}"), tensor).context("reading a tensor"))
        .collect()
}

/// Runs the command for a TorchScript model.
pub(super) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if !args.dims.is_empty() || args.batch.is_some() {
        bail!("--dim and --batch apply to ONNX models; give TorchScript input shapes with --input-shape");
    }
    if args.input_shapes.is_empty() {
        bail!(
            "{}: give the shape of each forward input with --input-shape (e.g. 8,3,224,224)",
            args.model.display()
        );
    }
    let options = ScriptProfileOptions {
        input_shapes: args.input_shapes.iter().map(|shape| shape.0.clone()).collect(),
        device: parse_device(&args.device)?,
        calls: args.calls,
        warmup: args.warmup,
        threads: args.threads.map(|threads| i32::try_from(threads).unwrap_or(i32::MAX)),
        ..ScriptProfileOptions::default()
    };
    let run = profile_torchscript(&args.model, &options)
        .with_context(|| format!("profiling {}", args.model.display()))?;
    let report = Report {
        model: args.model.clone(),
        runtime: format!("libtorch {}", run.libtorch_version),
        inputs: options
            .input_shapes
            .iter()
            .enumerate()
            .map(|(index, shape)| {
                let sizes: Vec<String> = shape.iter().map(ToString::to_string).collect();
                format!("input{index}: torch.float32 [{}]", sizes.join(", "))
            })
            .collect(),
        samples_per_call: run.samples_per_call,
    };
    if let Some(dir) = &args.dump_outputs {
        let dump = json!({
            "model": args.model.display().to_string(),
            "samples_per_call": run.samples_per_call,
            "inputs": tensors_json("input", &run.inputs)?,
            "outputs": tensors_json("output", &run.outputs)?,
        });
        write_json_atomically(dir, "io.json", &dump)?;
    }
    print(&report, &run.profile, args.format)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_as_torch_names_them() {
        assert_eq!(parse_device("cpu").ok(), Some(Device::Cpu));
        assert_eq!(parse_device("cuda").ok(), Some(Device::Cuda(0)));
        assert_eq!(parse_device("cuda:3").ok(), Some(Device::Cuda(3)));
        assert_eq!(parse_device("mps").ok(), Some(Device::Mps));
        assert!(parse_device("cuda:x").is_err());
        assert!(parse_device("tpu").is_err());
    }
}
