//! `tally account` for people: per device clock the three figures in
//! readable units, the overlap factor and activity counts; a per-iteration
//! summary; what evidence could not be used, with a hint. All of it read
//! from the [`AccountingReport`] that `--format json` prints.

use std::io::{self, Write};

use tally_gpu_time::{AccountingReport, DeviceClock, DeviceDetailRow};
use tally_resolve::ReferenceKind;

use super::{ratio, readable_ns};

/// Writes the tables of `report`, which must carry its device detail
/// (`AccountingReport::of(.., true)`): the table shows it.
pub(crate) fn write(out: &mut impl Write, report: &AccountingReport) -> io::Result<()> {
    let counts = &report.counts;
    writeln!(out, "run {}", report.run_id.as_deref().unwrap_or("(no correlation events)"))?;
    writeln!(
        out,
        "  {} requests, {} iterations, {} stages, {} memberships, {} activities, {} clock alignments",
        counts.requests,
        counts.iterations,
        counts.stages,
        counts.memberships,
        counts.activities,
        counts.alignments
    )?;
    writeln!(out)?;
    let names = ClockNames::new(report);
    devices(out, report, &names)?;
    iterations(out, report, &names)?;
    evidence(out, report)
}

/// Beyond this width a device clock's full name (imported traces make names
/// of over 100 characters) would push every figure off the screen.
const LONGEST_INLINE_CLOCK_NAME: usize = 48;

/// What the tables call each device clock: its full name when every name is
/// short, else `device N` with the full names in a legend under the table.
struct ClockNames<'a> {
    full: Vec<(DeviceClock<'a>, String)>,
    numbered: bool,
}

impl<'a> ClockNames<'a> {
    fn new(report: &'a AccountingReport) -> Self {
        let full: Vec<(DeviceClock<'a>, String)> = report
            .device_totals
            .iter()
            .map(|total| {
                let clock = total.clock();
                (clock, format!("{} {} ({})", clock.device_uuid, clock.clock_domain, clock.clock_kind))
            })
            .collect();
        let numbered = full.iter().any(|(_, name)| name.chars().count() > LONGEST_INLINE_CLOCK_NAME);
        Self { full, numbered }
    }

    fn name(&self, clock: &DeviceClock<'_>) -> String {
        let Some(index) = self.full.iter().position(|(known, _)| known == clock) else {
            return format!("{} {} ({})", clock.device_uuid, clock.clock_domain, clock.clock_kind);
        };
        if self.numbered { format!("device {}", index + 1) } else { self.full[index].1.clone() }
    }

    fn legend(&self, out: &mut impl Write) -> io::Result<()> {
        if !self.numbered {
            return Ok(());
        }
        for (index, (_, name)) in self.full.iter().enumerate() {
            writeln!(out, "  device {} = {name}", index + 1)?;
        }
        Ok(())
    }
}

/// Left-aligned first column, right-aligned others.
pub(crate) fn table(out: &mut impl Write, header: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|cell| cell.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::from(" ");
        for (index, (cell, width)) in cells.zip(&widths).enumerate() {
            let pad = width - cell.chars().count();
            text.push(' ');
            if index == 0 {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            } else {
                text.push_str(&" ".repeat(pad + 1));
                text.push_str(cell);
            }
        }
        text.trim_end().to_owned()
    };
    writeln!(out, "{}", line(&mut header.iter().copied()))?;
    for row in rows {
        writeln!(out, "{}", line(&mut row.iter().map(String::as_str)))?;
    }
    Ok(())
}

fn devices(out: &mut impl Write, report: &AccountingReport, names: &ClockNames<'_>) -> io::Result<()> {
    if report.device_totals.is_empty() {
        writeln!(out, "GPU time: no measured GPU activity")?;
        return writeln!(out);
    }
    writeln!(out, "GPU time per device clock (summed counts overlaps twice; busy is their union)")?;
    // The report's detail has a row per device total, in the same order.
    debug_assert!(report.device_detail.is_some(), "the table's report is made with its detail");
    let details: &[DeviceDetailRow] = report.device_detail.as_deref().unwrap_or_default();
    let rows: Vec<Vec<String>> = report
        .device_totals
        .iter()
        .zip(details)
        .map(|(total, detail)| {
            vec![
                names.name(&total.clock()),
                readable_ns(total.summed_activity_ns),
                readable_ns(u128::from(total.busy_ns)),
                ratio(total.summed_activity_ns, total.busy_ns)
                    .map_or_else(|| "-".into(), |r| format!("{r}x")),
                total.activity_count.to_string(),
                detail.peak_concurrency.to_string(),
                format!("{} in {} gaps", readable_ns(u128::from(detail.idle_ns)), detail.idle_gap_count),
                readable_ns(u128::from(detail.longest_idle_gap_ns)),
            ]
        })
        .collect();
    table(
        out,
        &[
            "device clock",
            "summed",
            "busy",
            "overlap",
            "activities",
            "peak",
            "idle in envelope",
            "longest gap",
        ],
        &rows,
    )?;
    names.legend(out)?;
    let streams: Vec<Vec<String>> = report
        .device_totals
        .iter()
        .zip(details)
        .flat_map(|(total, detail)| {
            detail.streams.iter().map(move |stream| {
                vec![
                    names.name(&total.clock()),
                    stream.stream_id.to_string(),
                    readable_ns(stream.summed_activity_ns),
                    readable_ns(u128::from(stream.busy_ns)),
                    stream.activity_count.to_string(),
                ]
            })
        })
        .collect();
    if !streams.is_empty() {
        writeln!(out)?;
        writeln!(out, "Busy time per stream (activities with a stream_id)")?;
        table(out, &["device clock", "stream", "summed", "busy", "activities"], &streams)?;
    }
    writeln!(out)
}

/// Nearest-rank percentiles of sorted values: p50, p90, p99, max.
fn percentiles(sorted: &[u64]) -> Vec<String> {
    [50usize, 90, 99, 100]
        .iter()
        .map(|&p| {
            let rank = (p * sorted.len()).div_ceil(100).max(1);
            readable_ns(u128::from(sorted[rank - 1]))
        })
        .collect()
}

fn iterations(out: &mut impl Write, report: &AccountingReport, names: &ClockNames<'_>) -> io::Result<()> {
    let total = report.iterations.len();
    let mut elapsed: Vec<u64> = report.iterations.iter().filter_map(|timing| timing.elapsed_ns).collect();
    let with_gpu = report.iterations.iter().filter(|timing| !timing.gpu.is_empty()).count();
    writeln!(
        out,
        "Iterations: {total} ({} with elapsed time on a monotonic clock, {with_gpu} with measured GPU time)",
        elapsed.len()
    )?;
    let mut rows = Vec::new();
    if !elapsed.is_empty() {
        elapsed.sort_unstable();
        let mut row = vec!["elapsed".to_owned(), elapsed.len().to_string()];
        row.extend(percentiles(&elapsed));
        rows.push(row);
    }
    for device in &report.device_totals {
        let clock = device.clock();
        let mut busy: Vec<u64> = report
            .iterations
            .iter()
            .filter_map(|timing| timing.gpu.iter().find(|time| time.clock() == clock))
            .map(|t| t.busy_ns)
            .collect();
        if busy.is_empty() {
            continue;
        }
        busy.sort_unstable();
        let mut row = vec![format!("busy on {}", names.name(&clock)), busy.len().to_string()];
        row.extend(percentiles(&busy));
        rows.push(row);
    }
    if !rows.is_empty() {
        table(out, &["per iteration", "count", "p50", "p90", "p99", "max"], &rows)?;
    }
    writeln!(out)
}

fn evidence(out: &mut impl Write, report: &AccountingReport) -> io::Result<()> {
    let unattributed = report.unattributed_activity_refs.len();
    let unmeasured = report.unmeasured_gpu_activity_refs.len();
    let unresolved = &report.unresolved;
    writeln!(out, "Evidence not counted in full")?;
    writeln!(out, "  unattributed activities:   {unattributed}")?;
    if unattributed > 0 {
        writeln!(
            out,
            "    hint: they have no iteration_ref; GPU ones count in device totals but in no iteration. \
             Link them when the producer knows the iteration (e.g. by correlation ID)."
        )?;
    }
    writeln!(out, "  unmeasured GPU activities: {unmeasured}")?;
    if unmeasured > 0 {
        writeln!(
            out,
            "    hint: a GPU activity is measured only with a device_uuid in its context, a monotonic or \
             device clock, and both start_ns and end_ns."
        )?;
    }
    let count = |kind| unresolved.iter().filter(|item| item.kind == kind).count();
    writeln!(
        out,
        "  unresolved references:     {} ({} request, {} attempt, {} iteration)",
        unresolved.len(),
        count(ReferenceKind::Request),
        count(ReferenceKind::Attempt),
        count(ReferenceKind::Iteration)
    )?;
    if !unresolved.is_empty() {
        writeln!(
            out,
            "    hint: memberships, stages or activities name entities no record reported; pass every \
             producer's (every rank's) artifact of the run, or see `--format json` for the list."
        )?;
    }
    Ok(())
}
