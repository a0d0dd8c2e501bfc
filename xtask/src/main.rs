//! Project automation, run as `cargo xtask <command>`:
//!
//! - `test`: the whole test suite on a fresh machine (sets up the Python
//!   reference environment, then format, lint, docs and tests).
//! - `bench [--json] [--quick] [NAME...]`: benchmarks beside the Python
//!   references, with ratios.
//! - `python`: only set up `.venv` and print its interpreter.
//! - `python-hta`: only set up `.venv-hta` (Holistic Trace Analysis) and
//!   print its interpreter.
//! - `boundaries`: only the tidy checks of docs/ARCHITECTURE.md's boundaries
//!   (tests/tests/tidy.rs, which `cargo test` runs as well).
//! - `fuzz [TARGET...] [--seconds N] [--jobs J]`: coverage-guided fuzzing of
//!   every parser (fuzz/README.md).
//! - `gpu-check [NAME...]`: the checks that need a GPU; each says it
//!   skipped, and why, on a machine without one.
//! - `dist`: the release artifacts in `target/dist/`: the `tally-ml` wheel
//!   (manylinux_2_28, with the `tally` command), its sdist and the `.crate`
//!   files (docs/RELEASING.md). `wheel-check [--reference BIN]` installs
//!   that wheel into a fresh venv and runs it without a Rust toolchain.

mod bench;
mod dist;
mod fuzz;
mod gpu_check;
mod python;
mod test;

use std::path::{Path, PathBuf};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match command.as_str() {
        "test" => test::run(&rest),
        "boundaries" => test::check_boundaries(),
        "bench" => bench::run(&rest),
        // The trace bench's generator of its real-trace file, run as a child
        // so that its memory does not count in the measured runs' peak RSS.
        "bench-generate-real-trace" => bench::generate_real_trace(&rest),
        // The distributed bench's artifact set, likewise.
        "bench-generate-artifact-set" => bench::generate_artifact_set(&rest),
        "gpu-check" => gpu_check::run(&rest),
        "fuzz" => fuzz::run(&rest),
        "dist" => dist::run(&rest),
        "wheel-check" => dist::wheel_check(&rest),
        "python" => {
            println!("{}", python::ensure_venv()?.display());
            Ok(())
        }
        "python-hta" => {
            println!("{}", python::ensure_hta_venv()?.display());
            Ok(())
        }
        _ => {
            eprintln!(
                "usage: cargo xtask <test|bench|python|python-hta|gpu-check|fuzz|dist|boundaries> [args]"
            );
            std::process::exit(2);
        }
    }
}

/// The workspace root (the parent of this crate's folder).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}
