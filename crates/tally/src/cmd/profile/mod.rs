//! `tally profile MODEL`: run a model on synthetic inputs through tally's
//! resource profiler and print the profile, as a table or as the JSON
//! vertebrae 1.1.0 writes (`dataclasses.asdict` of its `ResourceProfile`,
//! loadable with `vertebrae.profiling.resource_profile_from_dict`).
//!
//! The model kind is chosen by extension: `.onnx` runs on ONNX Runtime
//! (feature `onnx`), `.pt` (TorchScript) on libtorch (feature `torch`).

#[cfg(feature = "onnx")]
mod onnx;
// Used by the model kinds, each behind its feature.
#[cfg_attr(
    not(any(feature = "onnx", feature = "torch")),
    allow(dead_code, reason = "no model kind is compiled in")
)]
mod report;
#[cfg(feature = "torch")]
mod torch;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;

use super::Layout;

/// Arguments of `tally profile`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model: `.onnx`, or TorchScript `.pt`.
    pub model: PathBuf,
    /// Size of a dynamic input dimension, by its symbolic name, or by
    /// `INPUT[INDEX]` for an unnamed one (repeatable).
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim)]
    pub dims: Vec<(String, u64)>,
    /// Batch size: the first dimension of every input (default: the model's
    /// fixed size, else 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: Option<u64>,
    /// Measured calls; the first is the profile's first call, the rest warm.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub calls: u64,
    /// Run one more call first, recorded as the first call (type `warmup`),
    /// so all `--calls` are warm calls.
    #[arg(long)]
    pub warmup: bool,
    /// Output format: `table`, or `json` (vertebrae's profile JSON).
    #[arg(long, value_enum, default_value_t = Layout::Table)]
    pub format: Layout,
    /// The ONNX Runtime shared library (default: `ORT_DYLIB_PATH`).
    #[arg(long, value_name = "PATH")]
    pub ort_lib: Option<PathBuf>,
    /// Threads per operator (default: the runtime's choice).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,
    /// TorchScript: the shape of a `forward` input, e.g. `8,3,224,224`
    /// (repeatable, one per input, in order); the first size is the batch.
    #[arg(long = "input-shape", value_name = "DIMS", value_parser = parse_shape)]
    pub input_shapes: Vec<InputShape>,
    /// TorchScript: the device to load and run on: `cpu`, `cuda`, `cuda:N`
    /// or `mps`.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Also write the inputs and the last call's outputs to DIR/io.json.
    #[arg(long, value_name = "DIR")]
    pub dump_outputs: Option<PathBuf>,
}

/// The sizes of one input, each at least 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputShape(pub Vec<i64>);

fn parse_shape(text: &str) -> Result<InputShape, String> {
    let sizes = text
        .split(',')
        .map(|size| match size.trim().parse::<i64>() {
            Ok(size) if size >= 1 => Ok(size),
            _ => Err(format!("'{size}' in '{text}' is not a size of at least 1")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(InputShape(sizes))
}

fn parse_dim(text: &str) -> Result<(String, u64), String> {
    let (name, value) = text.rsplit_once('=').ok_or_else(|| format!("expected NAME=VALUE, got '{text}'"))?;
    if name.is_empty() {
        return Err(format!("expected NAME=VALUE, got '{text}'"));
    }
    let value = value.trim().parse::<u64>().map_err(|_| format!("'{value}' is not a size in '{text}'"))?;
    if value == 0 {
        return Err(format!("a dimension of 0 in '{text}' would run on empty inputs"));
    }
    Ok((name.to_owned(), value))
}

/// Runs the command: exit 0 with a profile, 1 with an error.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let extension =
        args.model.extension().and_then(|extension| extension.to_str()).map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("onnx") => run_onnx(args),
        Some("pt") => run_torch(args),
        _ => bail!(
            "{}: unknown model type; tally profile reads .onnx and TorchScript .pt models",
            args.model.display()
        ),
    }
}

#[cfg(feature = "onnx")]
fn run_onnx(args: &Args) -> anyhow::Result<ExitCode> {
    onnx::run(args)
}

#[cfg(not(feature = "onnx"))]
fn run_onnx(args: &Args) -> anyhow::Result<ExitCode> {
    bail!("{}: this tally was built without ONNX support (cargo feature `onnx`)", args.model.display())
}

#[cfg(feature = "torch")]
fn run_torch(args: &Args) -> anyhow::Result<ExitCode> {
    torch::run(args)
}

#[cfg(not(feature = "torch"))]
fn run_torch(args: &Args) -> anyhow::Result<ExitCode> {
    bail!(
        "{}: this tally was built without libtorch support; rebuild with the `torch` feature \
         (`cargo build --release -p tally-ml --features torch`, with torch==2.13.0 installed for the \
         `python` first on PATH; see crates/tally-torch)",
        args.model.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_parse_name_equals_value() {
        assert_eq!(parse_dim("seq=128"), Ok(("seq".to_owned(), 128)));
        assert_eq!(parse_dim("x[1]=3"), Ok(("x[1]".to_owned(), 3)));
        assert_eq!(parse_dim("a=b=2"), Ok(("a=b".to_owned(), 2)));
        assert!(parse_dim("seq").is_err());
        assert!(parse_dim("=3").is_err());
        assert!(parse_dim("seq=-1").is_err());
        assert!(parse_dim("seq=0").is_err());
    }

    #[test]
    fn input_shapes_are_comma_separated_positive_sizes() {
        assert_eq!(parse_shape("8,3,224,224"), Ok(InputShape(vec![8, 3, 224, 224])));
        assert_eq!(parse_shape(" 2 , 4"), Ok(InputShape(vec![2, 4])));
        assert!(parse_shape("8,0").is_err());
        assert!(parse_shape("8,,3").is_err());
        assert!(parse_shape("-1").is_err());
        assert!(parse_shape("").is_err());
    }
}
