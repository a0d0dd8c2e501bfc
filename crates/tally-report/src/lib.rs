//! One self-contained HTML page of a run's overlap breakdown of GPU time,
//! or of two runs compared: what `tally report` writes, and what the
//! Python package's breakdown shows in a notebook (`_repr_html_`).
//!
//! The page needs nothing outside itself: its style and SVG charts are
//! inline, its only script sorts tables (tooltips are SVG `<title>`s), and
//! it references no URL (every `href` is a `#` fragment). The data behind
//! it is embedded as `<script type="application/json" id="tally-data">`:
//! the [`Breakdown`] (or [`BreakdownDiff`]) serialized as `tally breakdown
//! --format json` (or `tally diff`) prints it, compact, with every `<`
//! written `\u003c`, so it parses to the same value.
//!
//! Per device clock, the answer first, then the evidence: the headline
//! (busy, summed, idle inside the envelope, exposed communication); the
//! timeline of the busy envelope, drawn from [`DeviceTimeline`]'s columns
//! (each pixel column shows what covered it: busy per category, idle by
//! cause), so a trace of any size gives a page of bounded size; category
//! bars with their overlaps, idle causes, the launch-latency histogram,
//! streams, iterations (when broken down by iteration) and the kernel
//! table, capped at [`ReportOptions::top_kernels`] rows with a line saying
//! how many the embedded JSON holds beyond.
//!
//! # The table convention (for tests that read the page)
//!
//! Every chart has its numbers in a `<table class="tally-table">` beside
//! or under it, named by `data-table` (`overview`, `timeline`,
//! `categories`, `overlaps`, `memory`, `idle`, `launch_latency`,
//! `latency_histogram`, `streams`, `iterations`, `kernels`; on a
//! comparison `overview`, `figures`, `kernels_changed`,
//! `kernels_appeared`, `kernels_disappeared`). Each device clock is a
//! `<section class="device" data-key="/devices/N">`.
//!
//! - A cell (`<td>` or row header `<th>`) that shows a value of the
//!   embedded JSON has `data-key`, the value's JSON Pointer (RFC 6901) in
//!   it (`/devices/0/categories/compute/busy_ns`), and `data-value`, the
//!   value as the JSON writes it (a number's digits, a string's text,
//!   `null`); its text is the value for reading (`1.23 ms`).
//! - A row that is one JSON object (a kernel, a stream) has `data-key` on
//!   its `<tr>`: that object's pointer.
//! - A cell of a figure the page derives (a percentage, a histogram bin)
//!   has `data-value` (its sort key) and no `data-key`.
//! - A capped table is followed by `<p class="left-out" data-total=N
//!   data-shown=M>`.
//!
//! So a test checks a page by reading every `[data-key]` cell and
//! comparing its `data-value` with the value at its pointer in the
//! embedded JSON.

mod assets;
mod charts;
mod compare;
mod html;
mod run;
mod units;

use std::fmt::Write as _;

pub use compare::RunView;
pub use html::{escape, script_json};
use tally_gpu_time::breakdown::{Breakdown, DeviceTimeline};
use tally_gpu_time::diff::BreakdownDiff;
pub use units::{percent, readable_ns, tick_label, tick_step};

/// The columns of a timeline by default: about a pixel each on a wide
/// screen.
pub const DEFAULT_TIMELINE_COLUMNS: u32 = 1000;

/// Characters of a kernel name a table shows (the cell's `data-value` and
/// tooltip hold all of it).
pub(crate) const NAME_CHARS: usize = 120;

/// What a page shows beyond its data.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The page's title.
    pub title: String,
    /// Lines under the title naming the inputs.
    pub sources: Vec<String>,
    /// Kernel rows per table at most (the embedded JSON holds all).
    pub top_kernels: usize,
    /// Rows of other long tables (iterations) at most.
    pub top_rows: usize,
    /// Columns of one device clock's timeline at most.
    pub timeline_columns: usize,
    /// Columns of all the page's timelines together at most: many device
    /// clocks get fewer columns each (100 at least), so the page stays
    /// small.
    pub timeline_budget: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            title: "tally report".to_owned(),
            sources: Vec::new(),
            top_kernels: 100,
            top_rows: 500,
            timeline_columns: DEFAULT_TIMELINE_COLUMNS as usize,
            timeline_budget: 16_000,
        }
    }
}

/// A rendered report: a whole page or a fragment for a notebook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlReport {
    fragment: String,
    title: String,
}

impl HtmlReport {
    /// The report as one `<div class="tally-report">` holding its style,
    /// body, data and script: what a notebook cell shows.
    pub fn fragment(&self) -> &str {
        &self.fragment
    }

    /// The report as a whole HTML document.
    pub fn page(&self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta name=\"color-scheme\" content=\"light dark\"><title>{}</title>\
             <style>body{{margin:0}}@media (prefers-color-scheme: dark){{body{{background:#161616}}}}</style>\
             </head><body>\n{}\n</body></html>\n",
            escape(&self.title),
            self.fragment
        )
    }
}

/// The report of one run: `result` and its timelines (one per device
/// clock, in order; from [`tally_gpu_time::breakdown::breakdown_with_timelines`];
/// missing ones are drawn as "no timeline").
pub fn breakdown_report(
    result: &Breakdown,
    timelines: &[DeviceTimeline],
    options: &ReportOptions,
) -> Result<HtmlReport, serde_json::Error> {
    let data = script_json(result)?;
    Ok(assemble("breakdown", run::body(result, timelines, options), &data, options))
}

/// The report of two runs compared: `compared` (what
/// [`tally_gpu_time::diff::diff`] gives), and when given, both runs'
/// breakdowns and timelines, drawn one above the other per device pair.
pub fn diff_report(
    compared: &BreakdownDiff,
    runs: Option<(RunView<'_>, RunView<'_>)>,
    options: &ReportOptions,
) -> Result<HtmlReport, serde_json::Error> {
    let data = script_json(compared)?;
    Ok(assemble("diff", compare::body(compared, runs, options), &data, options))
}

fn assemble(kind: &str, body: String, data: &str, options: &ReportOptions) -> HtmlReport {
    let mut fragment = String::with_capacity(body.len() + data.len() + assets::STYLE.len() + 4096);
    let _ = write!(
        fragment,
        "<div class=\"tally-report\" data-kind=\"{kind}\"><style>{}</style>\n{body}\n\
         <footer class=\"muted\"><p>Made by tally {}. Times are integer nanoseconds in the data; the page rounds them \
         for reading. The data behind every figure is embedded below as JSON (<code>#tally-data</code>).</p></footer>\n\
         <script type=\"application/json\" id=\"tally-data\">{data}</script>\n<script>{}</script></div>",
        assets::STYLE,
        env!("CARGO_PKG_VERSION"),
        assets::SCRIPT
    );
    HtmlReport { fragment, title: options.title.clone() }
}

/// A legend of colour classes, each labelled with its name (`_` read as a
/// space).
pub(crate) fn legend(names: &[&str]) -> String {
    let labelled: Vec<(&str, String)> = names.iter().map(|name| (*name, name.replace('_', " "))).collect();
    let pairs: Vec<(&str, &str)> = labelled.iter().map(|(class, label)| (*class, label.as_str())).collect();
    legend_labelled(&pairs)
}

/// A legend of `(colour class, label)` pairs.
pub(crate) fn legend_labelled(pairs: &[(&str, &str)]) -> String {
    let mut html = String::from("<div class=\"legend\">");
    for (class, label) in pairs {
        let _ = write!(html, "<span><span class=\"swatch c-{class}\"></span>{}</span>", escape(label));
    }
    html.push_str("</div>");
    html
}
