//! `mpi-account` end to end (feature `mpi`): under `mpirun
//! --allow-run-as-root --oversubscribe -np 2`, the example serving run
//! split into three files and two real Kineto traces give, on rank 0's
//! standard output, the bytes `tally account --format json` (and `tally
//! breakdown --format json`) writes for the same files, made here by the
//! library path the `tally` command takes (one process, every file); a bad
//! file fails every rank, names the file and line, and does not hang.
//! Prints "skipped: ..." when `mpirun` is not installed.

#![cfg(feature = "mpi")]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tally_gpu_time::breakdown::{BreakdownOptions, breakdown};
use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{RunOptions, Unwatched, default_import_options, open_inputs, resolve_inputs};
use tally_trace::{Detail, OpenedInput};

/// One job at a time: the machine may have two cores.
static JOBS: Mutex<()> = Mutex::new(());

/// What the tests never wait longer than for one job.
const JOB_LIMIT: Duration = Duration::from_secs(120);

fn mpirun() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("mpirun")).find(|candidate| candidate.is_file())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Job {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    elapsed: Duration,
}

/// Runs `mpi-account` with `args` on `ranks` ranks; panics when the job
/// runs past [`JOB_LIMIT`].
fn run_job(mpirun: &Path, ranks: u32, args: &[&str], files: &[PathBuf]) -> Job {
    let _one_at_a_time = JOBS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut child = Command::new(mpirun)
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_mpi-account"))
        .args(args)
        .args(files)
        // Containers often forbid the cross-memory attach Open MPI's shared
        // memory transport uses for large messages.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mpirun");
    let started = Instant::now();
    // Read as the job writes: a report larger than a pipe's buffer would
    // otherwise block rank 0 and look like a hang.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|pipe| Box::new(pipe) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|pipe| Box::new(pipe) as Box<dyn Read + Send>));
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait for mpirun") {
            break status.code();
        }
        if started.elapsed() > JOB_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mpirun did not finish within {JOB_LIMIT:?}: the job hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let stdout = stdout.join().expect("stdout read");
    let stderr = String::from_utf8_lossy(&stderr.join().expect("stderr read")).into_owned();
    Job { code, stdout, stderr, elapsed }
}

/// What `tally account --format json FILES` (with `breakdown`, `tally
/// breakdown --format json FILES`) writes, by the `tally` command's library
/// path: every file read by one process through `tally_ingest`, traces
/// imported with `default_import_options` (one record per kernel for the
/// breakdown), reported as pretty JSON with a final newline.
fn single_process(files: &[PathBuf], run_id: Option<&str>, breakdown_report: bool) -> Vec<u8> {
    let inputs = open_inputs(files, None).expect("inputs open");
    let traces: Vec<&OpenedInput> = inputs.iter().filter(|input| input.is_trace()).collect();
    let import = (!traces.is_empty()).then(|| {
        default_import_options(&traces, run_id).map(|mut options| {
            if breakdown_report {
                options.detail = Detail::Kernel;
            }
            options
        })
    });
    let options = RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: import.as_ref(),
        keep_labels: breakdown_report,
        threads: 0,
        inline_small_inputs: true,
    };
    let run = resolve_inputs(inputs, &options, &mut Unwatched).expect("the run resolves");
    let mut text = if breakdown_report {
        serde_json::to_string_pretty(&breakdown(&run, &BreakdownOptions::default()))
    } else {
        serde_json::to_string_pretty(&AccountingReport::of(&run, &account_gpu_time(&run), false))
    }
    .expect("a report serializes");
    text.push('\n');
    text.into_bytes()
}

/// The example serving run split into three artifacts of one run.
fn split_example(directory: &Path) -> Vec<PathBuf> {
    tally_testkit::records::split_artifact(&root().join("examples/serving-run.jsonl"), directory, 3)
}

fn kineto_traces() -> Vec<PathBuf> {
    let fixtures = root().join("crates/tally-trace/tests/fixtures/kineto");
    vec![fixtures.join("sampled-rank-0.json.gz"), fixtures.join("sampled-rank-1.json.gz")]
}

/// Runs `mpi-account` on two ranks and checks its output is the single
/// process's, byte for byte; returns the report.
fn check_equal(mpirun: &Path, files: &[PathBuf], args: &[&str], expected: &[u8]) -> serde_json::Value {
    let job = run_job(mpirun, 2, args, files);
    assert_eq!(job.code, Some(0), "mpi-account {args:?} failed:\n{}", job.stderr);
    if job.stdout != expected {
        let (ours, theirs) = (String::from_utf8_lossy(&job.stdout), String::from_utf8_lossy(expected));
        let line = ours.lines().zip(theirs.lines()).position(|(a, b)| a != b);
        let shown = |text: &str| line.and_then(|line| text.lines().nth(line)).unwrap_or("").to_owned();
        panic!(
            "mpi-account {args:?} printed other bytes than the single process ({} and {} bytes); \
             first differing line {line:?}:\n  {}\nexpected\n  {}",
            job.stdout.len(),
            expected.len(),
            shown(&ours),
            shown(&theirs)
        );
    }
    serde_json::from_slice(&job.stdout).expect("the report is JSON")
}

#[test]
fn a_split_artifact_accounts_and_breaks_down_as_one_process() {
    let Some(mpirun) = mpirun() else {
        return tally_testkit::skip("mpirun is not installed (Debian: openmpi-bin)");
    };
    let directory = tempfile::tempdir().expect("temporary directory");
    let files = split_example(directory.path());
    // Rank 0 reads part0 and part2, rank 1 part1.
    let account = check_equal(&mpirun, &files, &["--format", "json"], &single_process(&files, None, false));
    let devices = account["device_totals"].as_array().expect("device rows");
    assert!(!devices.is_empty(), "the example accounts GPU time: {account}");
    assert!(account["iterations"].as_array().is_some_and(|rows| !rows.is_empty()), "{account}");
    let expected = single_process(&files, None, true);
    let report = check_equal(&mpirun, &files, &["--breakdown", "--format", "json"], &expected);
    assert!(report["devices"].as_array().is_some_and(|devices| !devices.is_empty()), "{report}");
}

#[test]
fn traces_split_between_ranks_account_and_break_down_as_one_import() {
    let Some(mpirun) = mpirun() else {
        return tally_testkit::skip("mpirun is not installed (Debian: openmpi-bin)");
    };
    let files = kineto_traces();
    // Each rank imports one trace, with the run ID one process derives from
    // both.
    let account = check_equal(&mpirun, &files, &["--format", "json"], &single_process(&files, None, false));
    assert!(account["run_id"].as_str().is_some_and(|id| id.starts_with("trace-import-")), "{account}");
    assert!(account["device_totals"].as_array().is_some_and(|rows| !rows.is_empty()), "{account}");
    let expected = single_process(&files, None, true);
    let report = check_equal(&mpirun, &files, &["--breakdown"], &expected);
    let kernels = report["devices"][0]["kernels"].as_array().map_or(0, Vec::len);
    assert!(kernels > 0, "the breakdown names each kernel: {report}");
    let account =
        check_equal(&mpirun, &files, &["--run-id", "ranks"], &single_process(&files, Some("ranks"), false));
    assert_eq!(account["run_id"], "ranks");
}

#[test]
fn a_bad_file_fails_every_rank_naming_the_file_and_line_without_a_hang() {
    let Some(mpirun) = mpirun() else {
        return tally_testkit::skip("mpirun is not installed (Debian: openmpi-bin)");
    };
    let directory = tempfile::tempdir().expect("temporary directory");
    let mut files = split_example(directory.path());
    // Rank 1's file, cut in the middle of its fifth line.
    let text = std::fs::read_to_string(&files[1]).expect("readable");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[4] = "{\"schema_version\": 4, \"event_type\": ";
    let bad = directory.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").expect("written");
    files[1] = bad;
    let job = run_job(&mpirun, 2, &["--format", "json"], &files);
    assert_ne!(job.code, Some(0), "a bad file cannot give a report:\n{}", job.stderr);
    assert!(job.elapsed < Duration::from_secs(60), "no hang, took {:?}", job.elapsed);
    assert!(job.stdout.is_empty(), "no report: {}", String::from_utf8_lossy(&job.stdout));
    assert!(job.stderr.contains("mpi-account: rank 1: "), "the failing rank says so:\n{}", job.stderr);
    assert!(job.stderr.contains("bad.jsonl: line 5: "), "the file and line:\n{}", job.stderr);
    assert!(job.stderr.contains("rank(s) 1 could not read their files"), "rank 0 knows:\n{}", job.stderr);
    // A file that is not there: the same, from the rank that owns it.
    let missing = directory.path().join("missing.jsonl");
    let job = run_job(&mpirun, 2, &[], &[files[0].clone(), missing]);
    assert_ne!(job.code, Some(0), "{}", job.stderr);
    assert!(job.stderr.contains("missing.jsonl"), "{}", job.stderr);
}
