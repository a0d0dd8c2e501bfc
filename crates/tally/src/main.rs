//! The `tally` command: a thin dispatcher; each subcommand lives in its own
//! module under `cmd/`.

mod cmd;

// Decoding an artifact makes and frees millions of small strings and maps on
// several threads at once; mimalloc does that markedly faster than glibc's
// allocator (measured: see the artifact benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// What ML inference really costs.
#[derive(Debug, Parser)]
#[command(name = "tally", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check an inference artifact (JSONL, schema 1-4, plain or gzip) and
    /// count its records per event type and schema version.
    Validate(cmd::validate::Args),
    /// Resolve the correlation evidence of one run (one artifact or every
    /// rank's) and account its GPU time: summed, busy and elapsed, per
    /// device clock and per iteration.
    Account(cmd::account::Args),
    /// Break one run's GPU time down by overlap: busy time per category
    /// (compute, communication, memory, other) and their intersections,
    /// exposed communication, kernels, idle time by cause, launch latency;
    /// per device clock, stream and (with `--by iteration`) iteration.
    Breakdown(cmd::breakdown::Args),
    /// Compare two runs' breakdowns: per device and category the change in
    /// busy and exposed time, and the kernels that appeared, disappeared or
    /// changed most.
    Diff(cmd::diff::Args),
    /// Write one self-contained HTML page of a run's breakdown (or, with
    /// `--compare A B`, of two runs compared): per device clock a headline,
    /// a timeline, category, idle and latency charts, streams and kernels,
    /// each with its table, and the breakdown's JSON embedded.
    Report(cmd::report::Args),
    /// Check a model of per-request shares of one iteration's GPU time
    /// against the measured budget.
    Shares(cmd::shares::Args),
    /// Differential testing of another accounting implementation against
    /// tally: the static corpus, then generated cases, each disagreement
    /// shrunk to a minimal case (see `tally conform --help`).
    Conform(cmd::conform::Args),
    /// Read some of a run's files (artifacts, traces, partials) into a
    /// partial result, which `account`, `breakdown`, `shares` and `diff`
    /// take beside the run's other files: the same output as of every file.
    Partial(cmd::partial::Args),
    /// Import profiler traces (PyTorch/Kineto Chrome-trace JSON, Nsight
    /// Systems SQLite, JAX/TensorFlow XPlane) into one artifact.
    Import(cmd::import::Args),
    /// Write a Chrome-trace JSON timeline (Perfetto) of an artifact or trace.
    Export(cmd::export::Args),
    /// Run a model (.onnx, TorchScript .pt) on synthetic inputs through the resource profiler
    /// and print its profile: latency, throughput, memory, model footprint.
    Profile(cmd::profile::Args),
    /// Combine worker-local resource profiles (shards, ranks) into one
    /// distributed profile, as vertebrae aggregates them.
    Aggregate(cmd::aggregate::Args),
    /// Show the CUDA driver and its devices (name, UUID, memory), or why
    /// there is no CUDA here; exits 0 either way.
    #[cfg(feature = "cuda")]
    CudaInfo(cmd::cuda_info::Args),
}

fn main() -> ExitCode {
    // Usage errors exit 2 from here (clap's default).
    let cli = Cli::parse();
    cmd::memory::give_back_at_once();
    cmd::interrupt::install();
    let outcome = match cli.command {
        Command::Validate(args) => cmd::validate::run(&args),
        Command::Account(args) => cmd::account::run(&args),
        Command::Breakdown(args) => cmd::breakdown::run(&args),
        Command::Diff(args) => cmd::diff::run(&args),
        Command::Report(args) => cmd::report::run(&args),
        Command::Shares(args) => cmd::shares::run(&args),
        Command::Conform(args) => cmd::conform::run(&args),
        Command::Partial(args) => cmd::partial::run(&args),
        Command::Import(args) => cmd::import::run(&args),
        Command::Export(args) => cmd::export::run(&args),
        Command::Profile(args) => cmd::profile::run(&args),
        Command::Aggregate(args) => cmd::aggregate::run(&args),
        #[cfg(feature = "cuda")]
        Command::CudaInfo(args) => cmd::cuda_info::run(&args),
    };
    match outcome {
        Ok(code) => code,
        // The reader of standard output went away (`| head`): nothing more
        // to say, and no one to say it to.
        Err(error) if cmd::output::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tally: error: {}", cmd::output::trace_message(format!("{error:#}")));
            ExitCode::FAILURE
        }
    }
}
