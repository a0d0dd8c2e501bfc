//! Benchmark helper for `cargo xtask bench` (distributed):
//!
//! ```text
//! aggregate_bench write-request PATH WORKERS   # a deterministic request of WORKERS profiles
//! aggregate_bench time PATH REPEAT             # prints {"load_ns", "sequential_ns", "parallel_ns", ...}
//! ```
//!
//! `time` loads the request once, then aggregates it REPEAT times each way
//! and reports the fastest run of each (nanoseconds), after checking that
//! the parallel result equals the sequential one.

use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Map, Value, json};
use tally_distributed::AggregateRequest;
use tally_profile::profile::{
    DeviceMemoryProfile, DeviceMemoryStatus, EmbeddingFootprint, FootprintStatus, HostMemoryProfile,
    HostMemoryStatus, InferenceProfile, ModelFootprint, PersistedArtifactFootprint, PersistedStatus,
    ProfileStatus, ResourceProfile,
};

struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// A duration as the profiler writes one: whole nanoseconds / 1e9.
    fn seconds(&mut self, low_ns: u64, high_ns: u64) -> f64 {
        (low_ns + self.below(high_ns - low_ns)) as f64 / 1e9
    }
}

fn worker(numbers: &mut Numbers, index: u64) -> ResourceProfile {
    let status = match numbers.below(20) {
        0 => ProfileStatus::NotMeasuredCacheHit,
        _ => ProfileStatus::Measured,
    };
    let measured = status == ProfileStatus::Measured;
    let mut inference = InferenceProfile::unmeasured(status);
    if measured {
        let warm = 8 + numbers.below(56);
        let batch = 1 + numbers.below(64);
        inference.first_call_seconds = Some(numbers.seconds(5_000_000, 900_000_000));
        inference.warm_call_count = warm;
        inference.warm_mean_seconds = Some(numbers.seconds(1_000_000, 90_000_000));
        inference.warm_median_seconds = inference.warm_mean_seconds;
        inference.warm_p95_seconds = Some(numbers.seconds(90_000_000, 120_000_000));
        inference.warm_max_seconds = inference.warm_p95_seconds;
        inference.total_materialized_seconds = Some(numbers.seconds(100_000_000, 9_000_000_000));
        inference.materialized_samples = batch * (warm + 1);
        inference.batch_sizes = vec![batch; (warm + 1) as usize];
    }
    let host_memory = HostMemoryProfile {
        baseline_rss_bytes: Some(200 << 20),
        peak_rss_bytes: Some((200 << 20) + numbers.below(4 << 30)),
        ..HostMemoryProfile::unmeasured(if measured {
            HostMemoryStatus::Measured
        } else {
            HostMemoryStatus::NotMeasured
        })
    };
    let device_memory = if measured {
        DeviceMemoryProfile {
            backend: Some("torch".into()),
            device: Some(format!("cuda:{}", index % 8)),
            peak_allocated_bytes: Some(numbers.below(80 << 30)),
            ..DeviceMemoryProfile::unmeasured(DeviceMemoryStatus::Measured)
        }
    } else {
        DeviceMemoryProfile::unmeasured(DeviceMemoryStatus::NotMeasuredCacheHit)
    };
    let mut model = ModelFootprint::unmeasured(FootprintStatus::Partial);
    model.parameter_status = FootprintStatus::Measured;
    model.parameter_count = Some(109_482_240);
    model.parameter_bytes = Some(437_928_960);
    model.weight_dtypes = vec!["torch.float32".into()];
    let embedding = EmbeddingFootprint {
        raw_bytes: 1 << 20,
        evaluated_bytes: 1 << 18,
        bytes_per_embedding: 384.0,
        compression_savings_ratio: 0.75,
        raw_persisted: Some(PersistedArtifactFootprint::with_status(PersistedStatus::NotPersisted)),
        evaluated_persisted: Some(PersistedArtifactFootprint {
            bytes: Some(numbers.below(1 << 24)),
            uri: Some(format!("file:///store/shard-{index}.npy")),
            storage_format: Some("npy".into()),
            ..PersistedArtifactFootprint::with_status(PersistedStatus::Measured)
        }),
    };
    let mut context = Map::new();
    context.insert("measurement_scope".into(), json!("local_process"));
    context.insert("cache_status".into(), json!(if measured { "miss" } else { "hit" }));
    let warnings = match numbers.below(10) {
        0 => vec!["Device execution could not be synchronized; latency is host-observed.".to_owned()],
        _ => Vec::new(),
    };
    ResourceProfile {
        status,
        inference,
        host_memory,
        device_memory,
        model: if measured { model } else { ModelFootprint::unmeasured(FootprintStatus::Unavailable) },
        embedding: Some(embedding),
        context,
        warnings,
    }
}

fn write_request(path: &str, workers: u64) -> Result<(), String> {
    let mut numbers = Numbers(0x5eed_1234_abcd_ef01);
    let mut profiles = Vec::with_capacity(workers as usize);
    let mut rows = 0;
    for index in 0..workers {
        let profile = worker(&mut numbers, index);
        rows += profile.inference.materialized_samples;
        let value = profile.to_json_value().map_err(|e| e.to_string())?;
        profiles.push(json!([format!("shard-{index:06}"), value]));
    }
    let keys: Vec<String> = (0..workers + workers / 100).map(|index| format!("shard-{index:06}")).collect();
    let request = json!({
        "profiles": profiles,
        "all_shard_keys": keys,
        "merged_embeddings": {"shape": [rows, 384], "dtype": "float32", "sparse": false, "nnz": null},
    });
    let text = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
    tally_distributed::ranks::write_atomically(std::path::Path::new(path), &text).map_err(|e| e.to_string())
}

fn time(path: &str, repeat: u32) -> Result<Value, String> {
    let started = Instant::now();
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let request = AggregateRequest::from_json_str(&text).map_err(|e| e.to_string())?;
    let load_ns = started.elapsed().as_nanos() as u64;
    let mut sequential_ns = u64::MAX;
    let mut parallel_ns = u64::MAX;
    let mut results = None;
    for _ in 0..repeat.max(1) {
        let started = Instant::now();
        let sequential = request.aggregate(None).map_err(|e| e.to_string())?;
        sequential_ns = sequential_ns.min(started.elapsed().as_nanos() as u64);
        let started = Instant::now();
        let parallel = request.aggregate_parallel(None).map_err(|e| e.to_string())?;
        parallel_ns = parallel_ns.min(started.elapsed().as_nanos() as u64);
        results = Some((sequential, parallel));
    }
    let (sequential, parallel) = results.ok_or("no run")?;
    if sequential != parallel {
        return Err("the parallel aggregate differs from the sequential one".into());
    }
    Ok(json!({
        "workers": request.profiles.len(),
        "threads": rayon::current_num_threads(),
        "load_ns": load_ns,
        "sequential_ns": sequential_ns,
        "parallel_ns": parallel_ns,
        "status": sequential.status.as_str(),
    }))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["write-request", path, workers] => match workers.parse() {
            Ok(workers) => write_request(path, workers).map(|()| Value::Null),
            Err(_) => Err(format!("not a worker count: {workers}")),
        },
        ["time", path, repeat] => match repeat.parse() {
            Ok(repeat) => time(path, repeat),
            Err(_) => Err(format!("not a repeat count: {repeat}")),
        },
        _ => Err("usage: aggregate_bench write-request PATH WORKERS | time PATH REPEAT".into()),
    };
    match outcome {
        Ok(Value::Null) => ExitCode::SUCCESS,
        Ok(value) => {
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("aggregate_bench: {message}");
            ExitCode::FAILURE
        }
    }
}
