//! The `tally` command: a thin dispatcher; each subcommand lives in its own
//! module under `cmd/`.

mod cmd;

// Decoding an artifact makes and frees millions of small strings and maps on
// several threads at once; mimalloc does that markedly faster than glibc's
// allocator (measured: see the artifact benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h (the same number in mimalloc 2 and
/// 3): the Rust bindings name no option, "for stability reasons".
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps freed memory before giving it back to the
/// system, by command (its default is a second).
///
/// Most commands give it back at once: a run frees hundreds of megabytes of
/// growing tables, read rows and transient buffers in pages that its next
/// allocations seldom land in again, so within that second they count in
/// the resident set: `tally breakdown` of the 501 MB bench trace peaked at
/// 197 MB with the default and 131 MB with no delay, in the same time (the
/// run makes a few hundred `madvise` calls in all).
///
/// `account` and `shares` keep it for a tenth of a second. Their tables
/// live to the end, and what they free (the decoders' buffers, the
/// resolver's indexes when it finishes) is what their accounting and
/// report allocate next: given back at once, it cost a `madvise` on the way
/// out and a page fault on the way back in, a tenth of the serial tail of
/// the 150 MB v4 bench artifact (best 152 -> 142 ms, 7 MB more at the
/// peak, 56 -> 63 MB).
fn purge_delay_ms(command: &Command) -> std::ffi::c_long {
    match command {
        Command::Account(_) | Command::Shares(_) => 100,
        _ => 0,
    }
}

/// Sets mimalloc's purge delay for `command` ([`purge_delay_ms`]); a
/// `MIMALLOC_PURGE_DELAY` in the environment, which mimalloc has read by
/// now, is left to have its say.
#[allow(unsafe_code, reason = "mimalloc's options have no safe wrapper")]
fn set_purge_delay(command: &Command) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    let delay = purge_delay_ms(command);
    // SAFETY: mi_option_set is not thread safe, and this runs in main before
    // the command starts any thread; the option is a plain integer in
    // milliseconds.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, delay) }
}

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
    /// Check a model of per-request shares of one iteration's GPU time
    /// against the measured budget.
    Shares(cmd::shares::Args),
    /// Differential testing of another accounting implementation against
    /// tally: the static corpus, then generated cases, each disagreement
    /// shrunk to a minimal case (see `tally conform --help`).
    Conform(cmd::conform::Args),
    /// Import profiler traces (PyTorch/Kineto Chrome-trace JSON, Nsight
    /// Systems SQLite) into one artifact.
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
    set_purge_delay(&cli.command);
    cmd::interrupt::install();
    let outcome = match cli.command {
        Command::Validate(args) => cmd::validate::run(&args),
        Command::Account(args) => cmd::account::run(&args),
        Command::Breakdown(args) => cmd::breakdown::run(&args),
        Command::Diff(args) => cmd::diff::run(&args),
        Command::Shares(args) => cmd::shares::run(&args),
        Command::Conform(args) => cmd::conform::run(&args),
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
            eprintln!("tally: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MI_OPTION_PURGE_DELAY;

    /// The number is mimalloc's and not the bindings', so check that it
    /// reads the purge delay: the test harness never runs `main`, so the
    /// option still has mimalloc 3's default of 1000 ms, which no other
    /// option has.
    #[test]
    #[allow(unsafe_code, reason = "mimalloc's options have no safe wrapper")]
    fn the_purge_delay_option_number_reads_the_purge_delay() {
        let expected: std::ffi::c_long =
            std::env::var("MIMALLOC_PURGE_DELAY").ok().and_then(|value| value.parse().ok()).unwrap_or(1000);
        // SAFETY: reading an option is a plain integer load; no test of this
        // binary sets options.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, expected);
    }
}
