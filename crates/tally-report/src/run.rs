//! The page of one run: per device clock the headline, then the timeline,
//! categories and overlaps, idle causes, launch latency, streams,
//! iterations and kernels, each chart beside its table.

use std::fmt::Write as _;

use tally_gpu_time::breakdown::{Breakdown, DeviceBreakdown, DeviceTimeline};
use tally_gpu_time::category::Category;

use crate::charts::{self, Bar, CATEGORY_NAMES, IDLE_NAMES};
use crate::html::{Cell, Table, escape, shorten};
use crate::units::{percent, readable_ns};
use crate::{NAME_CHARS, ReportOptions, legend, legend_labelled};

/// The body of one run's page (everything but the embedded data).
pub(crate) fn body(result: &Breakdown, timelines: &[DeviceTimeline], options: &ReportOptions) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<header><h1>{}</h1><p class=\"muted\">run <code>{}</code> · {} device clock{}{}</p>",
        escape(&options.title),
        escape(result.run_id.as_deref().unwrap_or("(no correlation events)")),
        result.devices.len(),
        if result.devices.len() == 1 { "" } else { "s" },
        if result.category_patterns.is_empty() {
            String::new()
        } else {
            format!(" · category patterns: {}", escape(&result.category_patterns.join(", ")))
        }
    );
    for source in &options.sources {
        let _ = write!(html, "<div class=\"muted\">{}</div>", escape(source));
    }
    html.push_str("</header>");
    if result.devices.is_empty() {
        html.push_str("<p>No measured GPU activity.</p>");
        return html;
    }
    html.push_str(&overview(result));
    // Many device clocks share the page: fewer columns each keeps it small.
    let width =
        (options.timeline_budget / result.devices.len().max(1)).clamp(100, options.timeline_columns.max(1));
    for (index, device) in result.devices.iter().enumerate() {
        let timeline = timelines.get(index);
        html.push_str(&device_section(index, device, timeline, options, width));
    }
    html
}

/// The answer first: every device clock's headline in one table.
fn overview(result: &Breakdown) -> String {
    let mut table = Table::new(
        "overview",
        "Per device clock: busy (the union of its work), summed, idle inside the busy envelope, exposed communication",
        &["device clock", "busy", "summed", "envelope", "idle", "exposed communication", "activities"],
        true,
    );
    for (index, device) in result.devices.iter().enumerate() {
        let at = format!("/devices/{index}");
        table.row(
            Some(&at),
            vec![
                Cell::json(
                    format!("{at}/device_uuid"),
                    &device.device_uuid,
                    format!("{index}: {}", device_name(device)),
                ),
                Cell::time(format!("{at}/busy_ns"), device.busy_ns),
                Cell::time(format!("{at}/summed_ns"), device.summed_ns),
                Cell::time(format!("{at}/idle/envelope_ns"), device.idle.envelope_ns),
                Cell::time(format!("{at}/idle/idle_ns"), device.idle.idle_ns),
                Cell::time(format!("{at}/exposed_communication_ns"), device.exposed_communication_ns),
                Cell::count(format!("{at}/count"), device.count),
            ],
        );
    }
    let mut html = String::from("<section class=\"overview\"><h2>Device clocks</h2>");
    // A few device clocks are linked by name; many are told apart by
    // their busy time first (a column each, numbered as their sections).
    if result.devices.len() <= 12 {
        html.push_str("<nav>");
        for (index, device) in result.devices.iter().enumerate() {
            let _ = write!(html, "<a href=\"#device-{index}\">{}</a>", escape(&device_name(device)));
        }
        html.push_str("</nav>");
    }
    if result.devices.len() > 1 {
        let entries: Vec<(u128, &'static str, String, String)> = result
            .devices
            .iter()
            .enumerate()
            .map(|(index, device)| {
                let busy = u128::from(device.busy_ns);
                let title = format!(
                    "{index}: {}: busy {} of a {} envelope",
                    device_name(device),
                    readable_ns(busy),
                    readable_ns(u128::from(device.idle.envelope_ns))
                );
                (busy, "compute", index.to_string(), title)
            })
            .collect();
        let tallest = result.devices.iter().map(|device| device.busy_ns).max().unwrap_or(0);
        html.push_str(&charts::columns(
            "busy time per device clock",
            &entries,
            result.devices.len() <= 40,
            &format!("busy {}", readable_ns(u128::from(tallest))),
        ));
    }
    html.push_str(&table.finish());
    html.push_str("</section>");
    html
}

/// A device clock as the page names it.
pub(crate) fn device_name(device: &DeviceBreakdown) -> String {
    format!("{} · {} ({})", device.device_uuid, device.clock_domain, device.clock_kind.as_str())
}

fn figure(label: &str, value: &str, note: &str) -> String {
    format!(
        "<div class=\"figure\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"muted\">{}</div></div>",
        escape(label),
        escape(value),
        escape(note)
    )
}

fn pair(chart: String, table: String) -> String {
    format!("<div class=\"chart-and-table\"><div>{chart}</div><div>{table}</div></div>")
}

fn device_section(
    index: usize,
    device: &DeviceBreakdown,
    timeline: Option<&DeviceTimeline>,
    options: &ReportOptions,
    width: usize,
) -> String {
    let at = format!("/devices/{index}");
    let envelope = u128::from(device.idle.envelope_ns);
    let busy = u128::from(device.busy_ns);
    let communication = u128::from(device.categories.communication.busy_ns);
    let mut html = format!(
        "<section class=\"device\" id=\"device-{index}\" data-key=\"{at}\"><h2>{index}: {}</h2><div class=\"headline\">",
        escape(&device_name(device))
    );
    html.push_str(&figure(
        "busy",
        &readable_ns(busy),
        &format!("{} of the envelope", percent(busy, envelope)),
    ));
    html.push_str(&figure("summed", &readable_ns(device.summed_ns), &format!("{} activities", device.count)));
    html.push_str(&figure(
        "idle in the envelope",
        &readable_ns(u128::from(device.idle.idle_ns)),
        &format!(
            "{} gaps, longest {}",
            device.idle.gap_count,
            readable_ns(u128::from(device.idle.longest_gap_ns))
        ),
    ));
    html.push_str(&figure(
        "exposed communication",
        &readable_ns(u128::from(device.exposed_communication_ns)),
        &format!("{} of communication", percent(u128::from(device.exposed_communication_ns), communication)),
    ));
    html.push_str("</div>");

    html.push_str(&timeline_part(&at, device, timeline, width));
    html.push_str(&categories_part(&at, device));
    html.push_str(&idle_part(&at, device));
    html.push_str(&latency_part(&at, device, timeline));
    html.push_str(&streams_part(&at, device));
    html.push_str(&iterations_part(&at, device, options));
    html.push_str(&kernels_part(&at, device, options));
    html.push_str("</section>");
    html
}

fn timeline_part(
    at: &str,
    device: &DeviceBreakdown,
    timeline: Option<&DeviceTimeline>,
    width: usize,
) -> String {
    let mut html = String::from("<h3>Timeline of the busy envelope</h3>");
    let (Some(start), Some(end)) = (device.envelope_start_ns, device.envelope_end_ns) else {
        html.push_str("<p class=\"muted\">No busy interval.</p>");
        return html;
    };
    let mut names: Vec<&str> = CATEGORY_NAMES.to_vec();
    names.extend(IDLE_NAMES);
    html.push_str(&legend(&names));
    let chart = match timeline.filter(|timeline| !timeline.columns.is_empty()) {
        Some(timeline) => {
            let columns = charts::merge_columns(&timeline.columns, width);
            format!(
                "{}<p class=\"muted\">{} columns of {} each from the exact intervals: a lane's height in a column is \
                 the share of it that category kept busy (idle: stacked by cause). Clock {} ns to {} ns.</p>",
                charts::timeline(&columns, start, end),
                columns.len(),
                readable_ns(u128::from(end - start).div_ceil(columns.len().max(1) as u128)),
                start,
                end
            )
        }
        None => "<p class=\"muted\">No timeline was computed for this breakdown.</p>".to_owned(),
    };
    let mut table = Table::new(
        "timeline",
        "Over the envelope: busy per category and idle by cause",
        &["", "time", "of envelope"],
        false,
    );
    let envelope = u128::from(device.idle.envelope_ns);
    table.row(
        None,
        vec![
            Cell::label("envelope start"),
            Cell::json(format!("{at}/envelope_start_ns"), &start, format!("{start} ns")),
            Cell::label(""),
        ],
    );
    table.row(
        None,
        vec![
            Cell::label("envelope end"),
            Cell::json(format!("{at}/envelope_end_ns"), &end, format!("{end} ns")),
            Cell::label(""),
        ],
    );
    for category in Category::ALL {
        let name = category.as_str();
        let busy = device.categories.get(category).busy_ns;
        table.row(
            None,
            vec![
                Cell::label(format!("{name} busy")),
                Cell::time(format!("{at}/categories/{name}/busy_ns"), busy),
                Cell::derived(percent(u128::from(busy), envelope), busy),
            ],
        );
    }
    let idle = &device.idle;
    for (name, value) in idle_causes(device) {
        table.row(
            None,
            vec![
                Cell::label(format!("idle: {}", name.replace('_', " "))),
                Cell::time(format!("{at}/idle/{name}_ns"), value),
                Cell::derived(percent(u128::from(value), envelope), value),
            ],
        );
    }
    table.row(
        None,
        vec![
            Cell::label("idle"),
            Cell::time(format!("{at}/idle/idle_ns"), idle.idle_ns),
            Cell::derived(percent(u128::from(idle.idle_ns), envelope), idle.idle_ns),
        ],
    );
    // The timeline takes the page's width: its columns are pixels.
    html.push_str(&chart);
    html.push_str(&table.finish());
    html
}

fn idle_causes(device: &DeviceBreakdown) -> [(&'static str, u64); 4] {
    let idle = &device.idle;
    [
        ("launch_queued", idle.launch_queued_ns),
        ("sync_wait", idle.sync_wait_ns),
        ("unknown", idle.unknown_ns),
        ("host_bound", idle.host_bound_ns),
    ]
}

fn categories_part(at: &str, device: &DeviceBreakdown) -> String {
    let busy = u128::from(device.busy_ns);
    let mut bars = Vec::new();
    for category in Category::ALL {
        let name = category.as_str();
        let time = u128::from(device.categories.get(category).busy_ns);
        let segments = if category == Category::Communication {
            let overlapped = u128::from(device.overlap_ns.communication_compute);
            let exposed = u128::from(device.exposed_communication_ns);
            // Communication's busy time is exactly exposed plus overlapped.
            vec![
                (exposed, "communication", format!("exposed communication {}", readable_ns(exposed))),
                (
                    overlapped,
                    "overlapped",
                    format!("communication overlapped by compute {}", readable_ns(overlapped)),
                ),
            ]
        } else {
            vec![(time, name, format!("{name} busy {}", readable_ns(time)))]
        };
        bars.push(Bar {
            label: name.to_owned(),
            segments,
            note: format!("{} ({} of busy)", readable_ns(time), percent(time, busy)),
        });
    }
    let chart = format!(
        "{}{}",
        legend_labelled(&[
            ("compute", "compute"),
            ("communication", "exposed communication"),
            ("overlapped", "communication overlapped by compute"),
            ("memory", "memory"),
            ("other", "other"),
        ]),
        charts::bars("busy time per category", &bars, 0)
    );
    let mut table = Table::new(
        "categories",
        "Per category: busy (union), summed, activities",
        &["category", "busy", "of busy", "summed", "count"],
        true,
    );
    for category in Category::ALL {
        let name = category.as_str();
        let time = device.categories.get(category);
        let path = format!("{at}/categories/{name}");
        table.row(
            Some(&path),
            vec![
                Cell::label(name),
                Cell::time(format!("{path}/busy_ns"), time.busy_ns),
                Cell::derived(percent(u128::from(time.busy_ns), busy), time.busy_ns),
                Cell::time(format!("{path}/summed_ns"), time.summed_ns),
                Cell::count(format!("{path}/count"), time.count),
            ],
        );
    }
    let mut overlaps =
        Table::new("overlaps", "Overlaps (intersections) and exposed time", &["", "time"], false);
    let overlap = &device.overlap_ns;
    for (label, key, value) in [
        (
            "communication ∩ compute (overlapped)",
            "overlap_ns/communication&compute",
            overlap.communication_compute,
        ),
        ("memory ∩ compute", "overlap_ns/memory&compute", overlap.memory_compute),
        ("communication ∩ memory", "overlap_ns/communication&memory", overlap.communication_memory),
        ("exposed communication", "exposed_communication_ns", device.exposed_communication_ns),
        ("exposed memory", "exposed_memory_ns", device.exposed_memory_ns),
    ] {
        table_row_time(&mut overlaps, label, &format!("{at}/{key}"), value);
    }
    let mut memory = Table::new(
        "memory",
        "Memory time per copy direction and set",
        &["kind", "busy", "summed", "count"],
        true,
    );
    let kinds = &device.memory;
    for (name, time) in [
        ("memcpy_htod", &kinds.memcpy_htod),
        ("memcpy_dtoh", &kinds.memcpy_dtoh),
        ("memcpy_dtod", &kinds.memcpy_dtod),
        ("memcpy_ptop", &kinds.memcpy_ptop),
        ("memcpy_unspecified", &kinds.memcpy_unspecified),
        ("memset", &kinds.memset),
        ("other", &kinds.other),
    ] {
        if time.count == 0 {
            continue;
        }
        let path = format!("{at}/memory/{name}");
        memory.row(
            Some(&path),
            vec![
                Cell::label(name),
                Cell::time(format!("{path}/busy_ns"), time.busy_ns),
                Cell::time(format!("{path}/summed_ns"), time.summed_ns),
                Cell::count(format!("{path}/count"), time.count),
            ],
        );
    }
    let tables = format!("{}{}{}", table.finish(), overlaps.finish(), memory.finish());
    format!("<h3>Categories and overlaps</h3>{}", pair(chart, tables))
}

fn table_row_time(table: &mut Table, label: &str, pointer: &str, value: u64) {
    table.row(None, vec![Cell::label(label), Cell::time(pointer, value)]);
}

fn idle_part(at: &str, device: &DeviceBreakdown) -> String {
    let idle = &device.idle;
    let bars: Vec<Bar> = idle_causes(device)
        .into_iter()
        .map(|(name, value)| {
            let value = u128::from(value);
            Bar {
                label: name.replace('_', " "),
                segments: vec![(value, name, format!("{} {}", name.replace('_', " "), readable_ns(value)))],
                note: format!(
                    "{} ({} of idle)",
                    readable_ns(value),
                    percent(value, u128::from(idle.idle_ns))
                ),
            }
        })
        .collect();
    let chart = charts::bars("idle time by cause", &bars, 0);
    let mut table = Table::new(
        "idle",
        "Idle time inside the envelope, by cause (first that holds)",
        &["", "time"],
        false,
    );
    for (name, value) in idle_causes(device) {
        table_row_time(&mut table, &name.replace('_', " "), &format!("{at}/idle/{name}_ns"), value);
    }
    table_row_time(&mut table, "idle", &format!("{at}/idle/idle_ns"), idle.idle_ns);
    table_row_time(&mut table, "longest gap", &format!("{at}/idle/longest_gap_ns"), idle.longest_gap_ns);
    table.row(None, vec![Cell::label("gaps"), Cell::count(format!("{at}/idle/gap_count"), idle.gap_count)]);
    format!("<h3>Idle time by cause</h3>{}", pair(chart, table.finish()))
}

fn signed_cell(pointer: String, value: Option<i64>) -> Cell {
    match value {
        Some(value) => Cell::json(pointer, &value, crate::units::signed_ns(i128::from(value), false)),
        None => Cell::json(pointer, &serde_json::Value::Null, "-"),
    }
}

fn latency_part(at: &str, device: &DeviceBreakdown, timeline: Option<&DeviceTimeline>) -> String {
    let latency = &device.launch_latency;
    let path = format!("{at}/launch_latency");
    let mut summary = Table::new(
        "launch_latency",
        "Launch call start to work start (nearest-rank percentiles)",
        &["", "value"],
        false,
    );
    summary.row(
        None,
        vec![Cell::label("linked activities"), Cell::count(format!("{path}/linked"), latency.linked)],
    );
    summary
        .row(None, vec![Cell::label("unlinked"), Cell::count(format!("{path}/unlinked"), latency.unlinked)]);
    for (label, key, value) in [
        ("min", "min_ns", latency.min_ns),
        ("median", "median_ns", latency.median_ns),
        ("p90", "p90_ns", latency.p90_ns),
        ("p99", "p99_ns", latency.p99_ns),
        ("max", "max_ns", latency.max_ns),
    ] {
        summary.row(None, vec![Cell::label(label), signed_cell(format!("{path}/{key}"), value)]);
    }
    summary.row(
        None,
        vec![
            Cell::label("clock uncertainty"),
            Cell::time(format!("{path}/clock_uncertainty_ns"), latency.clock_uncertainty_ns),
        ],
    );
    let bins = timeline.map(|timeline| &timeline.latency_bins[..]).unwrap_or(&[]);
    let mut html = String::from("<h3>Launch latency</h3>");
    if bins.is_empty() {
        html.push_str("<p class=\"muted\">No activity links to a launch call.</p>");
        html.push_str(&summary.finish());
        return html;
    }
    let label = |low: i64| if low < 1 { "≤ 0".to_owned() } else { readable_ns(low as u128) };
    let entries: Vec<(u128, &'static str, String, String)> = bins
        .iter()
        .map(|bin| {
            let name = format!("{} to {}", label(bin.low_ns), readable_ns(bin.high_ns as u128));
            (
                u128::from(bin.count),
                "launch_queued",
                label(bin.low_ns),
                format!("{name}: {} launches", bin.count),
            )
        })
        .collect();
    let tallest = bins.iter().map(|bin| bin.count).max().unwrap_or(0);
    let chart = charts::columns("launch latency histogram", &entries, true, &format!("{tallest} launches"));
    let mut histogram = Table::new(
        "latency_histogram",
        "Histogram: launches per power-of-two range",
        &["from", "to", "launches"],
        false,
    );
    for bin in bins {
        histogram.row(
            None,
            vec![
                Cell::derived(label(bin.low_ns), bin.low_ns),
                Cell::derived(readable_ns(bin.high_ns as u128), bin.high_ns),
                Cell::derived(bin.count.to_string(), bin.count),
            ],
        );
    }
    html.push_str(&pair(chart, format!("{}{}", summary.finish(), histogram.finish())));
    html
}

fn streams_part(at: &str, device: &DeviceBreakdown) -> String {
    if device.streams.is_empty() {
        return String::new();
    }
    let bars: Vec<Bar> = device
        .streams
        .iter()
        .map(|stream| Bar {
            label: format!("stream {}", stream.stream_id),
            segments: Category::ALL
                .into_iter()
                .map(|category| {
                    let time = u128::from(stream.categories.get(category).busy_ns);
                    (time, category.as_str(), format!("{} busy {}", category.as_str(), readable_ns(time)))
                })
                .collect(),
            note: format!("busy {}", readable_ns(u128::from(stream.busy_ns))),
        })
        .collect();
    let chart = format!(
        "{}{}<p class=\"muted\">Each stream's category busy times laid end to end (they may overlap within the stream).</p>",
        legend(&CATEGORY_NAMES),
        charts::bars("busy time per stream", &bars, 0)
    );
    let mut table = Table::new(
        "streams",
        "Per stream",
        &["stream", "busy", "summed", "count", "compute", "communication", "memory", "exposed communication"],
        true,
    );
    for (index, stream) in device.streams.iter().enumerate() {
        let path = format!("{at}/streams/{index}");
        table.row(
            Some(&path),
            vec![
                Cell::json(format!("{path}/stream_id"), &stream.stream_id, stream.stream_id.to_string()),
                Cell::time(format!("{path}/busy_ns"), stream.busy_ns),
                Cell::time(format!("{path}/summed_ns"), stream.summed_ns),
                Cell::count(format!("{path}/count"), stream.count),
                Cell::time(format!("{path}/categories/compute/busy_ns"), stream.categories.compute.busy_ns),
                Cell::time(
                    format!("{path}/categories/communication/busy_ns"),
                    stream.categories.communication.busy_ns,
                ),
                Cell::time(format!("{path}/categories/memory/busy_ns"), stream.categories.memory.busy_ns),
                Cell::time(format!("{path}/exposed_communication_ns"), stream.exposed_communication_ns),
            ],
        );
    }
    // A wide table: under its chart, not beside it.
    format!("<h3>Streams</h3>{chart}{}", table.finish())
}

fn iterations_part(at: &str, device: &DeviceBreakdown, options: &ReportOptions) -> String {
    let Some(iterations) = &device.iterations else {
        return String::new();
    };
    if iterations.is_empty() {
        return "<h3>Iterations</h3><p class=\"muted\">No activity links to an iteration.</p>".to_owned();
    }
    let entries: Vec<(u128, &'static str, String, String)> = iterations
        .iter()
        .map(|row| {
            let id = row.iteration_ref.id().to_owned();
            let title = format!(
                "{id}: busy {}, summed {}",
                readable_ns(u128::from(row.busy_ns)),
                readable_ns(row.summed_ns)
            );
            (u128::from(row.busy_ns), "compute", id, title)
        })
        .collect();
    let tallest = iterations.iter().map(|row| row.busy_ns).max().unwrap_or(0);
    let mut sorted: Vec<u64> = iterations.iter().map(|row| row.busy_ns).collect();
    sorted.sort_unstable();
    let chart = format!(
        "{}<p class=\"muted\">Busy time of each iteration in order; median {}, min {}, max {}.</p>",
        charts::columns(
            "busy time per iteration",
            &entries,
            iterations.len() <= 40,
            &readable_ns(u128::from(tallest))
        ),
        readable_ns(u128::from(sorted[(sorted.len() - 1) / 2])),
        readable_ns(u128::from(sorted[0])),
        readable_ns(u128::from(sorted[sorted.len() - 1]))
    );
    let mut table = Table::new(
        "iterations",
        "Per iteration",
        &["iteration", "busy", "summed", "count", "communication", "exposed communication"],
        true,
    );
    for (index, row) in iterations.iter().enumerate().take(options.top_rows) {
        let path = format!("{at}/iterations/{index}");
        table.row(
            Some(&path),
            vec![
                Cell::label(row.iteration_ref.id()),
                Cell::time(format!("{path}/busy_ns"), row.busy_ns),
                Cell::time(format!("{path}/summed_ns"), row.summed_ns),
                Cell::count(format!("{path}/count"), row.count),
                Cell::time(
                    format!("{path}/categories/communication/busy_ns"),
                    row.categories.communication.busy_ns,
                ),
                Cell::time(format!("{path}/exposed_communication_ns"), row.exposed_communication_ns),
            ],
        );
    }
    let mut tables = table.finish();
    tables.push_str(&left_out(iterations.len(), options.top_rows, "iterations"));
    format!("<h3>Iterations</h3>{}", pair(chart, tables))
}

/// The line under a capped table.
pub(crate) fn left_out(total: usize, shown: usize, what: &str) -> String {
    if total <= shown {
        return String::new();
    }
    format!(
        "<p class=\"muted left-out\" data-total=\"{total}\" data-shown=\"{shown}\">{} more {what} left out; the embedded \
         JSON (<code>#tally-data</code>) holds all {total}.</p>",
        total - shown
    )
}

fn kernels_part(at: &str, device: &DeviceBreakdown, options: &ReportOptions) -> String {
    let busy = u128::from(device.busy_ns);
    let mut table = Table::new(
        "kernels",
        "Kernels by summed time (click a header to sort)",
        &["kernel", "category", "count", "summed", "busy", "share of busy", "median", "max"],
        true,
    );
    for (index, kernel) in device.kernels.iter().enumerate().take(options.top_kernels) {
        let path = format!("{at}/kernels/{index}");
        table.row(
            Some(&path),
            vec![
                Cell::json(format!("{path}/name"), &kernel.name, shorten(&kernel.name, NAME_CHARS)),
                Cell::json(format!("{path}/category"), &kernel.category, kernel.category.as_str()),
                Cell::count(format!("{path}/count"), kernel.count),
                Cell::time(format!("{path}/summed_ns"), kernel.summed_ns),
                Cell::time(format!("{path}/busy_ns"), kernel.busy_ns),
                Cell::json(
                    format!("{path}/share_of_busy"),
                    &kernel.share_of_busy,
                    percent(u128::from(kernel.busy_ns), busy),
                ),
                Cell::time(format!("{path}/median_ns"), kernel.median_ns),
                Cell::time(format!("{path}/max_ns"), kernel.max_ns),
            ],
        );
    }
    format!(
        "<h3>Kernels</h3>{}{}",
        table.finish(),
        left_out(device.kernels.len(), options.top_kernels, "kernels")
    )
}
