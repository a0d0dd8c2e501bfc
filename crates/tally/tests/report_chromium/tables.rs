//! The page's tables against its embedded data, by tally-report's table
//! convention (its crate docs): a cell with `data-key` shows the JSON
//! value at that JSON Pointer; `data-value` is that value as the JSON
//! writes it, and the cell's text is the value for reading.
//!
//! The text is checked to *read as* the value, not to equal a formatting
//! copied from tally-report: a time (`12.35 ms`, `+1.50 µs`, `980 ns`)
//! parsed back is within half its last digit of the nanoseconds; a
//! percentage within half its last digit of the share (a `*_pct` key holds
//! percent, another a fraction); a count is the value's digits; a string is
//! in the text (or begins it, cut with `…`, the whole in the `title`);
//! `null` reads `-`.

use serde_json::Value;

use super::dom::{Element, parse};

/// The page's embedded data: the JSON of `<script id="tally-data">`.
pub fn embedded_data(root: &Element) -> Result<Value, String> {
    let scripts =
        root.all(&|element| element.name == "script" && element.attribute("id") == Some("tally-data"));
    let [script] = scripts.as_slice() else {
        return Err(format!("{} <script id=\"tally-data\"> elements, not one", scripts.len()));
    };
    if script.attribute("type") != Some("application/json") {
        return Err(format!("tally-data's type is {:?}, not application/json", script.attribute("type")));
    }
    serde_json::from_str(&script.text()).map_err(|error| format!("tally-data is not JSON: {error}"))
}

/// Checks every keyed cell and row of every `tally-table` of the DOM
/// against the embedded data, that the tables show each device's figures,
/// and that a table sorted by its script is in order; returns how many
/// cells were checked and how many sorted tables.
pub fn check(dom: &str) -> Result<(usize, usize), String> {
    let root = parse(dom).map_err(|error| format!("the DOM does not parse: {error}"))?;
    let data = embedded_data(&root)?;
    let tables = root.all(&|element| element.name == "table" && element.has_class("tally-table"));
    if tables.is_empty() {
        return Err("no table.tally-table".to_owned());
    }
    let mut shown = std::collections::BTreeSet::new();
    let (mut checked, mut sorted) = (0, 0);
    for table in &tables {
        let name = table.attribute("data-table").unwrap_or("(unnamed)").to_owned();
        for element in table.all(&|element| element.attribute("data-key").is_some()) {
            let pointer = element.attribute("data-key").unwrap_or_default();
            let value = data
                .pointer(pointer)
                .ok_or_else(|| format!("table {name}: data-key {pointer} names nothing in tally-data"))?;
            if element.name == "tr" {
                if !value.is_object() {
                    return Err(format!("table {name}: row {pointer} is not one JSON object"));
                }
            } else {
                check_cell(element, value).map_err(|why| format!("table {name}: cell {pointer}: {why}"))?;
                checked += 1;
            }
            shown.insert(pointer.to_owned());
        }
        if check_order(table).map_err(|why| format!("table {name}: {why}"))? {
            sorted += 1;
        }
    }
    let kind = root
        .all(&|element| element.has_class("tally-report"))
        .first()
        .and_then(|report| report.attribute("data-kind"))
        .unwrap_or_default()
        .to_owned();
    check_coverage(&root, &data, &kind, &shown)?;
    Ok((checked, sorted))
}

fn check_cell(cell: &Element, value: &Value) -> Result<(), String> {
    let written = cell.attribute("data-value").ok_or("no data-value")?;
    let text = cell.text().trim().replace('\u{a0}', " ");
    let key = cell.attribute("data-key").unwrap_or_default();
    match value {
        Value::String(string) => {
            if written != string {
                return Err(format!("data-value {written:?}, the JSON has {string:?}"));
            }
            // A long string (a kernel's name) may be shortened to a head
            // and `…`, with the whole in the cell's `title`.
            let shortened = text
                .strip_suffix('\u{2026}')
                .is_some_and(|head| !head.is_empty() && string.starts_with(head))
                && cell.attribute("title") == Some(string.as_str());
            if !text.contains(string.as_str()) && !shortened {
                return Err(format!("text {text:?} does not show {string:?}"));
            }
        }
        Value::Number(number) => {
            let parsed: Value = serde_json::from_str(written)
                .map_err(|_| format!("data-value {written:?} is not a number"))?;
            if parsed != *value {
                return Err(format!("data-value {written}, the JSON has {number}"));
            }
            let figure = number.as_f64().ok_or("a number beyond f64")?;
            reads_as(&text, figure, key).map_err(|why| format!("text {text:?} for {number}: {why}"))?;
        }
        Value::Null => {
            if written != "null" || !matches!(text.as_str(), "-" | "\u{2013}" | "\u{2014}" | "") {
                return Err(format!("null shown as data-value {written:?}, text {text:?}"));
            }
        }
        Value::Bool(flag) => {
            if written != flag.to_string() {
                return Err(format!("data-value {written:?}, the JSON has {flag}"));
            }
        }
        Value::Array(_) | Value::Object(_) => return Err("a cell names a whole array or object".to_owned()),
    }
    Ok(())
}

/// Whether `text` reads as `figure` (of JSON key `key`) to its precision.
fn reads_as(text: &str, figure: f64, key: &str) -> Result<(), String> {
    let (sign, unsigned) = match text.as_bytes().first() {
        Some(b'+') => (1.0, &text[1..]),
        Some(b'-') if text.len() > 1 => (-1.0, &text[1..]),
        _ => (1.0, text),
    };
    let (digits, scale) = if let Some(digits) = unsigned.strip_suffix('%') {
        // Percent of a `*_pct` key, else a share in 0..1.
        (digits, if key.ends_with("_pct") { 1.0 } else { 0.01 })
    } else if let Some((digits, unit)) = unsigned.rsplit_once(' ') {
        let scale = match unit {
            "ns" => 1.0,
            "µs" | "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            other => return Err(format!("unit {other:?} is not a time")),
        };
        (digits, scale)
    } else {
        let digits = unsigned.replace([',', ' '], "");
        return if digits.parse::<f64>().ok().map(|shown| sign * shown) == Some(figure) {
            Ok(())
        } else {
            Err("a count shows the value's digits".to_owned())
        };
    };
    let shown: f64 = digits.replace(',', "").parse().map_err(|_| format!("{digits:?} is not a number"))?;
    let decimals = digits.split_once('.').map_or(0, |(_, fraction)| fraction.len());
    let half_step = 0.5 * 10_f64.powi(-(decimals as i32)) * scale;
    let shown = sign * shown * scale;
    // A relative epsilon for the float arithmetic of the two sides.
    if (shown - figure).abs() <= half_step * (1.0 + 1e-9) + figure.abs() * 1e-12 {
        Ok(())
    } else {
        Err(format!("reads as {shown}, more than {half_step} away"))
    }
}

/// A sortable table whose header says it is sorted (`aria-sort`) has its
/// rows in that order where the column's sort keys (`data-value`, else the
/// text) are all numbers; whether it was such a table.
fn check_order(table: &Element) -> Result<bool, String> {
    let headers = table.all(&|element| element.name == "th" && element.attribute("scope") == Some("col"));
    let Some((column, descending)) = headers.iter().enumerate().find_map(|(index, header)| {
        header.attribute("aria-sort").map(|order| (index, order == "descending"))
    }) else {
        return Ok(false);
    };
    let bodies = table.all(&|element| element.name == "tbody");
    let rows = bodies.first().map(|body| body.all(&|element| element.name == "tr")).unwrap_or_default();
    let keys: Option<Vec<f64>> = rows
        .iter()
        .map(|row| {
            let cells = row.all(&|element| element.name == "td" || element.name == "th");
            let cell = cells.get(column)?;
            cell.attribute("data-value").map(str::to_owned).unwrap_or_else(|| cell.text()).parse().ok()
        })
        .collect();
    let Some(keys) = keys else { return Ok(false) };
    let ordered =
        keys.windows(2).all(|pair| if descending { pair[0] >= pair[1] } else { pair[0] <= pair[1] });
    if ordered {
        Ok(true)
    } else {
        Err(format!("sorted on column {column} by its script, but the rows read {keys:?}"))
    }
}

/// The tables show what the page is for: one section per device clock,
/// each device's headline figures, and the first kernels of each kernel
/// list (all, or as many as the page says it shows).
fn check_coverage(
    root: &Element,
    data: &Value,
    kind: &str,
    shown: &std::collections::BTreeSet<String>,
) -> Result<(), String> {
    let devices = data["devices"].as_array().ok_or("tally-data has no devices")?;
    let sections = root.all(&|element| element.name == "section" && element.has_class("device"));
    let keys: Vec<&str> = sections.iter().filter_map(|section| section.attribute("data-key")).collect();
    let expected: Vec<String> = (0..devices.len()).map(|index| format!("/devices/{index}")).collect();
    if keys != expected {
        return Err(format!("device sections {keys:?}, tally-data has {} devices", devices.len()));
    }
    let (figures, lists): (&[&str], &[&str]) = match kind {
        "breakdown" => (
            &[
                "busy_ns",
                "summed_ns",
                "exposed_communication_ns",
                "idle/idle_ns",
                "categories/compute/busy_ns",
                "categories/communication/busy_ns",
                "categories/memory/busy_ns",
                "categories/other/busy_ns",
            ],
            &["kernels"],
        ),
        "diff" => (
            &[
                "busy_ns/a_ns",
                "busy_ns/b_ns",
                "exposed_communication_ns/a_ns",
                "exposed_communication_ns/b_ns",
            ],
            &["kernels_changed", "kernels_appeared", "kernels_disappeared"],
        ),
        other => return Err(format!("the report's data-kind is {other:?}")),
    };
    let left_out: Vec<usize> = root
        .all(&|element| element.has_class("left-out"))
        .iter()
        .filter_map(|note| note.attribute("data-shown")?.parse().ok())
        .collect();
    let cap = left_out.iter().copied().min();
    // The sections are one per device (checked above).
    for (index, device) in devices.iter().enumerate() {
        for figure in figures {
            let pointer = format!("/devices/{index}/{figure}");
            if !shown.contains(&pointer) {
                return Err(format!("no table shows {pointer}"));
            }
        }
        for list in lists {
            let length = device[list].as_array().map_or(0, Vec::len);
            let expected = cap.map_or(length, |cap| length.min(cap));
            for entry in 0..expected {
                let pointer = format!("/devices/{index}/{list}/{entry}");
                if !shown.contains(&pointer) {
                    return Err(format!("no table row shows {pointer} ({length} in tally-data)"));
                }
            }
        }
    }
    Ok(())
}
