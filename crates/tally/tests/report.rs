//! `tally report` run as the built binary on real fixtures (a Kineto trace
//! with NCCL, the two-GPU example artifact, two runs compared): the page
//! embeds exactly the JSON `tally breakdown` (or `tally diff`) prints with
//! the same flags, every table cell that names a JSON value shows that
//! value, the page references nothing outside itself, and its size stays
//! bounded. Headless Chromium opens the same pages in `report_chromium.rs`.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use regex::Regex;
use serde_json::Value;

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().unwrap()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn kineto(name: &str) -> String {
    let path = workspace().join("crates/tally-trace/tests/fixtures/kineto").join(name);
    path.to_str().unwrap().to_owned()
}

fn example() -> String {
    workspace().join("examples/serving-run.jsonl").to_str().unwrap().to_owned()
}

/// `tally report ARGS -o PAGE`: the page's text.
fn report(dir: &Path, args: &[&str]) -> String {
    let page = dir.join("report.html");
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", page.to_str().unwrap()]);
    let output = tally(&all);
    assert!(output.status.success(), "tally {all:?}: {}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("report written to"));
    std::fs::read_to_string(page).unwrap()
}

/// The JSON a command prints with `--format json`.
fn printed(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    let output = tally(&all);
    assert!(output.status.success(), "tally {all:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The page's embedded data.
fn embedded(page: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"tally-data\">";
    assert_eq!(page.matches(open).count(), 1, "one data element");
    let start = page.find(open).unwrap() + open.len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Checks every cell that names a JSON value against the data; returns
/// how many there were.
fn cells_show_the_data(page: &str, data: &Value) -> usize {
    let cell = Regex::new(r#"<t[dh][^>]* data-key="([^"]*)" data-value="([^"]*)">"#).unwrap();
    let mut checked = 0;
    for found in cell.captures_iter(page) {
        let (pointer, shown) = (unescape(&found[1]), unescape(&found[2]));
        let value = data.pointer(&pointer).unwrap_or_else(|| panic!("{pointer} is not in the data"));
        let expected = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        assert_eq!(shown, expected, "the cell of {pointer}");
        checked += 1;
    }
    checked
}

/// Every `src`, `href` and `url(` of the page points inside it.
fn references_nothing_outside(page: &str) {
    let reference = Regex::new(r#"(?i)(?:src|href)\s*=\s*["']?([^"'\s>]*)"#).unwrap();
    for found in reference.captures_iter(page) {
        let target = &found[1];
        assert!(target.starts_with('#') || target.starts_with("data:"), "the page references {target:?}");
    }
    let url = Regex::new(r"(?i)url\(\s*([^)]*)\)").unwrap();
    for found in url.captures_iter(page) {
        let target = found[1].trim_matches(['"', '\'']);
        assert!(target.starts_with('#') || target.starts_with("data:"), "the page loads url({target})");
    }
    assert!(!page.contains("@import"), "the page imports a stylesheet");
    assert!(!page.to_ascii_lowercase().contains("<link"), "the page links a resource");
    assert!(!page.to_ascii_lowercase().contains("<img"), "the page has an image");
}

#[test]
fn a_kineto_trace_with_nccl_gives_a_page_of_its_breakdown() {
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto("nccl-distributed.json.gz");
    let page = report(dir.path(), &[&trace]);
    let data = embedded(&page);
    assert_eq!(data, printed(&["breakdown", &trace]));
    references_nothing_outside(&page);
    assert!(page.len() < 1 << 20, "{} bytes", page.len());
    assert!(cells_show_the_data(&page, &data) > 100);
    // The answer first: the device's headline figures, then the evidence.
    let device = &data["devices"][0];
    assert!(device["categories"]["communication"]["busy_ns"].as_u64().unwrap() > 0);
    for table in
        ["overview", "timeline", "categories", "overlaps", "idle", "launch_latency", "streams", "kernels"]
    {
        assert!(page.contains(&format!("data-table=\"{table}\"")), "no {table} table");
    }
    for key in
        ["/devices/0/exposed_communication_ns", "/devices/0/idle/host_bound_ns", "/devices/0/kernels/0/name"]
    {
        assert!(page.contains(&format!("data-key=\"{key}\"")), "no cell of {key}");
    }
    // The timeline is drawn from columns: a lane per category and idle.
    assert!(page.contains("class=\"tally-chart timeline\""));
    assert!(page.contains("<path class=\"c-communication\""));
    assert!(page.contains("<path class=\"c-host_bound\""));
}

#[test]
fn the_two_gpu_example_gives_a_section_per_device_clock_and_its_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let run = example();
    let page = report(dir.path(), &[&run, "--by", "iteration"]);
    let data = embedded(&page);
    assert_eq!(data, printed(&["breakdown", &run, "--by", "iteration"]));
    let devices = data["devices"].as_array().unwrap();
    assert!(devices.len() >= 2, "the example has two GPUs");
    for index in 0..devices.len() {
        assert!(page.contains(&format!("<section class=\"device\" id=\"device-{index}\"")));
        assert!(page.contains(&format!("href=\"#device-{index}\"")));
    }
    assert!(page.contains("data-table=\"iterations\""));
    assert!(cells_show_the_data(&page, &data) > 50);
    references_nothing_outside(&page);
}

#[test]
fn two_runs_compared_give_a_page_of_their_diff() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (kineto("sampled-rank-0.json.gz"), kineto("sampled-rank-1.json.gz"));
    let page = report(dir.path(), &["--compare", &a, &b]);
    let data = embedded(&page);
    assert_eq!(data, printed(&["diff", &a, &b]));
    assert!(page.contains("data-kind=\"diff\""));
    assert!(page.contains("data-table=\"kernels_changed\""));
    assert!(page.contains("data-table=\"figures\""));
    // Both runs' timelines, one above the other.
    assert_eq!(
        page.matches("class=\"tally-chart timeline\"").count(),
        2 * data["devices"].as_array().unwrap().len()
    );
    assert!(cells_show_the_data(&page, &data) > 50);
    references_nothing_outside(&page);
}

#[test]
fn the_kernel_table_is_capped_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto("nccl-distributed.json.gz");
    let page = report(dir.path(), &[&trace, "--top", "3"]);
    let data = embedded(&page);
    let kernels = data["devices"][0]["kernels"].as_array().unwrap().len();
    assert!(kernels > 3);
    assert!(page.contains("data-key=\"/devices/0/kernels/2\""));
    assert!(!page.contains("data-key=\"/devices/0/kernels/3\""));
    assert!(page.contains(&format!("data-total=\"{kernels}\" data-shown=\"3\"")));
    // The embedded data still holds every kernel.
    assert_eq!(data, printed(&["breakdown", &trace]));
}

#[test]
fn the_page_size_does_not_grow_with_the_timeline_s_detail() {
    // Columns are bounded, so a longer or denser run draws no more marks.
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto("nccl-distributed.json.gz");
    let fine = report(dir.path(), &[&trace, "--columns", "1000"]);
    let coarse = report(dir.path(), &[&trace, "--columns", "50"]);
    assert!(coarse.len() < fine.len());
    assert!(fine.len() - coarse.len() < 200_000, "{} against {}", fine.len(), coarse.len());
}

#[test]
fn a_kernel_name_with_markup_stays_text() {
    // A kernel named like markup (a hostile or just templated name) can
    // neither close the data element nor add one: the page has its two
    // scripts, and the name round-trips through the embedded JSON.
    use std::io::Read;
    let mut text = String::new();
    let fixture = std::fs::File::open(kineto("triton-single-kernel.json.gz")).unwrap();
    flate2::read::GzDecoder::new(fixture).read_to_string(&mut text).unwrap();
    let hostile = r#"k</script><script>alert(1)</script><!--<b title='x'>&amp;"#;
    let before = "\"name\": \"triton_poi_fused_add_cos_sin_0\"";
    assert!(text.contains(before), "the fixture names its kernel");
    let text = text.replace(before, &format!("\"name\": {}", serde_json::to_string(hostile).unwrap()));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("hostile.json");
    std::fs::write(&trace, text).unwrap();
    let trace = trace.to_str().unwrap();
    let page = report(dir.path(), &[trace]);
    let data = embedded(&page);
    assert_eq!(data, printed(&["breakdown", trace]));
    assert_eq!(data["devices"][0]["kernels"][0]["name"], hostile);
    assert_eq!(page.matches("<script").count(), 2, "the data and the sorting script only");
    assert!(!page.contains("<script>alert"));
    assert!(!page.contains("<b title"));
    cells_show_the_data(&page, &data);
}

#[test]
fn bad_input_writes_no_page() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{not json\n").unwrap();
    let page = dir.path().join("report.html");
    let output = tally(&["report", bad.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("bad.jsonl"));
    assert!(!page.exists());
    // Endless input stops at the record limit, as for `tally breakdown`.
    let zero = tally(&["report", "/dev/zero", "-o", page.to_str().unwrap()]);
    assert_eq!(zero.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--max-record-bytes"));
    assert!(!page.exists());
    let trace = kineto("nccl-distributed.json.gz");
    let three = tally(&["report", "--compare", &trace, &trace, &trace, "-o", page.to_str().unwrap()]);
    assert_eq!(three.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&three.stderr).contains("exactly two runs"));
    assert!(!page.exists());
}
