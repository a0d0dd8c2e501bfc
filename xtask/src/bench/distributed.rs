//! Runs across machines (issue 39): a run's files accounted where they are,
//! as partials that merge, beside one process reading everything, in the
//! same run.
//!
//! Inputs, generated once and cached under `target/bench`:
//!
//! - **A rank set of 32 Kineto traces** of about 100 MB each (4 of 25 MB
//!   with `--quick`: the first kernel is 20 MB in): the trace bench's real-trace file (shifted copies of the
//!   real fixture traces, laid out as Kineto writes them) made once, then
//!   copied per rank with the rank's own `distributedInfo` and `traceName`
//!   (its events as they are: each trace is its own device, as tally keys
//!   a trace's devices by the trace).
//! - **A 64-file artifact set**: the artifact generator's embedded (schema
//!   2/3) form with 64 ranks, split by rank into one file per rank (the
//!   records of no rank, the capture's own, go to the first).
//!
//! Rows, for each set: one process (`tally account` of every file, one
//! thread and every core); the partial path with the command (`tally
//! partial` of each worker's share, the workers at once, one thread each,
//! then `tally account` of the partials) with 1 and 2 workers; Dask
//! (`tally.dask.account_paths` on a `LocalCluster` of 1 and 2 worker
//! processes, one thread each; the time of the call, the cluster already
//! up); MPI (`mpirun -np 2 mpi-account`); and, for the traces, HTA's
//! multi-rank `TraceAnalysis` load of the same files where a Python with
//! HTA is found. Each prints its speedup over one process and whether its
//! result equals one process's. Then: a trace's partial as a share of the
//! trace (uncompressed, and gzip as stored), a worker's peak RSS as the
//! files it reads grow (`tally partial` of 1 to 16 traces), and the merge
//! of 10,000 small partials (`partial_merge`, an example of tally-tests).
//!
//! Targets (issue 39): two workers at least 1.7x one on this 2-core
//! machine; a worker's peak RSS independent of the number of files it reads
//! (under 100 MB on the trace set); a trace's partial at most 5% of the
//! trace's size; 10,000 partials merged in under 2 s; exact equality
//! everywhere.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::Value;

use super::generate::{ArtifactSpec, GenForm, write_artifact};
use super::{BenchContext, Measure, Row, cached_input, json_f64, parse_json};
use crate::workspace_root;

/// Files in the artifact set (one per rank).
const ARTIFACT_FILES: u32 = 64;
/// The traces' run: every partial of a split run must share it.
const RUN_ID: &str = "bench-distributed";

/// `tally.dask.account_paths` (mode `dask`, N worker processes) or
/// `tally.accounting.account_paths` (mode `single`) of the paths; prints
/// the call's seconds and a digest of the accounting's repr, so that two
/// runs' results can be compared.
const DASK_ACCOUNT: &str = r#"
import hashlib, inspect, json, sys, time
mode, workers, run_id, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
kwargs = {"run_id": run_id} if run_id else {}

def digest(result):
    accounting = result[1] if isinstance(result, tuple) else result
    return hashlib.sha256(repr(accounting).encode()).hexdigest()

if mode == "single":
    from tally.accounting import account_paths
    started = time.perf_counter()
    result = account_paths(paths, **kwargs)
    print(json.dumps({"seconds": time.perf_counter() - started, "digest": digest(result)}))
    sys.exit(0)
import tally.dask
from distributed import Client, LocalCluster
if "run_id" not in inspect.signature(tally.dask.account_paths).parameters:
    kwargs = {}
with LocalCluster(processes=True, n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster:
    with Client(cluster) as client:
        client.wait_for_workers(workers)
        started = time.perf_counter()
        result = tally.dask.account_paths(paths, client, **kwargs)
        seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "digest": digest(result)}))
"#;

/// HTA's load of every rank's trace into one `TraceAnalysis`, as its users
/// load a multi-rank run.
const HTA_LOAD: &str = "import logging, os, sys\n\
logging.disable(logging.WARNING)\n\
from hta.trace_analysis import TraceAnalysis\n\
paths = [os.path.abspath(path) for path in sys.argv[1:]]\n\
analysis = TraceAnalysis(trace_files=dict(enumerate(paths)), trace_dir=os.path.dirname(paths[0]))\n\
print(len(analysis.t.traces))\n";

/// One input set: its files, their bytes, and how it is run.
struct InputSet {
    /// For row names, e.g. `32 traces (3200 MB)`.
    label: String,
    paths: Vec<PathBuf>,
    bytes: u64,
    /// `--run-id` for the traces (artifacts carry their own).
    run_id: Option<&'static str>,
    /// Where HTA can load it too.
    traces: bool,
}

/// What one process took and printed: the rows after it compare to it.
struct Baseline {
    seconds: f64,
    /// Its output, in a file: the JSON of a large run is megabytes, and
    /// held here it would raise this process's peak RSS, which every
    /// child's figure starts from.
    output: PathBuf,
}

impl Baseline {
    /// Whether the file `other` holds the same bytes as the baseline's
    /// output (compared a block at a time); `other` is removed.
    fn same(&self, other: &Path) -> anyhow::Result<bool> {
        let mut ours = BufReader::new(File::open(&self.output)?);
        let mut theirs = BufReader::new(File::open(other)?);
        let (mut a, mut b) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
        let same = loop {
            let read = ours.read(&mut a)?;
            if read == 0 {
                break theirs.read(&mut b)? == 0;
            }
            if theirs.read_exact(&mut b[..read]).is_err() || a[..read] != b[..read] {
                break false;
            }
        };
        std::fs::remove_file(other)?;
        Ok(same)
    }
}

/// Runs `command` to completion with its standard output in the file
/// `out`, measured as [`BenchContext::run_measured`] measures.
fn run_to_file(command: &mut Command, out: &Path) -> anyhow::Result<Measure> {
    command.stdin(Stdio::null()).stdout(File::create(out)?);
    let started = Instant::now();
    let child = command.spawn().with_context(|| format!("starting {command:?}"))?;
    let (status, peak_rss_bytes) = super::wait_with_rusage(child.id())?;
    let seconds = started.elapsed().as_secs_f64();
    if status != 0 {
        bail!("{command:?} exited with status {status}");
    }
    Ok(Measure { seconds, peak_rss_bytes: Some(peak_rss_bytes) })
}

/// Copies the rank-set template with rank `rank`'s header.
fn write_rank(template: &Path, path: &Path, rank: usize, ranks: usize) -> anyhow::Result<[u64; 1]> {
    let mut input = File::open(template)?;
    let mut head = vec![0u8; 1 << 16];
    let read = input.read(&mut head)?;
    head.truncate(read);
    let head = String::from_utf8_lossy(&head).into_owned();
    let Some(events) = head.find("\"traceEvents\"") else {
        bail!("{} has no traceEvents", template.display())
    };
    let mut out = BufWriter::new(File::create(path)?);
    for line in head[..events].lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("\"distributedInfo\"") {
            writeln!(
                out,
                "  \"distributedInfo\": {{\"backend\":\"nccl\",\"rank\":{rank},\"world_size\":{ranks}}},"
            )?;
        } else if trimmed.starts_with("\"traceName\"") {
            writeln!(out, "  \"traceName\": \"/tmp/trace_rank_{rank}.json\",")?;
        } else {
            writeln!(out, "{line}")?;
        }
    }
    out.write_all(b"  ")?;
    input.seek(SeekFrom::Start(events as u64))?;
    std::io::copy(&mut input, &mut out)?;
    out.flush()?;
    Ok([std::fs::metadata(path)?.len()])
}

/// The rank set: the trace bench's real-trace file of `rank_bytes`, copied
/// per rank.
fn rank_traces(ctx: &BenchContext, ranks: usize, rank_bytes: u64) -> anyhow::Result<InputSet> {
    let (template, _) = super::trace::real_trace(ctx.scratch_dir(), rank_bytes)?;
    let folder = ctx.scratch_dir().join(format!("kineto-ranks-{ranks}x{}mb", rank_bytes / 1_000_000));
    std::fs::create_dir_all(&folder)?;
    let (mut paths, mut bytes) = (Vec::new(), 0);
    for rank in 0..ranks {
        let path = folder.join(format!("rank{rank}.json"));
        let [size] = cached_input(&path, |path| write_rank(&template, path, rank, ranks))?;
        bytes += size;
        paths.push(path);
    }
    Ok(InputSet {
        label: format!("{ranks} traces ({} MB)", bytes / 1_000_000),
        paths,
        bytes,
        run_id: Some(RUN_ID),
        traces: true,
    })
}

/// The rank an embedded artifact line's context names (`"rank": N`), if any.
fn line_rank(line: &str) -> Option<usize> {
    let at = line.find("\"rank\": ")? + "\"rank\": ".len();
    let digits: &str = &line[at..];
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Splits a generated artifact into one file per rank.
fn split_by_rank(whole: &Path, paths: &[PathBuf]) -> anyhow::Result<()> {
    let mut outs = paths
        .iter()
        .map(|path| Ok(BufWriter::new(File::create(path)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for line in BufReader::with_capacity(1 << 20, File::open(whole)?).lines() {
        let line = line?;
        let out = &mut outs[line_rank(&line).filter(|&rank| rank < paths.len()).unwrap_or(0)];
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    for mut out in outs {
        out.flush()?;
    }
    Ok(())
}

/// The artifact set's files in `folder`.
fn set_paths(folder: &Path) -> Vec<PathBuf> {
    (0..ARTIFACT_FILES).map(|rank| folder.join(format!("rank{rank}.jsonl"))).collect()
}

/// `cargo xtask bench-generate-artifact-set FOLDER BYTES`: the artifact
/// set, generated whole (embedded form, 64 ranks) and split by rank into
/// FOLDER. Run as a child, as the trace bench's generator is: a child's
/// peak RSS as `wait4` reports it starts from its parent's, and generating
/// would raise this process's.
pub fn generate_artifact_set(args: &[String]) -> anyhow::Result<()> {
    let [folder, bytes] = args else { bail!("usage: bench-generate-artifact-set FOLDER BYTES") };
    let folder = Path::new(folder);
    let whole = folder.join("whole.jsonl");
    let spec = ArtifactSpec { target_bytes: bytes.parse()?, form: GenForm::Embedded, ranks: ARTIFACT_FILES };
    write_artifact(&whole, &spec)?;
    split_by_rank(&whole, &set_paths(folder))?;
    std::fs::remove_file(&whole)?;
    Ok(())
}

/// The 64-file artifact set of `total_bytes`, generated whole, split by rank.
fn artifact_set(ctx: &BenchContext, total_bytes: u64) -> anyhow::Result<InputSet> {
    let folder =
        ctx.scratch_dir().join(format!("artifact-v2-{ARTIFACT_FILES}files-{}mb", total_bytes / 1_000_000));
    std::fs::create_dir_all(&folder)?;
    let paths = set_paths(&folder);
    // The stamp (`set.count`) holds the files' total size; any file missing
    // or changed regenerates the set.
    let sizes =
        || paths.iter().map(|path| std::fs::metadata(path).map(|meta| meta.len())).sum::<Result<u64, _>>();
    let list = folder.join("set.list");
    let [_, bytes] = cached_input(&list, |list| {
        let output = Command::new(std::env::current_exe()?)
            .arg("bench-generate-artifact-set")
            .arg(&folder)
            .arg(total_bytes.to_string())
            .output()?;
        if !output.status.success() {
            bail!("generating {}: {}", folder.display(), String::from_utf8_lossy(&output.stderr));
        }
        let names: Vec<String> = paths.iter().map(|path| path.display().to_string()).collect();
        std::fs::write(list, names.join("\n"))?;
        Ok([std::fs::metadata(list)?.len(), sizes()?])
    })?;
    if sizes().ok() != Some(bytes) {
        // A file changed since: made again (which makes the sizes match).
        std::fs::remove_file(folder.join("set.count"))?;
        return artifact_set(ctx, total_bytes);
    }
    Ok(InputSet {
        label: format!("{ARTIFACT_FILES} artifacts ({} MB)", bytes / 1_000_000),
        paths,
        bytes,
        run_id: None,
        traces: false,
    })
}

/// The note's agreement with one process.
fn agreement(same: bool) -> &'static str {
    if same { "same output as one process" } else { "OUTPUT DIFFERS FROM ONE PROCESS" }
}

/// `tally partial` of `files` into `out` on one thread, as one worker runs it.
fn partial_command(tally: &Path, set: &InputSet, files: &[PathBuf], out: &Path) -> Command {
    let mut command = Command::new(tally);
    command.args(["partial", "--threads", "1"]);
    if let Some(run_id) = set.run_id {
        command.args(["--run-id", run_id]);
    }
    command.args(files).arg("-o").arg(out);
    command
}

/// Sends `command`'s standard error to `log` (`tally partial` says there
/// what it wrote), and says what the log holds where `result` failed.
fn logged<T>(
    command: &mut Command,
    log: &Path,
    run: impl FnOnce(&mut Command) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    command.stderr(File::create(log)?);
    run(command).with_context(|| std::fs::read_to_string(log).unwrap_or_default().trim().to_owned())
}

/// `tally account --format json` of `files` (raw inputs or partials): the
/// JSON layout, which `mpi-account` prints too.
fn account_command(tally: &Path, set: &InputSet, files: &[PathBuf]) -> Command {
    let mut command = Command::new(tally);
    command.args(["account", "--format", "json"]);
    if let Some(run_id) = set.run_id {
        command.args(["--run-id", run_id]);
    }
    command.args(files);
    command
}

/// The files in `workers` consecutive shares.
fn shares(paths: &[PathBuf], workers: usize) -> Vec<Vec<PathBuf>> {
    (0..workers)
        .map(|worker| paths[worker * paths.len() / workers..(worker + 1) * paths.len() / workers].to_vec())
        .collect()
}

/// What the partial path took with some workers.
struct PartialRun {
    /// Wall seconds, the workers' partials and the account of them.
    seconds: f64,
    /// The workers' part (all at once).
    partial_seconds: f64,
    /// The highest peak RSS of a worker.
    worker_rss: u64,
    /// `tally account` of the partials.
    account: Measure,
    /// Whether it printed what one process printed.
    same: bool,
}

/// The partial path: `workers` `tally partial` processes at once, one per
/// share, then `tally account` of their partials.
fn partial_path(
    baseline: &Baseline,
    tally: &Path,
    set: &InputSet,
    workers: usize,
    parts: &Path,
) -> anyhow::Result<PartialRun> {
    let outputs: Vec<PathBuf> =
        (0..workers).map(|worker| parts.join(format!("worker{worker}.part"))).collect();
    let started = Instant::now();
    let mut children = Vec::new();
    for (share, out) in shares(&set.paths, workers).iter().zip(&outputs) {
        let mut command = partial_command(tally, set, share, out);
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(File::create(out.with_extension("log"))?);
        children.push((command.spawn().context("starting tally partial")?, out.with_extension("log")));
    }
    let mut worker_rss = 0;
    for (child, log) in children {
        let (status, rss) = super::wait_with_rusage(child.id())?;
        if status != 0 {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            bail!("tally partial exited with status {status}: {}", said.trim());
        }
        worker_rss = worker_rss.max(rss);
    }
    let partial_seconds = started.elapsed().as_secs_f64();
    let printed = parts.join("partials.out");
    let account = run_to_file(&mut account_command(tally, set, &outputs), &printed)?;
    let seconds = started.elapsed().as_secs_f64();
    for out in &outputs {
        std::fs::remove_file(out)?;
    }
    Ok(PartialRun { seconds, partial_seconds, worker_rss, account, same: baseline.same(&printed)? })
}

/// A row of `set` taking `seconds`, with its speedup over one process.
fn row(set: &InputSet, what: &str, measure: Measure, baseline: &Baseline) -> Row {
    let mut row = Row::new(format!("{}: {what}", set.label), measure);
    row.bytes = Some(set.bytes);
    row.note = format!("x{:.2} one process", baseline.seconds / measure.seconds);
    row
}

/// The note on a 2-worker row: its speed over the 1-worker row's.
fn two_over_one(one: f64, two: f64) -> String {
    let ratio = one / two;
    format!("2 workers vs 1: x{ratio:.2} (target >= 1.7x{})", if ratio < 1.7 { ", BELOW TARGET" } else { "" })
}

/// The Python with `tally` (and Dask) installed: the reference one, else
/// `.venv`.
fn tally_python(ctx: &BenchContext) -> PathBuf {
    ctx.python().map_or_else(|| workspace_root().join(".venv/bin/python"), Path::to_path_buf)
}

/// Why Dask cannot run here, if it cannot.
fn dask_missing(python: &Path) -> Option<String> {
    let output = Command::new(python).args(["-c", "import tally.dask, distributed"]).output();
    match output {
        Ok(output) if output.status.success() => None,
        Ok(output) => Some(String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or("").to_owned()),
        Err(error) => Some(format!("{}: {error}", python.display())),
    }
}

/// The `mpi-account` program, built with tally-distributed's `mpi` feature,
/// and `mpirun`; or why not.
fn mpi_account() -> Result<PathBuf, String> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return Err("mpirun not found (Open MPI)".into());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "tally-distributed",
            "--features",
            "mpi",
            "--bin",
            "mpi-account",
        ])
        .output()
        .map_err(|error| error.to_string())?;
    if !built.status.success() {
        let stderr = String::from_utf8_lossy(&built.stderr);
        let why = stderr.lines().find(|line| line.starts_with("error")).unwrap_or("the build failed");
        return Err(format!("cargo build --features mpi --bin mpi-account failed: {why}"));
    }
    Ok(super::target_dir().join("release/mpi-account"))
}

/// Every row of one input set.
fn run_set(ctx: &mut BenchContext, tally: &Path, set: &InputSet) -> anyhow::Result<()> {
    let parts = ctx.scratch_dir().join("distributed-parts");
    std::fs::create_dir_all(&parts)?;

    // One process, on one thread and on every core (the default).
    let mut one_thread = account_command(tally, set, &set.paths);
    one_thread.args(["--threads", "1"]);
    let single_output = parts.join("one-thread.out");
    let single = run_to_file(&mut one_thread, &single_output)?;
    let output = parts.join("one-process.out");
    let measure = run_to_file(&mut account_command(tally, set, &set.paths), &output)?;
    let baseline = Baseline { seconds: measure.seconds, output };
    let mut first = row(set, "one process, 1 thread", single, &baseline);
    first.note += &format!("; {}", agreement(baseline.same(&single_output)?));
    ctx.record(first);
    let mut all = row(set, "one process (tally account, every core)", measure, &baseline);
    all.note = "the baseline of the speedups below".into();
    ctx.record(all);

    // The partial path with the command.
    let mut one_worker = None;
    for workers in [1, 2] {
        let name = format!("tally partial x{workers} worker{} + account", if workers > 1 { "s" } else { "" });
        match partial_path(&baseline, tally, set, workers, &parts) {
            Ok(run) => {
                let measure = Measure { seconds: run.seconds, peak_rss_bytes: Some(run.worker_rss) };
                let mut row = row(set, &name, measure, &baseline);
                row.note += &format!(
                    "; partials {:.2} s + account of them {:.2} s (rss {:.0} MB); rss is a worker's; {}",
                    run.partial_seconds,
                    run.account.seconds,
                    run.account.peak_rss_bytes.unwrap_or(0) as f64 / 1e6,
                    agreement(run.same),
                );
                match one_worker {
                    None => one_worker = Some(run.seconds),
                    Some(one) => row.note += &format!("; {}", two_over_one(one, run.seconds)),
                }
                ctx.record(row);
            }
            Err(error) => println!("{}: {name} not run: {error:#}", set.label),
        }
    }

    // Dask.
    let python = tally_python(ctx);
    match dask_missing(&python) {
        Some(why) => println!("{}: Dask skipped: `import tally.dask, distributed` failed: {why}", set.label),
        None => run_dask(ctx, set, &python, &baseline)?,
    }

    // MPI.
    match mpi_account() {
        Err(why) => println!("{}: MPI skipped: {why}", set.label),
        Ok(program) => {
            let mut command = Command::new("mpirun");
            command.args(["--allow-run-as-root", "--oversubscribe", "-np", "2"]).arg(program);
            if let Some(run_id) = set.run_id {
                command.args(["--run-id", run_id]);
            }
            command.args(&set.paths);
            let printed = parts.join("mpi.out");
            match run_to_file(&mut command, &printed) {
                Ok(measure) => {
                    let mut row = row(set, "MPI, mpirun -np 2 mpi-account", measure, &baseline);
                    row.note += &format!("; rss is mpirun's; {}", agreement(baseline.same(&printed)?));
                    ctx.record(row);
                }
                Err(error) => println!("{}: MPI not run: {error:#}", set.label),
            }
        }
    }

    // HTA beside tally's one process.
    if set.traces {
        match super::trace::hta_python(ctx) {
            None => println!(
                "{}: HTA not installed (run `cargo xtask python-hta` or set TALLY_HTA_PYTHON)",
                set.label
            ),
            Some(python) => {
                let mut hta = Command::new(&python);
                hta.arg("-c").arg(HTA_LOAD).args(&set.paths);
                match ctx.run_measured_capture(&mut hta) {
                    Ok((reference, loaded)) => {
                        let mut row = row(set, "one process beside HTA's load", measure, &baseline);
                        row.reference = Some(reference);
                        row.note = format!(
                            "reference: HTA TraceAnalysis of all {} ranks (loaded {}), same files",
                            set.paths.len(),
                            loaded.trim()
                        );
                        ctx.record(row);
                    }
                    Err(error) => println!("{}: HTA's load failed: {error:#}", set.label),
                }
            }
        }
    }
    std::fs::remove_dir_all(&parts)?;
    Ok(())
}

/// Dask with 1 and 2 worker processes, and `tally.accounting.account_paths`
/// in one process to compare their results with.
fn run_dask(
    ctx: &mut BenchContext,
    set: &InputSet,
    python: &Path,
    baseline: &Baseline,
) -> anyhow::Result<()> {
    let run = |mode: &str, workers: usize| -> anyhow::Result<(Measure, Value)> {
        let mut command = Command::new(python);
        command.arg("-c").arg(DASK_ACCOUNT).args([mode, &workers.to_string(), set.run_id.unwrap_or("")]);
        command.args(&set.paths);
        let (measure, stdout) = super::run_measured(&mut command, true)?;
        Ok((measure, parse_json(&stdout, "the Dask script's output")?))
    };
    let (_, single) = match run("single", 1) {
        Ok(ran) => ran,
        Err(error) => {
            println!("{}: Dask skipped: tally.accounting.account_paths failed: {error:#}", set.label);
            return Ok(());
        }
    };
    let mut one_worker = None;
    for workers in [1, 2] {
        let (process, result) = match run("dask", workers) {
            Ok(ran) => ran,
            Err(error) => {
                println!("{}: Dask x{workers} not run: {error:#}", set.label);
                continue;
            }
        };
        let seconds = json_f64(&result, "seconds", "the Dask script")?;
        let measure = Measure { seconds, peak_rss_bytes: process.peak_rss_bytes };
        let name = format!("Dask x{workers} worker process{}", if workers > 1 { "es" } else { "" });
        let mut row = row(set, &name, measure, baseline);
        let same = result["digest"] == single["digest"];
        row.note += &format!(
            "; the call, the cluster up (process {:.2} s); {}",
            process.seconds,
            if same { "same accounting as tally.accounting.account_paths" } else { "ACCOUNTING DIFFERS" }
        );
        match one_worker {
            None => one_worker = Some(seconds),
            Some(one) => row.note += &format!("; {}", two_over_one(one, seconds)),
        }
        ctx.record(row);
    }
    Ok(())
}

/// A trace's (and an artifact's) partial as a share of its input, and a
/// worker's peak RSS as its files grow.
fn run_sizes(
    ctx: &mut BenchContext,
    tally: &Path,
    traces: &InputSet,
    artifacts: &InputSet,
) -> anyhow::Result<()> {
    let parts = ctx.scratch_dir().join("distributed-parts");
    std::fs::create_dir_all(&parts)?;
    // The first trace as it is stored (gzip, as PyTorch writes `.json.gz`).
    let first = &traces.paths[0];
    let stored = first.with_extension("json.gz");
    let [stored_bytes] = cached_input(&stored, |stored| {
        let gzip = Command::new("gzip").arg("-c").arg(first).stdout(File::create(stored)?).status()?;
        if !gzip.success() {
            bail!("gzip -c {} failed", first.display());
        }
        Ok([std::fs::metadata(stored)?.len()])
    })?;
    for (set, path) in [(traces, first), (artifacts, &artifacts.paths[0])] {
        let out = parts.join("one.part");
        let mut command = partial_command(tally, set, std::slice::from_ref(path), &out);
        let measure = logged(&mut command, &out.with_extension("log"), |command| ctx.run_measured(command))?;
        let (bytes, input) = (std::fs::metadata(&out)?.len(), std::fs::metadata(path)?.len());
        let share = bytes as f64 / input as f64;
        let what = if set.traces { "a trace's partial" } else { "an artifact's partial" };
        let mut row = Row::new(format!("{what} ({} MB in)", input / 1_000_000), measure);
        row.bytes = Some(input);
        row.note = format!(
            "partial {:.2} MB = {:.2}% of the input{}; target <= 5%{}",
            bytes as f64 / 1e6,
            share * 100.0,
            if set.traces {
                format!(
                    ", {:.1}% of it as stored (gzip, {:.1} MB)",
                    bytes as f64 / stored_bytes as f64 * 100.0,
                    stored_bytes as f64 / 1e6
                )
            } else {
                String::new()
            },
            if share > 0.05 { ", ABOVE TARGET" } else { "" }
        );
        ctx.record(row);
        std::fs::remove_file(&out)?;
    }
    let mut smallest = None;
    for files in [1, 2, 4, 8, 16].into_iter().filter(|&files| files <= traces.paths.len()) {
        let out = parts.join("rss.part");
        let mut command = partial_command(tally, traces, &traces.paths[..files], &out);
        let measure = logged(&mut command, &out.with_extension("log"), |command| ctx.run_measured(command))?;
        std::fs::remove_file(&out)?;
        let rss = measure.peak_rss_bytes.unwrap_or(0);
        let base = *smallest.get_or_insert(rss);
        let mut row = Row::new(
            format!("worker rss: tally partial of {files} trace{}", if files > 1 { "s" } else { "" }),
            measure,
        );
        row.bytes = Some(traces.bytes / traces.paths.len() as u64 * files as u64);
        row.note = format!(
            "rss x{:.2} one trace's; target < 100 MB, independent of the files{}",
            rss as f64 / base.max(1) as f64,
            if rss >= 100_000_000 { ", ABOVE TARGET" } else { "" }
        );
        ctx.record(row);
    }
    std::fs::remove_dir_all(&parts)?;
    Ok(())
}

/// 10,000 (1,000 with `--quick`) partials of slices of a generated run,
/// read back, merged and resolved.
fn run_merge(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let (count, target_bytes) = if ctx.quick() { (1_000, 5_000_000) } else { (10_000, 50_000_000) };
    let spec = ArtifactSpec { target_bytes, form: GenForm::Embedded, ranks: ARTIFACT_FILES };
    let (artifact, _) = super::generate::cached_artifact(ctx.scratch_dir(), &spec)?;
    let program = ctx.release_example("tally-tests", "partial_merge")?;
    let slices = ctx.scratch_dir().join("partial-merge-slices");
    let (measure, stdout) =
        ctx.run_measured_capture(Command::new(program).arg(&artifact).arg(count.to_string()).arg(&slices))?;
    let result = parse_json(&stdout, "partial_merge's output")?;
    let seconds = |key: &str| json_f64(&result, key, "partial_merge");
    let (decode, merge, resolve) = (seconds("decode_s")?, seconds("merge_s")?, seconds("resolve_s")?);
    let total = decode + merge + resolve;
    let mut row = Row::new(
        format!("merge {count} partials ({} MB of artifact)", target_bytes / 1_000_000),
        Measure { seconds: merge, peak_rss_bytes: measure.peak_rss_bytes },
    );
    row.items = result["events"].as_u64();
    row.item_unit = "events";
    row.note = format!(
        "partials {:.1} MB in all; read back {decode:.3} s + merge {merge:.3} s + resolve {resolve:.3} s = {total:.3} s; \
         target: merge < 2 s{}; {}",
        json_f64(&result, "partial_bytes", "partial_merge")? / 1e6,
        if merge >= 2.0 { " (ABOVE TARGET)" } else { "" },
        if result["same_counts"] == Value::Bool(true) {
            "same counts as one partial of the whole file"
        } else {
            "COUNTS DIFFER FROM THE WHOLE FILE'S"
        }
    );
    ctx.record(row);
    Ok(())
}

/// This process's peak RSS (`VmHWM`), where Linux says it: a child's
/// `ru_maxrss` is never below its parent's at the `exec`.
fn own_peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// Prints [`own_peak_rss`], the floor of the RSS figures.
fn print_floor(when: &str) {
    if let Some(peak) = own_peak_rss() {
        println!(
            "this process's peak RSS{when}: {:.1} MB (every child's RSS figure starts from it)",
            peak as f64 / 1e6
        );
    }
}

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let (ranks, rank_bytes, artifact_bytes) =
        if ctx.quick() { (4, 25_000_000, 32_000_000) } else { (32, 100_000_000, 640_000_000) };
    let traces = rank_traces(ctx, ranks, rank_bytes)?;
    let artifacts = artifact_set(ctx, artifact_bytes)?;
    println!(
        "rank set: {} traces, {:.2} GB in all; artifact set: {} files, {:.2} GB in all",
        traces.paths.len(),
        traces.bytes as f64 / 1e9,
        artifacts.paths.len(),
        artifacts.bytes as f64 / 1e9
    );
    print_floor("");
    let tally = ctx.tally_bin()?;
    let partial_help = Command::new(&tally).args(["partial", "--help"]).output()?;
    if !partial_help.status.success() {
        println!("`tally partial` is not there: the partial rows fail and say so");
    }
    run_set(ctx, &tally, &traces)?;
    run_set(ctx, &tally, &artifacts)?;
    print_floor(" now");
    match run_sizes(ctx, &tally, &traces, &artifacts) {
        Ok(()) => {}
        Err(error) => println!("partial sizes and worker rss not measured: {error:#}"),
    }
    run_merge(ctx)
}
