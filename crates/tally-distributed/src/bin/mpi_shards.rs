//! `mpi-shards`: the distributed path end to end under `mpirun`.
//!
//! ```text
//! mpirun -np 3 mpi-shards --out DIR [--matmuls 240] [--size 64] [--batch 8]
//!        [--rank-timeout-ms 60000] [--gather-timeout-ms 30000] [--run-id ID]
//! ```
//!
//! Each rank profiles its shard: `--matmuls` real `size x size` f32 matrix
//! multiplications (plain Rust), `--batch` per measured call of
//! `tally_profile::ResourceProfiler`, each call also timed as one window of
//! CPU stand-in correlation evidence on the rank's own clock `rank-N-cpu`
//! (see `tally_distributed::evidence`; there is no GPU here). Each sample is
//! one product, reduced to one embedding row of `size` f32.
//!
//! Every rank writes `DIR/rank-N.profile.json` and `DIR/rank-N.artifact.jsonl`,
//! then one gather brings every rank's serialized profile to rank 0 and
//! another every rank's artifact. Rank 0 writes
//!
//! - `DIR/aggregate.json`: the `DistributedResourceProfile` of all shards,
//!   the merged embeddings being every reporting rank's rows;
//! - `DIR/accounting.json`: the GPU-time accounting of all ranks' artifacts
//!   together, one row per device clock;
//! - `DIR/ranks.json`: which ranks reported and why the others did not.
//!
//! A rank whose work fails, panics or exceeds `--rank-timeout-ms` reports
//! its shard as failed and the aggregate is `partial`; a gather that misses
//! `--gather-timeout-ms` aborts the job (see `tally_distributed::mpi`).
//! For tests, `TALLY_MPI_SHARDS_FAIL=RANK:MODE[,RANK:MODE]` makes ranks
//! fail on purpose: `error`, `panic` or `hang` in the rank's work (its
//! shard is then unprofiled), or `stall`: the rank finishes its work but
//! never reaches the gathers (the job is then aborted at the deadline).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use mpi::traits::Communicator;
use serde_json::{Map, json};
use tally_artifact::{Form, encode_artifact, read_artifact_from, write_artifact};
use tally_core::InferenceRecord;
use tally_distributed::mpi::gather_bytes;
use tally_distributed::ranks::{
    RankReport, combine_reports, run_with_deadline, write_atomically, write_json_atomically,
};
use tally_distributed::{
    AggregateOptions, CpuStandInRecorder, account_ranks, aggregate_distributed_resource_profiles,
};
use tally_profile::profile::{
    ModelFootprintMeasurement, ModelFootprintReadings, ResourceAdapterMetadata, ResourceProfile,
};
use tally_profile::{
    CallSpec, EmbeddingMetadata, HookError, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler,
};

const ROOT: i32 = 0;

#[derive(Debug, Clone)]
struct Options {
    out: PathBuf,
    matmuls: u64,
    size: usize,
    batch: u64,
    rank_timeout: Duration,
    gather_timeout: Duration,
    run_id: String,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        out: PathBuf::new(),
        matmuls: 240,
        size: 64,
        batch: 8,
        rank_timeout: Duration::from_secs(60),
        gather_timeout: Duration::from_secs(30),
        run_id: "tally-mpi-shards".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |text: String| text.parse::<u64>().map_err(|_| format!("{flag}: not a number: {text}"));
        match flag.as_str() {
            "--out" => options.out = PathBuf::from(value()?),
            "--matmuls" => options.matmuls = number(value()?)?,
            "--size" => options.size = number(value()?)? as usize,
            "--batch" => options.batch = number(value()?)?.max(1),
            "--rank-timeout-ms" => options.rank_timeout = Duration::from_millis(number(value()?)?),
            "--gather-timeout-ms" => options.gather_timeout = Duration::from_millis(number(value()?)?),
            "--run-id" => options.run_id = value()?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.out.as_os_str().is_empty() {
        return Err("--out DIR is required".into());
    }
    if options.size == 0 {
        return Err("--size must be at least 1".into());
    }
    Ok(options)
}

/// How `TALLY_MPI_SHARDS_FAIL` asks this rank to fail, if it does.
fn injected_failure(rank: u64) -> Option<String> {
    let spec = std::env::var("TALLY_MPI_SHARDS_FAIL").ok()?;
    spec.split(',').find_map(|item| {
        let (which, mode) = item.split_once(':')?;
        (which.trim().parse::<u64>().ok()? == rank).then(|| mode.trim().to_owned())
    })
}

/// The model every rank runs: one `size x size` f32 weight matrix.
struct MatmulAdapter {
    size: u64,
}

impl ResourceProfileAdapter for MatmulAdapter {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        Ok(ResourceAdapterMetadata {
            backend: Some("cpu".into()),
            device: Some("cpu".into()),
            weight_dtypes: vec!["float32".into()],
            ..Default::default()
        })
    }

    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        let parameters = self.size * self.size;
        ModelFootprintMeasurement::measured(ModelFootprintReadings {
            parameter_count: Some(parameters),
            parameter_bytes: Some(parameters * 4),
            trainable_parameter_count: Some(0),
            trainable_parameter_bytes: Some(0),
            buffer_bytes: Some(0),
            in_memory_bytes: Some(parameters * 4),
            weight_dtypes: vec!["float32".into()],
            ..Default::default()
        })
        .map_err(|error| HookError::new("ValueError", error.to_string()))
    }

    fn name(&self) -> String {
        "mpi_shards.MatmulAdapter".into()
    }
}

/// A deterministic xorshift stream of f32 in [-1, 1).
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn matrix(&mut self, size: usize) -> Vec<f32> {
        (0..size * size).map(|_| self.next()).collect()
    }
}

/// `a x b` for row-major `size x size` matrices, i-k-j order.
fn matmul(a: &[f32], b: &[f32], size: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; size * size];
    for i in 0..size {
        for k in 0..size {
            let left = a[i * size + k];
            let row = &b[k * size..(k + 1) * size];
            for (target, right) in out[i * size..(i + 1) * size].iter_mut().zip(row) {
                *target += left * right;
            }
        }
    }
    out
}

/// What one rank's work leaves: its profile, its evidence, its rows.
struct ShardWork {
    profile: ResourceProfile,
    records: Vec<InferenceRecord>,
}

fn profile_shard(rank: u64, world: u64, options: &Options) -> Result<ShardWork, String> {
    match injected_failure(rank).as_deref() {
        None | Some("stall") => {}
        Some("error") => return Err("injected failure (TALLY_MPI_SHARDS_FAIL=error) before reporting".into()),
        Some("panic") => panic!("injected panic (TALLY_MPI_SHARDS_FAIL=panic)"),
        Some("hang") => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Some(other) => return Err(format!("unknown TALLY_MPI_SHARDS_FAIL mode {other:?}")),
    }
    let size = options.size;
    // Every rank holds the same weights (one model), its own inputs (its shard).
    let weights = Numbers(0x9e37_79b9_7f4a_7c15).matrix(size);
    let mut inputs = Numbers(0x2545_f491_4f6c_dd1d ^ (rank + 1).wrapping_mul(0x1000_0000_01b3));
    let mut context = Map::new();
    context.insert("measurement_scope".into(), json!("local_process"));
    context.insert("rank".into(), json!(rank));
    context.insert("world_size".into(), json!(world));
    context.insert("workload".into(), json!(format!("f32 matmul {size}x{size}")));
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default())
        .with_adapter(Box::new(MatmulAdapter { size: size as u64 }))
        .with_context(context);
    let mut recorder = CpuStandInRecorder::new(&options.run_id, rank, world).map_err(|e| e.to_string())?;
    let mut checksum = 0.0f64;
    let mut done = 0;
    let mut call = 0;
    while done < options.matmuls {
        let samples = options.batch.min(options.matmuls - done);
        let batch: Vec<Vec<f32>> = (0..samples).map(|_| inputs.matrix(size)).collect();
        let label = format!("batch-{call}");
        let rows = profiler.measure_call(
            || {
                recorder.window(&label, || {
                    batch
                        .iter()
                        .map(|input| {
                            let product = matmul(std::hint::black_box(input), &weights, size);
                            // One embedding row per product: its column sums.
                            (0..size).map(|j| (0..size).map(|i| product[i * size + j]).sum::<f32>()).collect()
                        })
                        .collect::<Vec<Vec<f32>>>()
                })
            },
            CallSpec::new(samples, "batch"),
        );
        let rows = rows.map_err(|error| error.to_string())?;
        checksum += rows.iter().flatten().map(|&value| f64::from(value)).sum::<f64>();
        done += samples;
        call += 1;
    }
    let mut profile = profiler.finish(false);
    profile.context.insert("embedding_checksum".into(), json!(checksum));
    Ok(ShardWork { profile, records: recorder.into_records() })
}

fn shard_key(rank: u64) -> String {
    format!("shard-{rank}")
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("mpi-shards: {message}");
            return ExitCode::from(2);
        }
    };
    // Only the main thread calls MPI; the work runs on its own thread.
    let Some((universe, _threading)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
        eprintln!("mpi-shards: MPI is already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let rank = world.rank() as u64;
    let size = world.size() as u64;
    match run(&world, rank, size, &options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mpi-shards: rank {rank}: {message}");
            // A rank that cannot continue must not leave the others waiting.
            world.abort(1);
        }
    }
}

fn run<C: Communicator>(world: &C, rank: u64, size: u64, options: &Options) -> Result<(), String> {
    std::fs::create_dir_all(&options.out).map_err(|e| format!("{}: {e}", options.out.display()))?;
    let key = shard_key(rank);
    let work_options = options.clone();
    let outcome = run_with_deadline(options.rank_timeout, move || profile_shard(rank, size, &work_options));
    let (report, artifact) = match outcome {
        Ok(work) => {
            let artifact = encode_artifact(&work.records, Form::Embedded).map_err(|e| e.to_string())?;
            let profile_path = options.out.join(format!("rank-{rank}.profile.json"));
            let text = work.profile.to_json_string().map_err(|e| e.to_string())?;
            write_atomically(&profile_path, text.as_bytes())
                .map_err(|e| format!("{}: {e}", profile_path.display()))?;
            let artifact_path = options.out.join(format!("rank-{rank}.artifact.jsonl"));
            write_artifact(&artifact_path, &work.records, Form::Embedded).map_err(|e| e.to_string())?;
            (RankReport::reported(rank, key, work.profile), artifact)
        }
        Err(failure) => {
            eprintln!("mpi-shards: rank {rank}: {failure}");
            (RankReport::failed(rank, key, failure.to_string()), Vec::new())
        }
    };
    if injected_failure(rank).as_deref() == Some("stall") {
        // Stuck outside the bounded work: the gathers' deadline must end the job.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let payload = report.to_bytes().map_err(|e| e.to_string())?;
    let reports =
        gather_bytes(world, ROOT, &payload, options.gather_timeout, "profile").map_err(|e| e.to_string())?;
    let artifacts = gather_bytes(world, ROOT, &artifact, options.gather_timeout, "artifact")
        .map_err(|e| e.to_string())?;
    match (reports, artifacts) {
        (Some(reports), Some(artifacts)) => aggregate_at_root(&reports, &artifacts, options),
        _ => Ok(()),
    }
}

fn aggregate_at_root(reports: &[Vec<u8>], artifacts: &[Vec<u8>], options: &Options) -> Result<(), String> {
    let combined = combine_reports(reports, shard_key);
    // The merged embeddings: one row of `size` f32 per sample of every
    // rank that reported.
    let rows: u64 = combined.profiles.iter().map(|(_, profile)| profile.inference.materialized_samples).sum();
    let merged = EmbeddingMetadata::dense(rows, options.size as u64, "float32");
    let aggregate_options =
        AggregateOptions { all_shard_keys: Some(&combined.all_shard_keys), ..Default::default() };
    let aggregate = aggregate_distributed_resource_profiles(&combined.profiles, &merged, &aggregate_options)
        .map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    for (rank, bytes) in artifacts.iter().enumerate() {
        let name = format!("rank {rank} artifact");
        records.extend(read_artifact_from(&bytes[..], &name).map_err(|e| e.to_string())?);
    }
    let accounting = account_ranks(&records).map_err(|e| e.to_string())?;
    let out = &options.out;
    // Written from the struct, not a JSON map, to keep asdict's field order.
    aggregate.check_finite().map_err(|e| e.to_string())?;
    write_json(&out.join("aggregate.json"), &aggregate)?;
    write_json(&out.join("accounting.json"), &accounting)?;
    let ranks = json!({
        "world_size": reports.len(),
        "rank_timeout_ms": options.rank_timeout.as_millis() as u64,
        "gather_timeout_ms": options.gather_timeout.as_millis() as u64,
        "ranks": combined.statuses,
        "artifact_bytes": artifacts.iter().map(Vec::len).collect::<Vec<_>>(),
    });
    write_json(&out.join("ranks.json"), &ranks)?;
    println!(
        "mpi-shards: {} of {} shards profiled ({}); {} device clocks accounted; wrote {}",
        aggregate.profiled_shard_count,
        aggregate.shard_count,
        aggregate.status,
        accounting.device_totals.len(),
        out.display()
    );
    Ok(())
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), String> {
    write_json_atomically(path, value).map_err(|e| format!("{}: {e}", path.display()))
}
