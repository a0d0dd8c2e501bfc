//! `cargo xtask bench`: each capability's benchmark, beside its Python
//! reference in the same run where that is installed, with ratios.
//!
//! A benchmark is a module with `pub fn run(ctx: &mut BenchContext) ->
//! anyhow::Result<()>`, listed in [`BENCHES`]. It measures whole commands
//! (the release `tally` binary, a reference Python script) as child processes
//! so wall time and peak RSS are the process's own, and records [`Row`]s.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::workspace_root;

mod account;
mod aggregate;
mod artifact;
mod breakdown;
mod conform;
mod distributed;
pub mod generate;
mod onnx;
mod paired_overhead;
mod profile;
mod python_account;
mod python_profile;
mod torch;
mod trace;

pub use distributed::generate_artifact_set;
pub use trace::generate_real_trace;

type BenchFn = fn(&mut BenchContext) -> anyhow::Result<()>;

/// Every benchmark, by name, in the order they run.
const BENCHES: &[(&str, BenchFn)] = &[
    ("artifact", artifact::run),
    ("account", account::run),
    ("python-account", python_account::run),
    ("profile", profile::run),
    ("python-profile", python_profile::run),
    ("aggregate", aggregate::run),
    ("trace", trace::run),
    ("trace-xplane", trace::run_xplane),
    ("breakdown", breakdown::run),
    ("onnx", onnx::run),
    ("torch", torch::run),
    ("conform", conform::run),
    ("distributed", distributed::run),
];

/// What one benchmark measured of one program run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Measure {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Peak resident set size, when measured.
    pub peak_rss_bytes: Option<u64>,
}

/// One line of the report: tally's figure and, where run, the reference's.
#[derive(Debug, Clone)]
pub struct Row {
    /// The benchmark, e.g. `artifact decode (v2)`.
    pub name: String,
    /// Input size in bytes, for MB/s.
    pub bytes: Option<u64>,
    /// Items processed (records, calls, events), for items/s.
    pub items: Option<u64>,
    /// What the items are, e.g. `records`.
    pub item_unit: &'static str,
    /// tally's measurement.
    pub tally: Measure,
    /// The Python reference's measurement on the same input, if it ran.
    pub reference: Option<Measure>,
    /// A target from the issue, or anything else worth printing.
    pub note: String,
}

impl Row {
    /// A row with tally's figure only.
    pub fn new(name: impl Into<String>, tally: Measure) -> Self {
        Self {
            name: name.into(),
            bytes: None,
            items: None,
            item_unit: "items",
            tally,
            reference: None,
            note: String::new(),
        }
    }
}

/// Shared state of one `cargo xtask bench` run.
pub struct BenchContext {
    python: Option<PathBuf>,
    scratch: PathBuf,
    quick: bool,
    tally_bin: Option<PathBuf>,
    rows: Vec<Row>,
}

impl BenchContext {
    /// The reference Python (stormlog, vertebrae installed), or `None`.
    pub fn python(&self) -> Option<&Path> {
        self.python.as_deref()
    }

    /// A folder for generated inputs, kept between runs (`target/bench`).
    pub fn scratch_dir(&self) -> &Path {
        &self.scratch
    }

    /// Smaller inputs for a smoke run.
    pub fn quick(&self) -> bool {
        self.quick
    }

    /// The release `tally` binary, built on first use.
    pub fn tally_bin(&mut self) -> anyhow::Result<PathBuf> {
        if let Some(path) = &self.tally_bin {
            return Ok(path.clone());
        }
        cargo_build_release(&["-p", "tally-ml"], "cargo build --release -p tally-ml", |_| {})?;
        let path = target_dir().join("release/tally");
        self.tally_bin = Some(path.clone());
        Ok(path)
    }

    /// Builds `package`'s example `example` in release mode and returns its
    /// executable (cargo checks it is up to date on every call).
    pub fn release_example(&self, package: &str, example: &str) -> anyhow::Result<PathBuf> {
        self.release_example_with(package, example, &[], |_| {})
    }

    /// [`BenchContext::release_example`] with `features` of `package` on and
    /// the cargo command adjusted first (e.g. its `PATH`, for libtorch).
    pub fn release_example_with(
        &self,
        package: &str,
        example: &str,
        features: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> anyhow::Result<PathBuf> {
        let features = features.join(",");
        let mut args = vec!["-p", package, "--example", example];
        if !features.is_empty() {
            args.extend(["--features", &features]);
        }
        cargo_build_release(&args, &format!("cargo build --release --example {example}"), configure)?;
        Ok(target_dir().join("release/examples").join(example))
    }

    /// Runs the reference Python on `script` with `args` (unmeasured) and
    /// parses the JSON it prints. `None` when there is no reference Python,
    /// or, after printing `{label} not run: <why>`, when the script fails
    /// (e.g. an optional package such as onnxruntime is missing): the
    /// benchmark then goes on with tally's figures alone.
    pub fn run_reference_json<I, S>(&self, label: &str, script: &str, args: I) -> Option<Value>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let python = self.python()?;
        let why = match Command::new(python).arg("-c").arg(script).args(args).output() {
            Ok(output) if output.status.success() => match serde_json::from_slice(&output.stdout) {
                Ok(value) => return Some(value),
                Err(error) => format!("its output is not JSON ({error})"),
            },
            Ok(output) => String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or("").to_owned(),
            Err(error) => error.to_string(),
        };
        println!("{label} not run: {why}");
        None
    }

    /// Runs a child to completion, measuring wall time and peak RSS; fails
    /// when it exits non-zero. Its stdout is discarded, stderr inherited.
    pub fn run_measured(&self, command: &mut Command) -> anyhow::Result<Measure> {
        run_measured(command, false).map(|(measure, _)| measure)
    }

    /// Like [`BenchContext::run_measured`], also returning the child's stdout.
    pub fn run_measured_capture(&self, command: &mut Command) -> anyhow::Result<(Measure, String)> {
        run_measured(command, true)
    }

    /// Adds a row to the report.
    pub fn record(&mut self, row: Row) {
        print_row(&row);
        self.rows.push(row);
    }
}

/// `cargo build --release --quiet ARGS` in the workspace root.
fn cargo_build_release(
    args: &[&str],
    what: &str,
    configure: impl FnOnce(&mut Command),
) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    configure(&mut command);
    command.current_dir(workspace_root()).args(["build", "--release", "--quiet"]).args(args);
    crate::python::status(&mut command, what)
}

/// Where cargo puts what it builds: `CARGO_TARGET_DIR`, else `target`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace_root().join("target"), PathBuf::from)
}

/// A generated input reused across runs: `path` is kept while the stamp
/// beside it (`path` with extension `count`) holds its size followed by the
/// other figures `generate` returned; otherwise `generate` writes `path` and
/// returns those figures, the file's size first.
pub fn cached_input<const N: usize>(
    path: &Path,
    generate: impl FnOnce(&Path) -> anyhow::Result<[u64; N]>,
) -> anyhow::Result<[u64; N]> {
    let stamp = path.with_extension("count");
    if let (Ok(meta), Ok(count)) = (std::fs::metadata(path), std::fs::read_to_string(&stamp)) {
        let parsed: Result<Vec<u64>, _> = count.split_whitespace().map(str::parse::<u64>).collect();
        if let Ok(Ok(figures)) = parsed.map(<[u64; N]>::try_from)
            && figures.first() == Some(&meta.len())
        {
            return Ok(figures);
        }
    }
    println!("generating {} ...", path.display());
    let figures = generate(path)?;
    let text: Vec<String> = figures.iter().map(u64::to_string).collect();
    std::fs::write(&stamp, text.join(" "))?;
    Ok(figures)
}

/// The fastest of three runs of `run`, by the seconds `seconds` reads from
/// each: a run of tally of a fraction of a second on a shared machine
/// varies from one run to the next, where a reference's seconds vary far
/// less, so each bench that times tally keeps its best.
pub fn best_of_three<T>(
    mut run: impl FnMut() -> anyhow::Result<T>,
    seconds: impl Fn(&T) -> f64,
) -> anyhow::Result<T> {
    let mut best = run()?;
    for _ in 1..3 {
        let next = run()?;
        if seconds(&next) < seconds(&best) {
            best = next;
        }
    }
    Ok(best)
}

/// Parses the JSON a benchmark program printed.
pub fn parse_json(stdout: &str, what: &str) -> anyhow::Result<Value> {
    serde_json::from_str(stdout.trim()).with_context(|| what.to_owned())
}

/// The number under `key` of a benchmark program's JSON output.
pub fn json_f64(value: &Value, key: &str, what: &str) -> anyhow::Result<f64> {
    value[key].as_f64().with_context(|| format!("{what} lacks {key}"))
}

fn run_measured(command: &mut Command, capture: bool) -> anyhow::Result<(Measure, String)> {
    use std::process::Stdio;
    command.stdin(Stdio::null());
    command.stdout(if capture { Stdio::piped() } else { Stdio::null() });
    let started = Instant::now();
    let mut child = command.spawn().with_context(|| format!("starting {command:?}"))?;
    let mut output = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        std::io::Read::read_to_string(&mut stdout, &mut output)?;
    }
    let (status, peak_rss_bytes) = wait_with_rusage(child.id())?;
    let seconds = started.elapsed().as_secs_f64();
    if status != 0 {
        bail!("{command:?} exited with status {status}");
    }
    Ok((Measure { seconds, peak_rss_bytes: Some(peak_rss_bytes) }, output))
}

/// Waits for one child and returns its exit status and its own peak RSS.
/// `wait4` reports the child's rusage alone, unlike `getrusage(CHILDREN)`,
/// which keeps the maximum over every child ever waited for.
#[allow(unsafe_code, reason = "wait4 has no safe wrapper in std")]
fn wait_with_rusage(pid: u32) -> anyhow::Result<(i32, u64)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(pid).context("pid out of range")?;
    // SAFETY: pointers are to live locals; pid is our own unwaited child.
    let result = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if result < 0 {
        bail!("wait4 failed: {}", std::io::Error::last_os_error());
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    // ru_maxrss is in KiB on Linux.
    Ok((code, u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024))
}

fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn print_row(row: &Row) {
    let mut line = format!("{:<44} tally {:>9.3} s", row.name, row.tally.seconds);
    if let Some(bytes) = row.bytes {
        line += &format!(" {:>9.1} MB/s", megabytes(bytes) / row.tally.seconds);
    }
    if let Some(items) = row.items {
        line += &format!(" {:>12.0} {}/s", items as f64 / row.tally.seconds, row.item_unit);
    }
    if let Some(rss) = row.tally.peak_rss_bytes {
        line += &format!(" rss {:>8.1} MB", megabytes(rss));
    }
    if let Some(reference) = row.reference {
        line += &format!(" | reference {:>9.3} s", reference.seconds);
        if let Some(rss) = reference.peak_rss_bytes {
            line += &format!(" rss {:>8.1} MB", megabytes(rss));
        }
        line += &format!(" | speed x{:.1}", reference.seconds / row.tally.seconds);
        if let (Some(ours), Some(theirs)) = (row.tally.peak_rss_bytes, reference.peak_rss_bytes) {
            line += &format!(" rss x{:.2}", ours as f64 / theirs as f64);
        }
    }
    if !row.note.is_empty() {
        line += &format!("  [{}]", row.note);
    }
    println!("{line}");
    let _ = std::io::stdout().flush();
}

fn row_json(row: &Row) -> Value {
    let measure = |m: &Measure| serde_json::json!({"seconds": m.seconds, "peak_rss_bytes": m.peak_rss_bytes});
    serde_json::json!({
        "name": row.name,
        "bytes": row.bytes,
        "items": row.items,
        "item_unit": row.item_unit,
        "tally": measure(&row.tally),
        "reference": row.reference.as_ref().map(measure),
        "speed_ratio": row.reference.map(|r| r.seconds / row.tally.seconds),
        "note": row.note,
    })
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let json = args.iter().any(|arg| arg == "--json");
    let quick = args.iter().any(|arg| arg == "--quick");
    let only: Vec<&str> = args.iter().filter(|arg| !arg.starts_with("--")).map(String::as_str).collect();
    for name in &only {
        if !BENCHES.iter().any(|(known, _)| known == name) {
            let names: Vec<&str> = BENCHES.iter().map(|(known, _)| *known).collect();
            bail!("unknown benchmark {name:?}; known: {}", names.join(", "));
        }
    }
    let python = crate::python::existing();
    if python.is_none() {
        println!(
            "reference Python (stormlog, vertebrae) not found: run `cargo xtask python` or set TALLY_PYTHON; \
             measuring tally alone"
        );
    }
    let scratch = workspace_root().join("target/bench");
    std::fs::create_dir_all(&scratch)?;
    let mut ctx = BenchContext { python, scratch, quick, tally_bin: None, rows: Vec::new() };
    for (name, bench) in BENCHES {
        if !only.is_empty() && !only.contains(name) {
            continue;
        }
        println!("== {name}");
        bench(&mut ctx).with_context(|| format!("benchmark {name}"))?;
    }
    if json {
        let rows: Vec<Value> = ctx.rows.iter().map(row_json).collect();
        let path = workspace_root().join("target/bench/results.json");
        std::fs::write(&path, serde_json::to_string_pretty(&rows)?)?;
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(())
}
