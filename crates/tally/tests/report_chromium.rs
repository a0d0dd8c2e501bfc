//! `tally report` pages opened in headless Chromium, as a reader opens them:
//! for a report of each kind of input the fixtures have (a Kineto trace with
//! NCCL, a multi-device artifact, two runs compared, an XPlane profile) the
//! page loads with no uncaught exception, no console error or warning and no
//! browser error, requests nothing but itself, draws something in both the
//! light and the dark colour scheme, and every figure of its tables (after
//! its scripts ran) is the figure of the embedded `tally-data` JSON it names.
//!
//! docs/report.md's screenshots are made here too: with
//! `TALLY_UPDATE_SCREENSHOTS=1` they are written to `docs/images/`; else a
//! fresh rendering (in `target/tmp`) is compared with the committed image,
//! loosely (see [`looks_alike`]), so a changed page fails until its
//! pictures are made again.
//!
//! Chromium is Debian's `chromium` package, which `cargo xtask test`
//! installs; where there is none the tests say so through tally-testkit's
//! `skip`. `cdp.rs` says how the browser is driven and why.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

#[path = "report_chromium/cdp.rs"]
mod cdp;
#[path = "report_chromium/dom.rs"]
mod dom;
#[path = "report_chromium/png.rs"]
mod png;
#[path = "report_chromium/tables.rs"]
mod tables;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cdp::{Rendered, find_chromium, render};
use png::Image;

/// The viewport of the checks: a laptop's width, a long page.
const WIDTH: u32 = 1280;
const HEIGHT: u32 = 2000;

/// The viewport of docs/report.md's pictures: the top of the page (each
/// picture under 300 KB).
const PICTURE_HEIGHT: u32 = 1400;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn kineto(name: &str) -> PathBuf {
    workspace().join("crates/tally-trace/tests/fixtures/kineto").join(name)
}

/// Writes the report of `args` (`tally report ARGS... -o FILE`, run in
/// the workspace) into `dir`.
fn report(dir: &Path, args: &[PathBuf]) -> PathBuf {
    let page = dir.join("report.html");
    let output = Command::new(env!("CARGO_BIN_EXE_tally"))
        .current_dir(workspace())
        .arg("report")
        .args(args)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(output.status.success(), "tally report {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    page
}

/// The Chromium to use, or why there is none (the caller skips).
fn chromium() -> Result<PathBuf, String> {
    find_chromium()
}

/// A reader's clicks before the DOM is read: each sortable table sorted,
/// descending (a first click), by its first column whose cells all have a
/// numeric `data-value`, so the tables are checked as the page's script
/// leaves them, their order with them. Answers how many it sorted.
const SORT_EVERY_TABLE: &str = r#"(() => {
  let sorted = 0;
  for (const table of document.querySelectorAll("table.tally-table.sortable")) {
    const headers = table.querySelectorAll("thead th");
    const rows = Array.from(table.tBodies[0] ? table.tBodies[0].rows : []);
    for (let column = 1; column < headers.length; column++) {
      const numeric = rows.length > 1 && rows.every(row => {
        const cell = row.children[column];
        const value = cell && cell.getAttribute("data-value");
        return value !== null && value !== "" && !isNaN(Number(value));
      });
      if (numeric) { headers[column].click(); sorted += 1; break; }
    }
  }
  return sorted;
})()"#;

/// Renders `page` in a `width` x `height` viewport and checks everything
/// a reader would see; returns what Chromium showed.
fn check_page(chromium: &Path, page: &Path, width: u32, height: u32) -> Rendered {
    let started = Instant::now();
    let rendered =
        render(chromium, page, width, height, SORT_EVERY_TABLE).unwrap_or_else(|error| panic!("{error}"));
    eprintln!("{}: rendered in {:.2} s", page.display(), started.elapsed().as_secs_f64());
    // Kept for a look when a check fails: target/tmp/report-screenshots/TEST.png.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    let test = std::thread::current().name().unwrap_or("page").replace("::", "-");
    if std::fs::create_dir_all(&shots).is_ok() {
        let _ = std::fs::write(shots.join(format!("{test}.png")), &rendered.light_png);
        let _ = std::fs::write(shots.join(format!("{test}-dark-half.png")), &rendered.dark_png);
    }
    assert!(
        rendered.problems.is_empty(),
        "{}: the page reported problems:\n{}",
        page.display(),
        rendered.problems.join("\n")
    );
    assert!(
        rendered.requests.is_empty(),
        "{}: the page requested other resources: {:?}",
        page.display(),
        rendered.requests
    );
    let layout = &rendered.layout;
    let layout_problems: Vec<String> = [
        (layout["overflow_px"].as_i64().unwrap_or(0) > 0)
            .then(|| format!("the page is {} px wider than the window", layout["overflow_px"])),
        layout["clipped"]
            .as_array()
            .filter(|labels| !labels.is_empty())
            .map(|labels| format!("chart labels cut off at the chart's edge: {labels:?}")),
        layout["overlapping"]
            .as_array()
            .filter(|pairs| !pairs.is_empty())
            .map(|pairs| format!("chart labels drawn over each other: {pairs:?}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(
        layout_problems.is_empty(),
        "{} in a {width} px wide window:\n{}",
        page.display(),
        layout_problems.join("\n")
    );
    for (scheme, image) in [("light", &rendered.light), ("dark", &rendered.dark)] {
        assert_drawn(image, &format!("{} ({scheme})", page.display()));
    }
    assert_eq!((rendered.light.width, rendered.light.height), (width, height), "screenshot size");
    let (light, dark) = (luminance(rendered.light.background().0), luminance(rendered.dark.background().0));
    assert!(
        dark + 64 < light,
        "{}: the dark scheme's background (luminance {dark}) is not darker than the light one's ({light})",
        page.display()
    );
    let (checked, sorted) =
        tables::check(&rendered.dom).unwrap_or_else(|error| panic!("{}: {error}", page.display()));
    eprintln!(
        "{}: {checked} figures of the tables checked against tally-data, {sorted} tables sorted by the page's \
         script checked in order",
        page.display()
    );
    assert!(sorted > 0, "{}: no table was sorted by a click", page.display());
    rendered
}

/// A screenshot of a page, not of an empty or broken one: many colours
/// (text antialiasing, the palette) and a share of pixels off the
/// background.
fn assert_drawn(image: &Image, what: &str) {
    let colours = image.colours();
    assert!(colours >= 32, "{what}: the screenshot has {colours} colours: a blank page");
    let (_, drawn_percent) = image.background();
    assert!(
        drawn_percent >= 2,
        "{what}: {drawn_percent}% of the pixels differ from the background: nearly blank"
    );
}

/// Rec. 601 luma of a colour, 0-255.
fn luminance([red, green, blue]: [u8; 3]) -> u32 {
    (299 * u32::from(red) + 587 * u32::from(green) + 114 * u32::from(blue)) / 1000
}

#[test]
fn kineto_trace_with_nccl() {
    let chromium = match chromium() {
        Ok(chromium) => chromium,
        Err(why) => return tally_testkit::skip(why),
    };
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path(), &[kineto("nccl-distributed.json.gz")]);
    let rendered = check_page(&chromium, &page, WIDTH, HEIGHT);
    assert!(rendered.dom.contains("communication"), "the NCCL trace's page names communication");
}

#[test]
fn multi_device_artifact() {
    let chromium = match chromium() {
        Ok(chromium) => chromium,
        Err(why) => return tally_testkit::skip(why),
    };
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path(), &[workspace().join("examples/serving-run.jsonl")]);
    let rendered = check_page(&chromium, &page, WIDTH, HEIGHT);
    let data = tables::embedded_data(&dom::parse(&rendered.dom).unwrap()).unwrap();
    assert!(data["devices"].as_array().unwrap().len() >= 2, "examples/serving-run.jsonl has two GPUs");
}

#[test]
fn two_runs_compared() {
    let chromium = match chromium() {
        Ok(chromium) => chromium,
        Err(why) => return tally_testkit::skip(why),
    };
    let dir = tempfile::tempdir().unwrap();
    let page = report(
        dir.path(),
        &["--compare".into(), kineto("diff-control-rank3.json.gz"), kineto("diff-test-rank1.json.gz")],
    );
    check_page(&chromium, &page, WIDTH, HEIGHT);
}

#[test]
fn xplane_profile() {
    let chromium = match chromium() {
        Ok(chromium) => chromium,
        Err(why) => return tally_testkit::skip(why),
    };
    let profile =
        workspace().join("crates/tally-trace/tests/fixtures/xplane/synthetic-nvidia-2gpu.xplane.pb");
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path(), &[profile]);
    check_page(&chromium, &page, WIDTH, HEIGHT);
}

/// docs/report.md's pictures (also README.md's): the report of the
/// shipped example run and a comparison. Each committed picture exists,
/// is under 300 KB and has the viewport's size; where Chromium is, each is
/// made again (into `target/tmp/report-screenshots`, with its dark twin
/// for a look) and compared with the committed one.
#[test]
fn docs_screenshots_stay_true() {
    let update = std::env::var_os("TALLY_UPDATE_SCREENSHOTS").is_some_and(|value| value == "1");
    let images = workspace().join("docs/images");
    let fresh = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&fresh).unwrap();
    let chromium = chromium();
    if let Err(why) = &chromium {
        tally_testkit::skip(format!("the pictures are not made again: {why}"));
    }
    // The pictures were made where the page's sans-serif is DejaVu Sans (the
    // test command installs fonts-dejavu-core); with another font every
    // line of text moves, so the likeness is not judged there.
    let font = sans_serif_font();
    let comparable = font.as_deref().is_ok_and(|family| family.contains("DejaVu Sans"));
    let pictures: [(&str, &[&str]); 2] = [
        ("report-serving-run.png", &["examples/serving-run.jsonl"]),
        (
            "report-diff.png",
            &[
                "--compare",
                "crates/tally-trace/tests/fixtures/kineto/diff-control-rank3.json.gz",
                "crates/tally-trace/tests/fixtures/kineto/diff-test-rank1.json.gz",
            ],
        ),
    ];
    for (name, args) in pictures {
        let committed = images.join(name);
        let rendered = chromium.as_ref().ok().map(|chromium| {
            let dir = tempfile::tempdir().unwrap();
            // Relative paths, from the workspace: the page names its inputs,
            // and the picture must not show this machine's directories.
            let args: Vec<PathBuf> = args.iter().map(PathBuf::from).collect();
            let page = report(dir.path(), &args);
            let rendered = check_page(chromium, &page, WIDTH, PICTURE_HEIGHT);
            std::fs::write(fresh.join(name), &rendered.light_png).unwrap();
            std::fs::write(fresh.join(name.replace(".png", "-dark-half.png")), &rendered.dark_png).unwrap();
            if update {
                std::fs::write(&committed, &rendered.light_png).unwrap();
                eprintln!("wrote {} ({} bytes)", committed.display(), rendered.light_png.len());
            }
            rendered
        });
        let bytes = std::fs::read(&committed).unwrap_or_else(|error| {
            panic!("{}: {error} (TALLY_UPDATE_SCREENSHOTS=1 makes it)", committed.display())
        });
        assert!(
            bytes.len() < 300 * 1024,
            "{}: {} bytes, over the 300 KB a picture in the docs may take",
            committed.display(),
            bytes.len()
        );
        let old = Image::decode(&bytes).unwrap_or_else(|error| panic!("{}: {error}", committed.display()));
        assert_eq!((old.width, old.height), (WIDTH, PICTURE_HEIGHT), "{}: size", committed.display());
        let Some(rendered) = rendered else { continue };
        if !comparable {
            tally_testkit::skip(format!(
                "{name}: not compared with a fresh rendering: the sans-serif font here is {font:?}, not \
                 DejaVu Sans (fonts-dejavu-core)"
            ));
            continue;
        }
        if let Err(why) = looks_alike(&old, &rendered.light) {
            panic!(
                "{} no longer shows what the page shows ({why}); the fresh rendering is {}; \
                 run `TALLY_UPDATE_SCREENSHOTS=1 cargo test -p tally-ml --test report_chromium \
                 docs_screenshots` and look at the pictures before committing them",
                committed.display(),
                fresh.join(name).display()
            );
        }
    }
}

/// The family fontconfig gives for `sans-serif` (what Chromium draws the
/// page's `system-ui, ..., sans-serif` with on Linux), or why unknown.
fn sans_serif_font() -> Result<String, String> {
    let output = Command::new("fc-match")
        .args(["-f", "%{family}", "sans-serif"])
        .output()
        .map_err(|error| format!("fc-match: {error}"))?;
    if !output.status.success() {
        return Err(format!("fc-match: {}", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether two renderings of a page show the same page: same size, and the
/// mean brightness of 16 x 16 squares differing by more than 24 (of 255) in
/// at most 3% of the squares. Not pixel equality: another Chromium or
/// FreeType version draws the same text with other antialiasing and
/// hinting, and another font where DejaVu is missing, which moves pixels
/// inside a line of text but not whole squares of the layout; a page whose
/// sections, charts or colours changed moves many.
fn looks_alike(old: &Image, new: &Image) -> Result<(), String> {
    if (old.width, old.height) != (new.width, new.height) {
        return Err(format!("{}x{} then, {}x{} now", old.width, old.height, new.width, new.height));
    }
    let (old, new) = (old.block_means(16), new.block_means(16));
    let differing = old.iter().zip(&new).filter(|(a, b)| a.abs_diff(**b) > 24).count();
    if differing * 100 > old.len() * 3 {
        return Err(format!("{differing} of {} squares of 16 x 16 pixels differ", old.len()));
    }
    Ok(())
}

/// The table check can fail: on a page `tally report` writes it passes,
/// and a figure's `data-value` or text changed, a table marked sorted the
/// other way, or a kernel's row dropped, each make it fail. Needs no Chromium (the page as written parses as
/// Chromium's serialization does).
#[test]
fn the_table_check_catches_a_wrong_figure() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path(), &[kineto("nccl-distributed.json.gz")]);
    let html = std::fs::read_to_string(page).unwrap();
    assert!(tables::check(&html).unwrap().0 > 10, "the page has keyed cells");

    let cell = r#"data-key="/devices/0/busy_ns" data-value=""#;
    let at = html.find(cell).expect("the overview shows device 0's busy time") + cell.len();
    let digits: String = html[at..].chars().take_while(char::is_ascii_digit).collect();
    let busy: u64 = digits.parse().unwrap();
    let wrong_value = format!("{}{}{}", &html[..at], busy + 1, &html[at + digits.len()..]);
    let error = tables::check(&wrong_value).unwrap_err();
    assert!(error.contains("/devices/0/busy_ns") && error.contains("data-value"), "{error}");

    let text_at = at + html[at..].find('>').unwrap() + 1;
    let text_end = text_at + html[text_at..].find('<').unwrap();
    let doubled = format!("{}.00 s", busy.div_ceil(1_000_000_000) * 2);
    let wrong_text = format!("{}{doubled}{}", &html[..text_at], &html[text_end..]);
    let error = tables::check(&wrong_text).unwrap_err();
    assert!(error.contains("/devices/0/busy_ns") && error.contains("reads as"), "{error}");

    let kernels = html.find(r#"data-table="kernels""#).expect("the page has a kernel table");
    let header = kernels + html[kernels..].find(r#"<th scope="col">summed</th>"#).unwrap();
    let misordered = format!(
        "{}<th scope=\"col\" aria-sort=\"ascending\">summed</th>{}",
        &html[..header],
        &html[header + r#"<th scope="col">summed</th>"#.len()..]
    );
    let error = tables::check(&misordered).unwrap_err();
    assert!(
        error.contains("table kernels: sorted on column 3"),
        "the kernels go by summed time, descending: {error}"
    );

    let row = r#"<tr data-key="/devices/0/kernels/0">"#;
    let start = html.find(row).expect("the kernel table shows the first kernel");
    let end = start + html[start..].find("</tr>").unwrap() + "</tr>".len();
    let dropped = format!("{}{}", &html[..start], &html[end..]);
    let error = tables::check(&dropped).unwrap_err();
    assert!(error.contains("/devices/0/kernels/0"), "{error}");
}

/// The browser check can fail: a report with an uncaught exception, a
/// console error, an image from elsewhere, a chart label cut off, two
/// drawn over each other and a block wider than the window added reports
/// them all.
#[test]
fn the_browser_check_catches_errors_and_requests() {
    let chromium = match chromium() {
        Ok(chromium) => chromium,
        Err(why) => return tally_testkit::skip(why),
    };
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path(), &[workspace().join("examples/serving-run.jsonl")]);
    let html = std::fs::read_to_string(&page).unwrap();
    let broken = html.replacen(
        "</body>",
        r#"<img src="https://tally.invalid/logo.png"><svg width="120" height="60"><text x="-30" y="20">cut off</text><text x="10" y="45">one</text><text x="14" y="47">two</text></svg><div style="width:3000px">wide</div><script>console.error("drawn wrong"); notAFunction();</script></body>"#,
        1,
    );
    assert_ne!(broken, html, "the page has a </body>");
    std::fs::write(&page, broken).unwrap();
    let rendered = render(&chromium, &page, 800, 600, "0").unwrap();
    let problems = rendered.problems.join("\n");
    assert!(problems.contains("console.error: drawn wrong"), "{problems}");
    assert!(problems.contains("uncaught exception") && problems.contains("notAFunction"), "{problems}");
    assert_eq!(rendered.requests, ["https://tally.invalid/logo.png"]);
    let layout = &rendered.layout;
    assert_eq!(layout["clipped"], serde_json::json!(["cut off"]), "{layout}");
    assert_eq!(layout["overlapping"], serde_json::json!(["one / two"]), "{layout}");
    assert!(layout["overflow_px"].as_i64().unwrap() > 2000, "{layout}");
}
