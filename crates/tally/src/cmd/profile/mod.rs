//! `tally profile MODEL`: run a model on synthetic inputs through tally's
//! resource profiler and print the profile, as a table or as the JSON
//! vertebrae 1.1.0 writes (`dataclasses.asdict` of its `ResourceProfile`,
//! loadable with `vertebrae.profiling.resource_profile_from_dict`).
//!
//! The model kind is chosen by extension: `.onnx` runs on ONNX Runtime
//! (feature `onnx`).

#[cfg(feature = "onnx")]
mod onnx;
// Used by the model kinds, each behind its feature.
#[cfg_attr(not(feature = "onnx"), allow(dead_code, reason = "no model kind is compiled in"))]
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;

use super::account::Layout;

/// Arguments of `tally profile`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model: `.onnx`.
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
    /// Also write the inputs and the last call's outputs to DIR/io.json.
    #[arg(long, value_name = "DIR")]
    pub dump_outputs: Option<PathBuf>,
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
        _ => bail!("{}: unknown model type; tally profile reads .onnx models", args.model.display()),
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
}
