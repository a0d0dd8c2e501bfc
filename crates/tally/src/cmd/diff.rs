//! `tally diff A B`: two runs' breakdowns side by side (tally-gpu-time's
//! `diff`): per device clock and category the change in busy and exposed
//! time, and the kernels that appeared, disappeared or changed most.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tally_gpu_time::category::Category;
use tally_gpu_time::diff::{BreakdownDiff, Change, diff};

use super::Layout;
use super::account::{readable_ns, table::table};
use super::breakdown::{run_breakdown, shorten};

const JSON_HELP: &str = "\
JSON (--format json): {run_a, run_b, devices, unmatched_a, unmatched_b}; each
entry of `devices` pairs a device clock of A with one of B (`matched_by`:
clock, the same device_uuid/clock_domain/clock_kind, or position, in order)
with busy_ns, exposed_communication_ns, exposed_memory_ns,
overlapped_communication_ns, idle_ns and categories.{compute,communication,
memory,other}.{busy_ns,summed_ns}, each {a_ns, b_ns, change_ns, change_pct};
kernels_appeared and kernels_disappeared [{name, category, count, summed_ns}];
kernels_changed [{name, category, count_a, count_b, summed_ns, busy_ns}] by
the size of the change in summed time. Times are integer nanoseconds,
change_pct relative to A (null where A is 0).";

/// Arguments of `tally diff`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = JSON_HELP)]
pub struct Args {
    /// The first run: an artifact, a profiler trace or a partial of the run
    /// (`tally partial`).
    pub a: PathBuf,
    /// The second run.
    pub b: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Layout::Table)]
    pub format: Layout,
    /// Kernels shown per list in the table (JSON lists all).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub run: super::breakdown::RunArgs,
}

/// Runs the command: exit 0 with the comparison, 1 when an input is
/// rejected.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let options = match args.run.options(false) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("tally: error: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut results = Vec::with_capacity(2);
    for file in [&args.a, &args.b] {
        match run_breakdown(std::slice::from_ref(file), &args.run, &options) {
            Ok(result) => results.push(result),
            Err(message) => {
                eprintln!("{message}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    let compared = diff(&results[0], &results[1]);
    super::output::write_report(&compared, args.format == Layout::Json, |out| {
        write_table(out, &compared, args, args.top)
    })?;
    Ok(ExitCode::SUCCESS)
}

fn signed(value: i128) -> String {
    let text = readable_ns(value.unsigned_abs());
    if value < 0 { format!("-{text}") } else { format!("+{text}") }
}

fn cells(label: &str, change: &Change) -> Vec<String> {
    vec![
        label.to_owned(),
        readable_ns(change.a_ns),
        readable_ns(change.b_ns),
        signed(change.change_ns),
        change.change_pct.map_or_else(|| "-".into(), |pct| format!("{pct:+.1}%")),
    ]
}

fn write_table(
    out: &mut impl Write,
    compared: &BreakdownDiff,
    args: &Args,
    top: usize,
) -> std::io::Result<()> {
    writeln!(out, "A = {} (run {})", args.a.display(), compared.run_a.as_deref().unwrap_or("-"))?;
    writeln!(out, "B = {} (run {})", args.b.display(), compared.run_b.as_deref().unwrap_or("-"))?;
    for device in &compared.devices {
        writeln!(out)?;
        writeln!(out, "A {} {} ({})", device.a.device_uuid, device.a.clock_domain, device.a.clock_kind)?;
        writeln!(
            out,
            "B {} {} ({}), paired by {}",
            device.b.device_uuid, device.b.clock_domain, device.b.clock_kind, device.matched_by
        )?;
        let mut rows = vec![
            cells("busy", &device.busy_ns),
            cells("exposed communication", &device.exposed_communication_ns),
            cells("overlapped communication", &device.overlapped_communication_ns),
            cells("idle", &device.idle_ns),
        ];
        for category in Category::ALL {
            let change = match category {
                Category::Compute => &device.categories.compute,
                Category::Communication => &device.categories.communication,
                Category::Memory => &device.categories.memory,
                Category::Other => &device.categories.other,
            };
            rows.push(cells(&format!("{} busy", category.as_str()), &change.busy_ns));
        }
        table(out, &["", "A", "B", "change", "%"], &rows)?;
        let changed: Vec<Vec<String>> = device
            .kernels_changed
            .iter()
            .take(top)
            .map(|kernel| {
                let mut row = cells(&shorten(&kernel.name), &kernel.summed_ns);
                row.insert(1, format!("{}→{}", kernel.count_a, kernel.count_b));
                row
            })
            .collect();
        if !changed.is_empty() {
            writeln!(out, "  kernels changed most in summed time")?;
            table(out, &["kernel", "count", "A", "B", "change", "%"], &changed)?;
        }
        for (title, list) in
            [("appeared", &device.kernels_appeared), ("disappeared", &device.kernels_disappeared)]
        {
            if list.is_empty() {
                continue;
            }
            writeln!(out, "  {} kernels {title}", list.len())?;
            let rows: Vec<Vec<String>> = list
                .iter()
                .take(top)
                .map(|kernel| {
                    vec![shorten(&kernel.name), kernel.count.to_string(), readable_ns(kernel.summed_ns)]
                })
                .collect();
            table(out, &["kernel", "count", "summed"], &rows)?;
        }
    }
    for (side, list) in [("A", &compared.unmatched_a), ("B", &compared.unmatched_b)] {
        for clock in list {
            writeln!(
                out,
                "\nonly in {side}: {} {} ({})",
                clock.device_uuid, clock.clock_domain, clock.clock_kind
            )?;
        }
    }
    Ok(())
}
