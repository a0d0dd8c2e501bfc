//! `tally breakdown FILE...`: the overlap breakdown of one run's GPU time
//! (tally-gpu-time's `breakdown`): per device clock, busy time per category
//! and their intersections, exposed communication, kernels, idle time by
//! cause and launch latency; per stream, and per iteration with `--by
//! iteration`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tally_gpu_time::breakdown::{Breakdown, BreakdownOptions, DeviceBreakdown, breakdown};
use tally_gpu_time::category::{Category, CategoryRules};
use tally_resolve::StreamedRun;

use super::Layout;
use super::account::{Purpose, ratio, readable_ns, resolve_files, table::table};

/// What `--by` splits the device rows by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// One row per iteration (activities linked to a known iteration).
    Iteration,
}

const JSON_HELP: &str = "\
JSON (--format json): one object {run_id, category_patterns, devices}; each
entry of `devices` is one device clock with at least
  device_uuid, clock_domain, clock_kind,
  busy_ns                    union of every interval (the accounting's busy time),
  summed_ns, count,
  categories                 {compute, communication, memory, other}, each
                             {busy_ns, summed_ns, count},
  overlap_ns                 {\"communication&compute\", \"memory&compute\",
                             \"communication&memory\"}: intersections,
  exposed_communication_ns   communication with no compute running,
  exposed_memory_ns,
  memory                     per memcpy_htod/dtoh/dtod/ptop/unspecified, memset, other,
  envelope_start_ns, envelope_end_ns,
  idle                       {envelope_ns, idle_ns, gap_count, longest_gap_ns,
                             launch_queued_ns, sync_wait_ns, unknown_ns, host_bound_ns},
  launch_latency             {linked, unlinked, min_ns, median_ns, p90_ns, p99_ns,
                             max_ns, summed_ns, clock_uncertainty_ns},
  kernels                    every kernel [{name, category, count, summed_ns, busy_ns,
                             share_of_busy, min_ns, median_ns, max_ns}], by summed_ns
                             descending,
  streams                    [{stream_id, busy_ns, summed_ns, count, categories,
                             overlap_ns, exposed_communication_ns, exposed_memory_ns,
                             envelope_start_ns, envelope_end_ns}],
  iterations                 with --by iteration, the same per iteration_ref
                             (without the envelope).
Times are integer nanoseconds. Keys are never renamed; more may be added.

Categories: communication (kernel name starting with nccl/rccl, any case, or an
activity kind marked communication/collective), memory (memcpy, memset kinds),
compute (other kernels), other; --category-pattern rules come first. See
docs/breakdown.md.";

/// Arguments of `tally breakdown`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = JSON_HELP)]
pub struct Args {
    /// Artifacts or profiler traces of one run, or partials of it
    /// (`tally partial`), as `tally account` takes them (traces are
    /// imported with one record per kernel, copy or memset, so each kernel
    /// keeps its name: make partials of traces with `--per-kernel`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Layout::Table)]
    pub format: Layout,
    /// Kernels shown per device in the table (JSON lists every kernel).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Also break each device down per iteration.
    #[arg(long, value_enum)]
    pub by: Option<By>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// How `tally breakdown` and `tally diff` read and classify a run.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// `CATEGORY=GLOB` (repeatable): activities whose name (or kind, when
    /// unnamed) matches the glob (`*`, `?`, any case) get that category
    /// (compute, communication, memory, other), before the built-in rule;
    /// the first matching pattern wins (`tally diff` applies them to both
    /// runs).
    #[arg(long = "category-pattern", value_name = "CATEGORY=GLOB")]
    pub category_patterns: Vec<String>,
    #[command(flatten)]
    pub input: super::partial::RunInputArgs,
}

impl RunArgs {
    /// The breakdown options the flags ask for, or the flag at fault.
    pub(crate) fn options(&self, by_iteration: bool) -> Result<BreakdownOptions, String> {
        let rules = self.category_patterns.iter().try_fold(CategoryRules::new(), |rules, text| {
            rules.with_pattern_text(text).map_err(|error| format!("--category-pattern: {error}"))
        })?;
        Ok(BreakdownOptions { rules, by_iteration })
    }
}

/// Reads and resolves one run and breaks it down; the error is ready to
/// print (`FILE: line N: reason`, or the flag at fault).
pub(crate) fn run_breakdown(
    files: &[PathBuf],
    run: &RunArgs,
    options: &BreakdownOptions,
) -> Result<Breakdown, String> {
    read_run(files, run, |resolved| breakdown(resolved, options))
}

/// Reads and resolves one run as the breakdown reads it, and hands it to
/// `measure` (`tally report` takes the breakdown with its timelines).
pub(crate) fn read_run<T>(
    files: &[PathBuf],
    run: &RunArgs,
    measure: impl FnOnce(&StreamedRun) -> T,
) -> Result<T, String> {
    let (trace, limits) = (&run.input.trace, &run.input.limits);
    let mut trace = trace.clone();
    // The kernel table needs each kernel's own name.
    trace.per_kernel = true;
    // Names and launch correlations classify work and link launches.
    let run = resolve_files(files, &trace, limits, &run.input.partials, Purpose::Breakdown)?;
    let result = measure(&run);
    // The process ends soon; the OS takes the memory back at once.
    std::mem::forget(run);
    Ok(result)
}

/// Runs the command: exit 0 with the breakdown, 1 when an input is rejected
/// (the reason on stderr, nothing on stdout).
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let options = match args.run.options(args.by == Some(By::Iteration)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("tally: error: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    let result = match run_breakdown(&args.files, &args.run, &options) {
        Ok(result) => result,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    super::output::write_report(&result, args.format == Layout::Json, |out| {
        write_table(out, &result, args.top)
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn ns(value: u64) -> String {
    readable_ns(u128::from(value))
}

fn percent(part: u64, whole: u64) -> String {
    ratio(u128::from(part) * 100, whole).map_or_else(|| "-".into(), |value| format!("{value}%"))
}

fn write_table(out: &mut impl Write, result: &Breakdown, top: usize) -> std::io::Result<()> {
    writeln!(out, "run {}", result.run_id.as_deref().unwrap_or("(no correlation events)"))?;
    if !result.category_patterns.is_empty() {
        writeln!(out, "  category patterns: {}", result.category_patterns.join(", "))?;
    }
    if result.devices.is_empty() {
        return writeln!(out, "\nno measured GPU activity");
    }
    for (index, device) in result.devices.iter().enumerate() {
        writeln!(out)?;
        device_table(out, index + 1, device, top)?;
    }
    Ok(())
}

fn device_table(
    out: &mut impl Write,
    number: usize,
    device: &DeviceBreakdown,
    top: usize,
) -> std::io::Result<()> {
    writeln!(out, "device {number}: {} {} ({})", device.device_uuid, device.clock_domain, device.clock_kind)?;
    writeln!(
        out,
        "  busy {} of a {} envelope; {} activities, summed {}",
        ns(device.busy_ns),
        ns(device.idle.envelope_ns),
        device.count,
        readable_ns(device.summed_ns)
    )?;
    let busy = device.busy_ns;
    let rows: Vec<Vec<String>> = Category::ALL
        .into_iter()
        .map(|category| {
            let time = device.categories.get(category);
            vec![
                category.as_str().to_owned(),
                ns(time.busy_ns),
                percent(time.busy_ns, busy),
                readable_ns(time.summed_ns),
                time.count.to_string(),
            ]
        })
        .collect();
    table(out, &["category", "busy", "of busy", "summed", "count"], &rows)?;
    let overlap = &device.overlap_ns;
    let communication = device.categories.communication.busy_ns;
    writeln!(
        out,
        "  communication: {} overlapped by compute ({}), {} exposed; memory ∩ compute {}; communication ∩ memory {}",
        ns(overlap.communication_compute),
        percent(overlap.communication_compute, communication),
        ns(device.exposed_communication_ns),
        ns(overlap.memory_compute),
        ns(overlap.communication_memory)
    )?;
    let idle = &device.idle;
    writeln!(
        out,
        "  idle {} in {} gaps (longest {}): launch queued {}, sync wait {}, host-bound {}, unknown {}",
        ns(idle.idle_ns),
        idle.gap_count,
        ns(idle.longest_gap_ns),
        ns(idle.launch_queued_ns),
        ns(idle.sync_wait_ns),
        ns(idle.host_bound_ns),
        ns(idle.unknown_ns)
    )?;
    let latency = &device.launch_latency;
    let signed = |value: Option<i64>| match value {
        Some(value) if value < 0 => format!("-{}", readable_ns(u128::from(value.unsigned_abs()))),
        Some(value) => readable_ns(u128::from(value.unsigned_abs())),
        None => "-".into(),
    };
    if latency.linked > 0 {
        writeln!(
            out,
            "  launch latency ({} linked, {} not): min {}, median {}, p90 {}, p99 {}, max {} (clocks ± {})",
            latency.linked,
            latency.unlinked,
            signed(latency.min_ns),
            signed(latency.median_ns),
            signed(latency.p90_ns),
            signed(latency.p99_ns),
            signed(latency.max_ns),
            ns(latency.clock_uncertainty_ns)
        )?;
    } else {
        writeln!(
            out,
            "  launch latency: no activity links to a launch call ({} activities)",
            latency.unlinked
        )?;
    }
    let shown: Vec<Vec<String>> = device
        .kernels
        .iter()
        .take(top)
        .map(|kernel| {
            vec![
                shorten(&kernel.name),
                kernel.category.as_str().to_owned(),
                kernel.count.to_string(),
                readable_ns(kernel.summed_ns),
                ns(kernel.busy_ns),
                percent(kernel.busy_ns, busy),
                ns(kernel.median_ns),
                ns(kernel.max_ns),
            ]
        })
        .collect();
    if !shown.is_empty() {
        writeln!(out, "  top {} of {} kernels by summed time", shown.len(), device.kernels.len())?;
        table(out, &["kernel", "category", "count", "summed", "busy", "of busy", "median", "max"], &shown)?;
    }
    if device.streams.len() > 1 {
        let rows: Vec<Vec<String>> = device
            .streams
            .iter()
            .map(|stream| {
                vec![
                    stream.stream_id.to_string(),
                    ns(stream.busy_ns),
                    ns(stream.categories.compute.busy_ns),
                    ns(stream.categories.communication.busy_ns),
                    ns(stream.categories.memory.busy_ns),
                    ns(stream.exposed_communication_ns),
                ]
            })
            .collect();
        table(out, &["stream", "busy", "compute", "communication", "memory", "exposed comm."], &rows)?;
    }
    if let Some(iterations) = &device.iterations {
        let rows: Vec<Vec<String>> = iterations
            .iter()
            .map(|row| {
                vec![
                    row.iteration_ref.id().to_owned(),
                    ns(row.busy_ns),
                    ns(row.categories.compute.busy_ns),
                    ns(row.categories.communication.busy_ns),
                    ns(row.overlap_ns.communication_compute),
                    ns(row.exposed_communication_ns),
                ]
            })
            .collect();
        table(out, &["iteration", "busy", "compute", "communication", "overlapped", "exposed comm."], &rows)?;
    }
    Ok(())
}

/// Kernel names run to hundreds of characters (C++ templates).
pub(crate) fn shorten(name: &str) -> String {
    const WIDTH: usize = 60;
    if name.chars().count() <= WIDTH {
        return name.to_owned();
    }
    let head: String = name.chars().take(WIDTH - 1).collect();
    format!("{head}…")
}
