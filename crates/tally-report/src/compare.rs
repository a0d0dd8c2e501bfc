//! The page of two runs compared: per pair of device clocks both runs'
//! figures side by side, their timelines one above the other, and the
//! kernels that appeared, disappeared or changed most.

use std::fmt::Write as _;

use tally_gpu_time::breakdown::{Breakdown, DeviceBreakdown, DeviceTimeline};
use tally_gpu_time::diff::{BreakdownDiff, Change, ClockRef, DeviceDiff};

use crate::charts::{self, Bar, CATEGORY_NAMES, IDLE_NAMES};
use crate::html::{Cell, Table, escape, shorten};
use crate::run::left_out;
use crate::units::{readable_ns, signed_ns};
use crate::{NAME_CHARS, ReportOptions, legend, legend_labelled};

/// One run as the comparison page draws it: its breakdown and timelines.
#[derive(Debug, Clone, Copy)]
pub struct RunView<'a> {
    /// The run's breakdown.
    pub breakdown: &'a Breakdown,
    /// Its timelines, one per entry of `breakdown.devices`.
    pub timelines: &'a [DeviceTimeline],
}

impl<'a> RunView<'a> {
    fn find(&self, clock: &ClockRef) -> Option<(&'a DeviceBreakdown, Option<&'a DeviceTimeline>)> {
        let index = self.breakdown.devices.iter().position(|device| {
            device.device_uuid == clock.device_uuid
                && device.clock_domain == clock.clock_domain
                && device.clock_kind == clock.clock_kind
        })?;
        Some((&self.breakdown.devices[index], self.timelines.get(index)))
    }
}

fn clock_name(clock: &ClockRef) -> String {
    format!("{} · {} ({})", clock.device_uuid, clock.clock_domain, clock.clock_kind.as_str())
}

fn pct(change: &Change) -> String {
    change.change_pct.map_or_else(|| "-".to_owned(), |pct| format!("{pct:+.1}%"))
}

/// The cells of one [`Change`] at `pointer`: A, B, change, percent.
fn change_cells(pointer: &str, change: &Change) -> Vec<Cell> {
    vec![
        Cell::time(format!("{pointer}/a_ns"), change.a_ns),
        Cell::time(format!("{pointer}/b_ns"), change.b_ns),
        Cell::json(format!("{pointer}/change_ns"), &change.change_ns, signed_ns(change.change_ns, true)),
        match change.change_pct {
            Some(value) => Cell::json(format!("{pointer}/change_pct"), &value, pct(change)),
            None => Cell::json(format!("{pointer}/change_pct"), &serde_json::Value::Null, "-"),
        },
    ]
}

/// The body of the comparison page.
pub(crate) fn body(
    compared: &BreakdownDiff,
    runs: Option<(RunView<'_>, RunView<'_>)>,
    options: &ReportOptions,
) -> String {
    let mut html = format!(
        "<header><h1>{}</h1><p class=\"muted\">A = run <code>{}</code> · B = run <code>{}</code> · {} paired device clock{}</p>",
        escape(&options.title),
        escape(compared.run_a.as_deref().unwrap_or("-")),
        escape(compared.run_b.as_deref().unwrap_or("-")),
        compared.devices.len(),
        if compared.devices.len() == 1 { "" } else { "s" }
    );
    for source in &options.sources {
        let _ = write!(html, "<div class=\"muted\">{}</div>", escape(source));
    }
    html.push_str("</header>");
    let mut overview = Table::new(
        "overview",
        "Per pair of device clocks: busy and exposed communication in A and B",
        &[
            "device clock (A)",
            "busy A",
            "busy B",
            "change",
            "%",
            "exposed comm. A",
            "exposed comm. B",
            "change",
            "%",
        ],
        true,
    );
    for (index, device) in compared.devices.iter().enumerate() {
        let at = format!("/devices/{index}");
        let mut cells =
            vec![Cell::json(format!("{at}/a/device_uuid"), &device.a.device_uuid, clock_name(&device.a))];
        cells.extend(change_cells(&format!("{at}/busy_ns"), &device.busy_ns));
        cells.extend(change_cells(
            &format!("{at}/exposed_communication_ns"),
            &device.exposed_communication_ns,
        ));
        overview.row(Some(&at), cells);
    }
    html.push_str("<section class=\"overview\"><h2>Device clocks</h2><nav>");
    for (index, device) in compared.devices.iter().enumerate() {
        let _ = write!(html, "<a href=\"#device-{index}\">{}</a>", escape(&clock_name(&device.a)));
    }
    html.push_str("</nav>");
    html.push_str(&overview.finish());
    for (side, list) in [("A", &compared.unmatched_a), ("B", &compared.unmatched_b)] {
        for clock in list.iter() {
            let _ = write!(html, "<p class=\"muted\">Only in {side}: {}</p>", escape(&clock_name(clock)));
        }
    }
    html.push_str("</section>");
    let width = (options.timeline_budget / (2 * compared.devices.len()).max(1))
        .clamp(100, options.timeline_columns.max(1));
    for (index, device) in compared.devices.iter().enumerate() {
        html.push_str(&device_section(index, device, runs, options, width));
    }
    html
}

fn device_section(
    index: usize,
    device: &DeviceDiff,
    runs: Option<(RunView<'_>, RunView<'_>)>,
    options: &ReportOptions,
    width: usize,
) -> String {
    let at = format!("/devices/{index}");
    let mut html = format!(
        "<section class=\"device\" id=\"device-{index}\" data-key=\"{at}\"><h2>A {}</h2><p class=\"muted\">B {}, paired by \
         {}</p>",
        escape(&clock_name(&device.a)),
        escape(&clock_name(&device.b)),
        escape(&device.matched_by)
    );
    let categories = &device.categories;
    let figures: Vec<(String, String, &Change)> = vec![
        ("busy".into(), format!("{at}/busy_ns"), &device.busy_ns),
        (
            "exposed communication".into(),
            format!("{at}/exposed_communication_ns"),
            &device.exposed_communication_ns,
        ),
        (
            "overlapped communication".into(),
            format!("{at}/overlapped_communication_ns"),
            &device.overlapped_communication_ns,
        ),
        ("exposed memory".into(), format!("{at}/exposed_memory_ns"), &device.exposed_memory_ns),
        ("idle".into(), format!("{at}/idle_ns"), &device.idle_ns),
        ("compute busy".into(), format!("{at}/categories/compute/busy_ns"), &categories.compute.busy_ns),
        (
            "communication busy".into(),
            format!("{at}/categories/communication/busy_ns"),
            &categories.communication.busy_ns,
        ),
        ("memory busy".into(), format!("{at}/categories/memory/busy_ns"), &categories.memory.busy_ns),
        ("other busy".into(), format!("{at}/categories/other/busy_ns"), &categories.other.busy_ns),
        (
            "compute summed".into(),
            format!("{at}/categories/compute/summed_ns"),
            &categories.compute.summed_ns,
        ),
        (
            "communication summed".into(),
            format!("{at}/categories/communication/summed_ns"),
            &categories.communication.summed_ns,
        ),
        ("memory summed".into(), format!("{at}/categories/memory/summed_ns"), &categories.memory.summed_ns),
        ("other summed".into(), format!("{at}/categories/other/summed_ns"), &categories.other.summed_ns),
    ];
    let mut bars = Vec::new();
    let mut table = Table::new(
        "figures",
        "A and B per figure; change is B minus A, % relative to A",
        &["", "A", "B", "change", "%"],
        false,
    );
    for (row, (label, pointer, change)) in figures.iter().enumerate() {
        // The chart draws the busy figures (the first nine); the table has
        // the summed ones too.
        for (side, value, class) in [("A", change.a_ns, "run-a"), ("B", change.b_ns, "run-b")] {
            if row >= 9 {
                break;
            }
            bars.push(Bar {
                label: if side == "A" { label.clone() } else { String::new() },
                segments: vec![(value, class, format!("{label} in {side}: {}", readable_ns(value)))],
                note: format!("{side} {}", readable_ns(value)),
            });
        }
        let mut cells = vec![Cell::label(label.as_str())];
        cells.extend(change_cells(pointer, change));
        table.row(Some(pointer), cells);
    }
    let chart = format!(
        "{}{}",
        legend_labelled(&[("run-a", "A"), ("run-b", "B")]),
        charts::bars("A and B per figure", &bars, 0)
    );
    html.push_str("<h3>Side by side</h3>");
    let _ =
        write!(html, "<div class=\"chart-and-table\"><div>{chart}</div><div>{}</div></div>", table.finish());
    if let Some((a, b)) = runs {
        html.push_str("<h3>Timelines</h3>");
        let mut names: Vec<&str> = CATEGORY_NAMES.to_vec();
        names.extend(IDLE_NAMES);
        html.push_str(&legend(&names));
        for (side, run, clock) in [("A", a, &device.a), ("B", b, &device.b)] {
            let Some((row, timeline)) = run.find(clock) else { continue };
            let (Some(start), Some(end), Some(timeline)) =
                (row.envelope_start_ns, row.envelope_end_ns, timeline)
            else {
                continue;
            };
            let columns = charts::merge_columns(&timeline.columns, width);
            let _ = write!(
                html,
                "<p class=\"muted\">{side}: busy {} of a {} envelope</p>{}",
                readable_ns(u128::from(row.busy_ns)),
                readable_ns(u128::from(end - start)),
                charts::timeline(&columns, start, end)
            );
        }
    }
    html.push_str(&kernels(&at, device, options));
    html.push_str("</section>");
    html
}

fn kernels(at: &str, device: &DeviceDiff, options: &ReportOptions) -> String {
    let mut html = String::from("<h3>Kernels that changed most in summed time</h3>");
    let mut changed = Table::new(
        "kernels_changed",
        "Kernels of both runs, by the size of the change in summed time",
        &["kernel", "category", "count A", "count B", "summed A", "summed B", "change", "%"],
        true,
    );
    for (index, kernel) in device.kernels_changed.iter().enumerate().take(options.top_kernels) {
        let path = format!("{at}/kernels_changed/{index}");
        let mut cells = vec![
            Cell::json(format!("{path}/name"), &kernel.name, shorten(&kernel.name, NAME_CHARS)),
            Cell::json(format!("{path}/category"), &kernel.category, kernel.category.as_str()),
            Cell::count(format!("{path}/count_a"), kernel.count_a),
            Cell::count(format!("{path}/count_b"), kernel.count_b),
        ];
        cells.extend(change_cells(&format!("{path}/summed_ns"), &kernel.summed_ns));
        changed.row(Some(&path), cells);
    }
    html.push_str(&changed.finish());
    html.push_str(&left_out(device.kernels_changed.len(), options.top_kernels, "kernels"));
    for (key, title, list) in [
        ("kernels_appeared", "Kernels that appeared (only in B)", &device.kernels_appeared),
        ("kernels_disappeared", "Kernels that disappeared (only in A)", &device.kernels_disappeared),
    ] {
        let _ = write!(html, "<h3>{title}</h3>");
        if list.is_empty() {
            html.push_str("<p class=\"muted\">None.</p>");
            continue;
        }
        let mut table = Table::new(key, title, &["kernel", "category", "count", "summed"], true);
        for (index, kernel) in list.iter().enumerate().take(options.top_kernels) {
            let path = format!("{at}/{key}/{index}");
            table.row(
                Some(&path),
                vec![
                    Cell::json(format!("{path}/name"), &kernel.name, shorten(&kernel.name, NAME_CHARS)),
                    Cell::json(format!("{path}/category"), &kernel.category, kernel.category.as_str()),
                    Cell::count(format!("{path}/count"), kernel.count),
                    Cell::time(format!("{path}/summed_ns"), kernel.summed_ns),
                ],
            );
        }
        html.push_str(&table.finish());
        html.push_str(&left_out(list.len(), options.top_kernels, "kernels"));
    }
    html
}
