//! The inline SVG charts: the envelope's timeline at pixel resolution,
//! horizontal bars of stacked segments, and column charts (histograms,
//! distributions). Colours are CSS classes (`c-NAME`), set in the page's
//! style from the Okabe-Ito palette; a `<title>` on each mark is its
//! tooltip. Every chart's numbers are also in a table beside it.

use std::fmt::Write as _;

use tally_gpu_time::breakdown::TimelineColumn;

use crate::html::escape;
use crate::units::{readable_ns, tick_label, tick_step};

/// The width of every chart's view box, in its user units.
const WIDTH: u64 = 1000;
/// Where plots start, right of their labels.
const PLOT_X: u64 = 150;
/// The plot's width.
const PLOT_WIDTH: u64 = WIDTH - PLOT_X - 20;
/// The view box width of the charts drawn beside a table (bars, columns):
/// about their width on the page, so their text reads at its size.
const SMALL_WIDTH: u64 = 600;
/// Where their plots start.
const SMALL_PLOT_X: u64 = 190;
/// Their plots' width.
const SMALL_PLOT_WIDTH: u64 = SMALL_WIDTH - SMALL_PLOT_X - 10;
/// One timeline lane's height.
const LANE: u64 = 18;
/// Between lanes.
const LANE_GAP: u64 = 6;

/// The names of the timeline's busy lanes, in [`TimelineColumn::categories_ns`]'
/// order.
pub const CATEGORY_NAMES: [&str; 4] = ["compute", "communication", "memory", "other"];
/// The idle causes, in [`TimelineColumn::idle_ns`]' order (stacked bottom up).
pub const IDLE_NAMES: [&str; 4] = ["launch_queued", "sync_wait", "unknown", "host_bound"];

/// `columns` merged, in order, into at most `most`: each merged column is
/// the sum of a run of consecutive ones (their times add up, as their
/// spans are disjoint), so the totals stay exact.
pub fn merge_columns(columns: &[TimelineColumn], most: usize) -> Vec<TimelineColumn> {
    let most = most.max(1);
    if columns.len() <= most {
        return columns.to_vec();
    }
    let count = columns.len();
    (0..most)
        .map(|index| {
            let (from, to) = (index * count / most, (index + 1) * count / most);
            let run = &columns[from..to];
            let mut merged = TimelineColumn {
                start_ns: run[0].start_ns,
                end_ns: run[run.len() - 1].end_ns,
                ..Default::default()
            };
            for column in run {
                merged.busy_ns += column.busy_ns;
                for index in 0..4 {
                    merged.categories_ns[index] += column.categories_ns[index];
                    merged.idle_ns[index] += column.idle_ns[index];
                }
            }
            merged
        })
        .collect()
}

/// The heights (0 to [`LANE`]) of `times` in their columns, rounded.
fn heights(columns: &[TimelineColumn], time: impl Fn(&TimelineColumn) -> u64) -> Vec<u64> {
    columns
        .iter()
        .map(|column| {
            let span = (column.end_ns - column.start_ns).max(1);
            (u128::from(time(column)) * u128::from(LANE) * 2 + u128::from(span)) as u64 / (span * 2)
        })
        .collect()
}

/// A step-area path of `heights` (one per column, x in columns) in a lane
/// of height [`LANE`]; runs of equal height are one step.
fn area_path(heights: &[u64]) -> String {
    let mut path = format!("M0 {LANE}");
    let mut index = 0;
    while index < heights.len() {
        let height = heights[index];
        let mut end = index + 1;
        while end < heights.len() && heights[end] == height {
            end += 1;
        }
        let _ = write!(path, "V{}H{end}", LANE - height);
        index = end;
    }
    path.push_str(&format!("V{LANE}Z"));
    path
}

/// The timeline of a device clock's envelope `[start, end)`: one lane per
/// category (the share of each column it kept busy) and one of idle time,
/// stacked by cause; an axis of time since the envelope's start.
pub fn timeline(columns: &[TimelineColumn], start: u64, end: u64) -> String {
    let lanes = CATEGORY_NAMES.len() as u64 + 1;
    let axis_y = lanes * (LANE + LANE_GAP);
    let height = axis_y + 28;
    let count = columns.len().max(1);
    let mut svg = format!(
        "<svg class=\"tally-chart timeline\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" \
         aria-label=\"timeline of the busy envelope\">"
    );
    let lane = |svg: &mut String, row: u64, label: &str, body: String, title: String| {
        let y = row * (LANE + LANE_GAP);
        let _ = write!(
            svg,
            "<text class=\"lane-label\" x=\"{}\" y=\"{}\">{}</text>\
             <rect class=\"lane-bg\" x=\"{PLOT_X}\" y=\"{y}\" width=\"{PLOT_WIDTH}\" height=\"{LANE}\"/>\
             <svg x=\"{PLOT_X}\" y=\"{y}\" width=\"{PLOT_WIDTH}\" height=\"{LANE}\" viewBox=\"0 0 {count} {LANE}\" \
             preserveAspectRatio=\"none\"><title>{}</title>{body}</svg>",
            PLOT_X - 8,
            y + LANE - 5,
            escape(label),
            escape(&title)
        );
    };
    for (index, name) in CATEGORY_NAMES.iter().enumerate() {
        let total: u64 = columns.iter().map(|column| column.categories_ns[index]).sum();
        let path = area_path(&heights(columns, |column| column.categories_ns[index]));
        let body = format!("<path class=\"c-{name}\" d=\"{path}\"/>");
        lane(&mut svg, index as u64, name, body, format!("{name}: busy {}", readable_ns(u128::from(total))));
    }
    // Idle, stacked: each cause's path is the height of it and the causes
    // below it, drawn tallest first so each shows its own band.
    let mut body = String::new();
    let mut title = String::from("idle by cause:");
    for cause in (0..IDLE_NAMES.len()).rev() {
        let path = area_path(&heights(columns, |column| column.idle_ns[..=cause].iter().sum()));
        let _ = write!(body, "<path class=\"c-{}\" d=\"{path}\"/>", IDLE_NAMES[cause]);
    }
    for (index, name) in IDLE_NAMES.iter().enumerate() {
        let total: u64 = columns.iter().map(|column| column.idle_ns[index]).sum();
        let _ = write!(title, " {} {};", name.replace('_', " "), readable_ns(u128::from(total)));
    }
    lane(&mut svg, CATEGORY_NAMES.len() as u64, "idle", body, title);
    axis(&mut svg, axis_y, end.saturating_sub(start));
    svg.push_str("</svg>");
    svg
}

/// A time axis at `y` over `span` nanoseconds from the plot's left edge.
fn axis(svg: &mut String, y: u64, span: u64) {
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{PLOT_X}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>",
        PLOT_X + PLOT_WIDTH
    );
    if span == 0 {
        return;
    }
    let step = tick_step(span, 8);
    let mut value = 0u64;
    while value <= span {
        let x = PLOT_X + (u128::from(value) * u128::from(PLOT_WIDTH) / u128::from(span)) as u64;
        let _ = write!(
            svg,
            "<line class=\"tick\" x1=\"{x}\" y1=\"{y}\" x2=\"{x}\" y2=\"{}\"/>\
             <text class=\"tick-label\" x=\"{x}\" y=\"{}\">{}</text>",
            y + 5,
            y + 18,
            tick_label(value, step)
        );
        match value.checked_add(step) {
            Some(next) => value = next,
            None => break,
        }
    }
}

/// One horizontal bar: its label, its segments (value, colour class,
/// tooltip) laid end to end, and the text after it.
pub struct Bar {
    /// Left of the bar.
    pub label: String,
    /// Laid end to end from the left.
    pub segments: Vec<(u128, &'static str, String)>,
    /// Right of the bar (its figure).
    pub note: String,
}

/// Horizontal bars on one scale (the longest bar, or `scale` when larger).
pub fn bars(name: &str, bars: &[Bar], scale: u128) -> String {
    const ROW: u64 = 24;
    const BAR_WIDTH: u64 = SMALL_PLOT_WIDTH - 190;
    let longest = bars.iter().map(|bar| bar.segments.iter().map(|segment| segment.0).sum::<u128>()).max();
    let scale = longest.unwrap_or(0).max(scale).max(1);
    let height = ROW * bars.len() as u64 + 4;
    let mut svg = format!(
        "<svg class=\"tally-chart bars\" viewBox=\"0 0 {SMALL_WIDTH} {height}\" role=\"img\" aria-label=\"{}\">",
        escape(name)
    );
    for (row, bar) in bars.iter().enumerate() {
        let y = row as u64 * ROW + 2;
        let _ = write!(
            svg,
            "<text class=\"lane-label\" x=\"{}\" y=\"{}\">{}</text>",
            SMALL_PLOT_X - 8,
            y + 15,
            escape(&bar.label)
        );
        let mut x = SMALL_PLOT_X as f64;
        for (value, class, title) in &bar.segments {
            // Positions are pixels: the one place a float is right.
            let width = *value as f64 * BAR_WIDTH as f64 / scale as f64;
            let _ = write!(
                svg,
                "<rect class=\"c-{class}\" x=\"{x:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"{}\"><title>{}</title></rect>",
                ROW - 6,
                escape(title)
            );
            x += width;
        }
        let _ = write!(
            svg,
            "<text class=\"bar-note\" x=\"{:.1}\" y=\"{}\">{}</text>",
            x + 6.0,
            y + 14,
            escape(&bar.note)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A column chart: one column per entry (height, colour class, label under
/// it when `labels`, tooltip), on the scale of the tallest; the tallest's
/// figure written at the top of the value axis.
pub fn columns(
    name: &str,
    entries: &[(u128, &'static str, String, String)],
    labels: bool,
    top: &str,
) -> String {
    const HEIGHT: u64 = 160;
    let tallest = entries.iter().map(|entry| entry.0).max().unwrap_or(0).max(1);
    let count = entries.len().max(1) as f64;
    let slot = SMALL_PLOT_WIDTH as f64 / count;
    let total_height = HEIGHT + if labels { 40 } else { 10 };
    let mut svg = format!(
        "<svg class=\"tally-chart columns\" viewBox=\"0 0 {SMALL_WIDTH} {total_height}\" role=\"img\" aria-label=\"{}\">\
         <text class=\"lane-label\" x=\"{}\" y=\"12\">{}</text>\
         <line class=\"axis\" x1=\"{SMALL_PLOT_X}\" y1=\"{HEIGHT}\" x2=\"{}\" y2=\"{HEIGHT}\"/>",
        escape(name),
        SMALL_PLOT_X - 8,
        escape(top),
        SMALL_PLOT_X + SMALL_PLOT_WIDTH
    );
    for (index, (value, class, label, title)) in entries.iter().enumerate() {
        let height =
            (*value as f64 * (HEIGHT - 10) as f64 / tallest as f64).max(if *value > 0 { 1.0 } else { 0.0 });
        let x = SMALL_PLOT_X as f64 + index as f64 * slot;
        let _ = write!(
            svg,
            "<rect class=\"c-{class}\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{height:.2}\"><title>{}</title></rect>",
            x + slot * 0.1,
            HEIGHT as f64 - height,
            slot * 0.8,
            escape(title)
        );
        if labels {
            let _ = write!(
                svg,
                "<text class=\"tick-label\" x=\"{:.1}\" y=\"{}\">{}</text>",
                x + slot / 2.0,
                HEIGHT + 16 + (index as u64 % 2) * 14,
                escape(label)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(start_ns: u64, end_ns: u64, compute: u64, idle: u64) -> TimelineColumn {
        TimelineColumn {
            start_ns,
            end_ns,
            busy_ns: compute,
            categories_ns: [compute, 0, 0, 0],
            idle_ns: [idle, 0, 0, 0],
        }
    }

    #[test]
    fn merged_columns_keep_their_totals_and_spans() {
        let columns: Vec<TimelineColumn> = (0..10).map(|i| column(i * 10, i * 10 + 10, i, 10 - i)).collect();
        let merged = merge_columns(&columns, 3);
        assert_eq!(merged.len(), 3);
        assert_eq!((merged[0].start_ns, merged[2].end_ns), (0, 100));
        let spans: Vec<(u64, u64)> = merged.iter().map(|c| (c.start_ns, c.end_ns)).collect();
        assert!(spans.windows(2).all(|pair| pair[0].1 == pair[1].0), "{spans:?}");
        let compute: u64 = merged.iter().map(|c| c.categories_ns[0]).sum();
        assert_eq!(compute, 45);
        let idle: u64 = merged.iter().map(|c| c.idle_ns[0]).sum();
        assert_eq!(idle, 55);
        assert_eq!(merge_columns(&columns, 20), columns);
    }

    #[test]
    fn columns_draw_their_covered_share() {
        let columns =
            [column(0, 10, 10, 0), column(10, 20, 5, 5), column(20, 30, 0, 10), column(30, 40, 0, 10)];
        assert_eq!(heights(&columns, |c| c.categories_ns[0]), [18, 9, 0, 0]);
        assert_eq!(area_path(&[18, 9, 0, 0]), "M0 18V0H1V9H2V18H4V18Z");
    }

    #[test]
    fn a_timeline_has_a_lane_per_category_and_idle_and_an_axis() {
        let columns = [column(0, 500_000, 250_000, 250_000), column(500_000, 1_000_000, 500_000, 0)];
        let svg = timeline(&columns, 0, 1_000_000);
        for name in CATEGORY_NAMES.iter().chain(&IDLE_NAMES) {
            assert!(svg.contains(&format!("class=\"c-{name}\"")), "{name}");
        }
        assert!(svg.contains(">0 µs<") && svg.contains(">1000 µs<"), "{svg}");
        assert!(svg.contains("compute: busy 750.00 µs"));
    }
}
