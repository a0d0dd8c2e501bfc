//! The MPI path end to end (feature `mpi`): `mpi-shards` under
//! `mpirun --allow-run-as-root --oversubscribe -np 3`, its gathered result
//! checked against aggregating the per-rank files without MPI. Prints
//! "skipped: ..." when `mpirun` is not installed.

#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use tally_artifact::read_artifact;
use tally_distributed::{
    AggregateOptions, DistributedResourceProfile, DistributedStatus, account_ranks,
    aggregate_distributed_resource_profiles, stand_in_clock_name,
};
use tally_profile::EmbeddingMetadata;
use tally_profile::profile::{ProfileStatus, ResourceProfile};

/// One job at a time: the machine may have two cores.
static JOBS: Mutex<()> = Mutex::new(());

const WORLD: u64 = 3;
const SIZE: u64 = 24;
const MATMULS: u64 = 60;
const BATCH: u64 = 8;

fn mpirun() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("mpirun")).find(|candidate| candidate.is_file())
}

struct Job {
    code: Option<i32>,
    stderr: String,
    elapsed: Duration,
}

/// Runs `mpi-shards` on `WORLD` ranks; the test itself never waits more
/// than two minutes.
fn run_job(mpirun: &Path, out: &Path, fail: Option<&str>, extra: &[&str]) -> Job {
    let _one_at_a_time = JOBS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut command = Command::new(mpirun);
    command
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &WORLD.to_string()])
        .arg(env!("CARGO_BIN_EXE_mpi-shards"))
        .arg("--out")
        .arg(out)
        .args(["--size", &SIZE.to_string(), "--matmuls", &MATMULS.to_string(), "--batch", &BATCH.to_string()])
        .args(extra)
        // Containers often forbid the cross-memory attach Open MPI's shared
        // memory transport uses for large messages.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match fail {
        Some(spec) => command.env("TALLY_MPI_SHARDS_FAIL", spec),
        None => command.env_remove("TALLY_MPI_SHARDS_FAIL"),
    };
    let started = Instant::now();
    let mut child = command.spawn().expect("start mpirun");
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait for mpirun") {
            break status.code();
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mpirun did not finish within 120 s: the job hangs");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    Job { code, stderr, elapsed: started.elapsed() }
}

fn shard_key(rank: u64) -> String {
    format!("shard-{rank}")
}

/// The aggregate and accounting of the per-rank files, without MPI.
fn aggregate_files(out: &Path) -> (DistributedResourceProfile, Value) {
    let mut profiles = Vec::new();
    let mut records = Vec::new();
    for rank in 0..WORLD {
        let profile_path = out.join(format!("rank-{rank}.profile.json"));
        if profile_path.exists() {
            let text = std::fs::read_to_string(&profile_path).expect("readable profile");
            profiles.push((shard_key(rank), ResourceProfile::from_json_str(&text).expect("a valid profile")));
            records
                .extend(read_artifact(&out.join(format!("rank-{rank}.artifact.jsonl"))).expect("artifact"));
        }
    }
    let all: Vec<String> = (0..WORLD).map(shard_key).collect();
    let rows = profiles.iter().map(|(_, profile)| profile.inference.materialized_samples).sum();
    let merged = EmbeddingMetadata::dense(rows, SIZE, "float32");
    let options = AggregateOptions { all_shard_keys: Some(&all), ..Default::default() };
    let aggregate =
        aggregate_distributed_resource_profiles(&profiles, &merged, &options).expect("aggregates");
    let accounting = serde_json::to_value(account_ranks(&records).expect("resolves")).expect("JSON");
    (aggregate, accounting)
}

fn read(out: &Path, name: &str) -> String {
    std::fs::read_to_string(out.join(name)).unwrap_or_else(|error| panic!("{name}: {error}"))
}

/// Checks rank 0's gathered outputs against the files; returns them.
fn check_against_files(out: &Path) -> (DistributedResourceProfile, Value, Value) {
    let gathered =
        DistributedResourceProfile::from_json_str(&read(out, "aggregate.json")).expect("aggregate");
    let accounting: Value = serde_json::from_str(&read(out, "accounting.json")).expect("accounting");
    let ranks: Value = serde_json::from_str(&read(out, "ranks.json")).expect("ranks");
    let (expected, expected_accounting) = aggregate_files(out);
    assert_eq!(gathered, expected, "the gathered aggregate equals the aggregate of the per-rank files");
    assert_eq!(accounting, expected_accounting, "the gathered accounting equals the files' accounting");
    (gathered, accounting, ranks)
}

fn device_rows(accounting: &Value) -> Vec<(String, u64, u64)> {
    accounting["device_totals"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            assert_eq!(row["device_uuid"], row["clock_domain"]);
            (
                row["clock_domain"].as_str().expect("domain").to_owned(),
                row["activity_count"].as_u64().expect("count"),
                row["busy_ns"].as_u64().expect("busy"),
            )
        })
        .collect()
}

#[test]
fn three_ranks_gather_what_the_per_rank_files_aggregate_to() {
    let Some(mpirun) = mpirun() else {
        return tally_testkit::skip("mpirun is not installed (Debian: openmpi-bin)");
    };
    let out = tempfile::tempdir().expect("temporary directory");
    let job = run_job(&mpirun, out.path(), None, &[]);
    assert_eq!(job.code, Some(0), "mpirun failed:\n{}", job.stderr);
    let (aggregate, accounting, ranks) = check_against_files(out.path());
    assert_eq!(aggregate.status, DistributedStatus::Measured);
    assert_eq!((aggregate.profiled_shard_count, aggregate.shard_count), (WORLD, WORLD));
    assert_eq!(aggregate.materialized_samples, WORLD * MATMULS);
    assert_eq!(aggregate.worker_first_calls.count, WORLD);
    let calls = MATMULS.div_ceil(BATCH);
    assert_eq!(aggregate.warm_call_count, WORLD * (calls - 1));
    let model = aggregate.model.as_ref().expect("every rank reports the same model");
    assert_eq!(model.parameter_count, Some(SIZE * SIZE));
    let embedding = aggregate.embedding.as_ref().expect("merged embeddings");
    assert_eq!(embedding.evaluated_bytes, WORLD * MATMULS * SIZE * 4);
    // One row per rank's clock, never added together.
    let rows = device_rows(&accounting);
    let clocks: Vec<String> = rows.iter().map(|(clock, _, _)| clock.clone()).collect();
    assert_eq!(clocks, (0..WORLD).map(stand_in_clock_name).collect::<Vec<_>>());
    assert!(rows.iter().all(|&(_, count, busy)| count == calls && busy > 0), "{rows:?}");
    assert_eq!(accounting["iterations"].as_array().map(Vec::len), Some((WORLD * calls) as usize));
    // Each rank profiled its own shard and the gather kept rank order.
    for rank in 0..WORLD {
        let profile = ResourceProfile::from_json_str(&read(out.path(), &format!("rank-{rank}.profile.json")))
            .expect("profile");
        assert_eq!(profile.status, ProfileStatus::Measured);
        assert_eq!(profile.context["rank"], rank);
        assert_eq!(ranks["ranks"][rank as usize]["status"], "reported");
    }
}

#[test]
fn failing_and_hanging_ranks_leave_their_shards_unprofiled_without_a_hang() {
    let Some(mpirun) = mpirun() else {
        return tally_testkit::skip("mpirun is not installed (Debian: openmpi-bin)");
    };
    let out = tempfile::tempdir().expect("temporary directory");
    // Rank 1 fails before reporting; rank 2 never finishes its work and is
    // cut off by the 3 s rank timeout.
    let job = run_job(&mpirun, out.path(), Some("1:error,2:hang"), &["--rank-timeout-ms", "3000"]);
    assert_eq!(job.code, Some(0), "mpirun failed:\n{}", job.stderr);
    assert!(job.elapsed < Duration::from_secs(60), "bounded by the rank timeout, took {:?}", job.elapsed);
    let (aggregate, accounting, ranks) = check_against_files(out.path());
    assert_eq!(aggregate.status, DistributedStatus::Partial);
    assert_eq!((aggregate.profiled_shard_count, aggregate.shard_count), (1, WORLD));
    assert_eq!(aggregate.shard_keys, (0..WORLD).map(shard_key).collect::<Vec<_>>());
    assert_eq!(aggregate.materialized_samples, MATMULS);
    assert!(!out.path().join("rank-1.profile.json").exists());
    assert!(!out.path().join("rank-2.profile.json").exists());
    let statuses: Vec<&str> = ranks["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .map(|rank| rank["status"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(statuses, ["reported", "failed", "failed"]);
    assert!(ranks["ranks"][1]["reason"].as_str().is_some_and(|reason| reason.contains("injected failure")));
    assert!(
        ranks["ranks"][2]["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("did not finish within 3s"))
    );
    let clocks: Vec<String> = device_rows(&accounting).into_iter().map(|(clock, _, _)| clock).collect();
    assert_eq!(clocks, [stand_in_clock_name(0)]);
}

#[test]
fn a_rank_that_never_reaches_the_gather_aborts_the_job_at_the_deadline() {
    let Some(mpirun) = mpirun() else {
        return tally_testkit::skip("mpirun is not installed (Debian: openmpi-bin)");
    };
    let out = tempfile::tempdir().expect("temporary directory");
    let job = run_job(&mpirun, out.path(), Some("2:stall"), &["--gather-timeout-ms", "2000"]);
    assert_ne!(job.code, Some(0), "the job cannot succeed without rank 2's report");
    assert!(job.elapsed < Duration::from_secs(60), "bounded by the gather timeout, took {:?}", job.elapsed);
    assert!(job.stderr.contains("aborting the MPI job instead of waiting forever"), "{}", job.stderr);
    assert!(!out.path().join("aggregate.json").exists());
}
