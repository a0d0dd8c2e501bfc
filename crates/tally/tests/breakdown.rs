//! `tally breakdown` and `tally diff` run as the built binary on the real
//! Kineto traces of `crates/tally-trace/tests/fixtures/kineto/`: every
//! figure equals an independent exact computation from the raw trace
//! events (`breakdown/independent.py`, run on the reference Python), and
//! the busy and summed times sit beside HTA's recorded figures
//! (`hta_golden.json`), and HTA's own analyses, run live where
//! `TALLY_HTA_PYTHON` names a Python with HTA (`breakdown/hta_live.py`),
//! agree with tally's figures over HTA's selection of the work up to HTA's
//! rounding, difference by difference (tally-gpu-time's `breakdown` docs).

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

const TRACES: [&str; 8] = [
    "nccl-distributed.json.gz",
    "sampled-rank-0.json.gz",
    "sampled-rank-1.json.gz",
    "alexnet-cuda-sync.json.gz",
    "ns-resolution-rank-0.json.gz",
    "rocm-mi250-train.json.gz",
    "triton-single-kernel.json.gz",
    "inference-rank-1-minimal.json.gz",
];

/// The keys of a device's row that the issue fixes.
const DEVICE_KEYS: [&str; 8] = [
    "device_uuid",
    "clock_domain",
    "clock_kind",
    "busy_ns",
    "categories",
    "overlap_ns",
    "exposed_communication_ns",
    "kernels",
];

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().unwrap()
}

fn kineto(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tally-trace/tests/fixtures/kineto").join(name)
}

fn breakdown_json(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["breakdown", "--format", "json", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = tally(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The device ordinal tally's synthesized UUID ends with.
fn ordinal(device: &Value) -> String {
    let uuid = device["device_uuid"].as_str().unwrap();
    uuid.rsplit_once(":device").map(|(_, ordinal)| ordinal.to_owned()).unwrap_or_else(|| uuid.to_owned())
}

#[test]
fn figures_equal_an_independent_computation_from_the_raw_events() {
    let python = match tally_testkit::reference_python(&["json", "decimal", "gzip"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(why),
    };
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/breakdown/independent.py"))
            .unwrap();
    let mut communication_seen = false;
    for name in TRACES {
        let path = kineto(name);
        let mine = breakdown_json(&path, &[]);
        let output = Command::new(&python).args(["-c", &script]).arg(&path).output().unwrap();
        assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
        let theirs: Value = serde_json::from_slice(&output.stdout).unwrap();
        let devices = mine["devices"].as_array().unwrap();
        assert_eq!(devices.len(), theirs.as_object().unwrap().len(), "{name}: device clocks");
        for device in devices {
            let expected = &theirs[ordinal(device)];
            let at = |key: &str| format!("{name} device {}: {key}", ordinal(device));
            for key in
                ["busy_ns", "summed_ns", "count", "categories", "overlap_ns", "exposed_communication_ns"]
            {
                assert_eq!(device[key], expected[key], "{}", at(key));
            }
            for (key, value) in expected["idle"].as_object().unwrap() {
                assert_eq!(&device["idle"][key], value, "{}", at(&format!("idle.{key}")));
            }
            for (key, value) in expected["launch_latency"].as_object().unwrap() {
                assert_eq!(&device["launch_latency"][key], value, "{}", at(&format!("launch_latency.{key}")));
            }
            for (kind, busy) in expected["memory_busy"].as_object().unwrap() {
                assert_eq!(&device["memory"][kind]["busy_ns"], busy, "{}", at(kind));
            }
            let kernels: Vec<Value> = device["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| {
                    json!([
                        k["name"],
                        k["category"],
                        k["count"],
                        k["summed_ns"],
                        k["busy_ns"],
                        k["min_ns"],
                        k["median_ns"],
                        k["max_ns"]
                    ])
                })
                .collect();
            assert_eq!(Value::from(kernels), expected["kernels"], "{}", at("kernels"));
            // One figure of each stream, by stream ID.
            let per_stream = |figure: &dyn Fn(&Value) -> Value| -> Value {
                let streams = device["streams"].as_array().unwrap();
                Value::Object(streams.iter().map(|s| (s["stream_id"].to_string(), figure(s))).collect())
            };
            assert_eq!(per_stream(&|s| s["busy_ns"].clone()), expected["streams"], "{}", at("streams"));
            let envelopes = per_stream(&|s| json!([s["envelope_start_ns"], s["envelope_end_ns"]]));
            assert_eq!(envelopes, expected["stream_envelopes"], "{}", at("stream envelopes"));
            communication_seen |= device["categories"]["communication"]["busy_ns"].as_u64().unwrap() > 0;
            for key in DEVICE_KEYS {
                assert!(device.get(key).is_some(), "{}", at(key));
            }
        }
    }
    assert!(communication_seen, "the NCCL traces have communication");
}

#[test]
fn busy_and_summed_time_beside_htas_figures() {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(kineto("hta_golden.json")).unwrap()).unwrap();
    for name in TRACES {
        let expected = &golden["traces"][name];
        let mine = breakdown_json(&kineto(name), &[]);
        let busy: u64 =
            mine["devices"].as_array().unwrap().iter().map(|d| d["busy_ns"].as_u64().unwrap()).sum();
        let summed: u64 =
            mine["devices"].as_array().unwrap().iter().map(|d| d["summed_ns"].as_u64().unwrap()).sum();
        let hta_busy = expected["merged_busy_us"].as_f64().unwrap();
        let hta_summed = expected["summed_us"].as_f64().unwrap();
        if expected["float_timestamps"] == false {
            // Whole microseconds: HTA's figures and tally's agree exactly.
            assert_eq!(busy as f64, hta_busy * 1000.0, "{name}: busy");
            assert_eq!(summed as f64, hta_summed * 1000.0, "{name}: summed");
        } else {
            // HTA rounds fractional timestamps inward to whole microseconds
            // (tally-trace's kineto test reproduces its figure exactly), so
            // its busy time is smaller, by under 2 µs an interval.
            let count = mine["devices"][0]["count"].as_f64().unwrap();
            assert!(busy as f64 > hta_busy * 1000.0 - 1.0, "{name}: busy {busy} vs HTA {hta_busy} µs");
            assert!((busy as f64) < hta_busy * 1000.0 + 2000.0 * count, "{name}");
        }
    }
}

/// The traces HTA's analyses run on beside tally's: the NCCL ones, the
/// sampled ranks, and every kind of trace that tells a difference apart
/// (fractional timestamps, work launched outside the ProfilerSteps,
/// `cuda_sync` events, a CPU op with a stream argument, no steps at all,
/// ROCm).
const HTA_TRACES: [&str; 10] = [
    "nccl-distributed.json.gz",
    "sampled-rank-0.json.gz",
    "sampled-rank-1.json.gz",
    "queue-length-rank-0.json.gz",
    "diff-test-rank1.json.gz",
    "ns-resolution-rank-0.json.gz",
    "alexnet-cuda-sync.json.gz",
    "triton-single-kernel.json.gz",
    "inference-rank-1-minimal.json.gz",
    "rocm-mi250-train.json.gz",
];

/// tally's category of one of HTA's kernel types.
fn category_of(hta_type: &str) -> &'static str {
    match hta_type {
        "COMPUTATION" => "compute",
        "COMMUNICATION" => "communication",
        "MEMORY" => "memory",
        "OTHER" => "other",
        other => panic!("HTA kernel type {other}"),
    }
}

/// `--category-pattern` flags that give each kernel name of the trace
/// HTA's kernel type (`hta.utils.utils.get_kernel_type`: communication
/// when the name matches `^nccl.*Kernel`, memory when it starts with
/// `Memcpy`, `Memset` or `dma`, other when it contains `Memcpy` or `Sync`,
/// compute otherwise), name by name: HTA's regexes are case-sensitive and
/// tally's globs are not, so `*Sync*` would also catch a
/// `copy_async_kernel` that HTA calls compute. A name's `*` is a glob
/// wildcard that matches itself; the kernel-by-kernel check of categories
/// catches a pattern that caught another name too.
fn hta_type_patterns(hta: &Value) -> Vec<String> {
    hta["types_by_name"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(name, hta_type)| {
            ["--category-pattern".to_owned(), format!("{}={name}", category_of(hta_type.as_str().unwrap()))]
        })
        .collect()
}

/// One HTA run's figures beside tally's.
struct Beside<'a> {
    trace: &'a str,
    hta: &'a Value,
}

impl Beside<'_> {
    /// HTA's inward rounding of the events under `key` (`all`,
    /// `type:COMPUTATION`, `name:...`, `stream:7`), in microseconds: total
    /// and largest single event. 0 on traces with whole microseconds.
    fn slack(&self, key: &str) -> (f64, f64) {
        let entry = &self.hta["rounding"][key];
        (entry["total_us"].as_f64().unwrap_or(0.0), entry["largest_us"].as_f64().unwrap_or(0.0))
    }

    /// tally's `ns` against HTA's `us`: equal up to `slack_us` (HTA's
    /// rounding of the events involved); a float's last bit beyond.
    fn near(&self, what: &str, ns: u64, us: f64, slack_us: f64) {
        let difference = ns as f64 / 1000.0 - us;
        assert!(
            difference.abs() <= slack_us + 1e-6 * us.abs().max(1.0),
            "{}: {what}: tally {ns} ns, HTA {us} µs: {difference:+.3} µs beyond HTA's rounding of {slack_us:.3} µs",
            self.trace
        );
    }
}

/// tally's iterations beside HTA's steps, with their counts, summed and
/// busy times.
fn compare_steps(beside: &Beside<'_>, iterations: &[Value], per_step: &serde_json::Map<String, Value>) {
    let name = beside.trace;
    let u = |value: &Value| value.as_u64().unwrap();
    // Per step: HTA's own step of each event, beside tally's iterations.
    // HTA takes a step's time range on any process; tally the launching
    // process's steps only, so a step holding only launches of another
    // process is no iteration of tally's.
    let tallied: Vec<i64> = iterations.iter().map(step_number).collect();
    let stepped: Vec<i64> = per_step
        .iter()
        .filter(|(_, row)| u(&row["count"]) > u(&row["launched_on_another_process"]))
        .map(|(key, _)| key.parse().unwrap())
        .filter(|&step: &i64| step >= 0)
        .collect();
    let mut sorted = stepped.clone();
    sorted.sort_unstable();
    assert_eq!(tallied, sorted, "{name}: steps");
    for row in iterations {
        let step = &per_step[&step_number(row).to_string()];
        let total = step["rounding"]["total_us"].as_f64().unwrap();
        let at = format!("step {}", step_number(row));
        // The figures below hold when every launch is on the step's process.
        assert_eq!(u(&step["launched_on_another_process"]), 0, "{name}: {at}");
        assert_eq!(u(&row["count"]), u(&step["count"]), "{name}: {at}: count");
        beside.near(
            &format!("{at}: summed"),
            u(&row["summed_ns"]),
            step["summed_us"].as_f64().unwrap(),
            total,
        );
        beside.near(&format!("{at}: busy"), u(&row["busy_ns"]), step["busy_us"].as_f64().unwrap(), total);
    }
}

/// The step number of a tally iteration (`ProfilerStep#N`).
fn step_number(iteration: &Value) -> i64 {
    let id = iteration["iteration_ref"]["id"].as_str().unwrap();
    id.rsplit_once('#')
        .and_then(|(_, number)| number.parse().ok())
        .unwrap_or_else(|| panic!("iteration {id}"))
}

#[test]
fn htas_analyses_agree_with_tally_on_htas_selection_of_work() {
    let python = match tally_testkit::hta_python() {
        Ok(python) => python,
        // cargo xtask test sets TALLY_HTA_PYTHON to .venv-hta.
        Err(why) => return tally_testkit::skip(format!("HTA's live analyses: {why}")),
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/breakdown/hta_live.py");
    let dir = tempfile::tempdir().unwrap();
    // HTA takes seconds and up to 650 MB a trace: four at a time.
    for batch in HTA_TRACES.chunks(4) {
        let runs: Vec<_> = batch
            .iter()
            .map(|name| {
                let filtered = dir.path().join(format!("hta-kept-{name}"));
                let child = Command::new(&python)
                    .arg(&script)
                    .arg(kineto(name))
                    .arg(&filtered)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (*name, filtered, child)
            })
            .collect();
        for (name, filtered, child) in runs {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
            let hta: Value = serde_json::from_slice(&output.stdout).unwrap();
            compare_with_hta(&Beside { trace: name, hta: &hta }, &kineto(name), &filtered);
        }
    }
}

fn compare_with_hta(beside: &Beside<'_>, trace: &Path, filtered: &Path) {
    let (name, hta) = (beside.trace, beside.hta);
    let whole = breakdown_json(trace, &["--by", "iteration"]);
    let patterns = hta_type_patterns(hta);
    let mine = breakdown_json(filtered, &patterns.iter().map(String::as_str).collect::<Vec<_>>());
    let [whole, device] = [&whole, &mine].map(|run| {
        let devices = run["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 1, "{name}: one device clock, as HTA's one rank");
        &devices[0]
    });
    let u = |value: &Value| value.as_u64().unwrap();
    let (kept, of) = (u(&hta["kept"]["gpu_events"]), u(&hta["kept"]["of"]));
    let extras = hta["extras"].as_array().unwrap();
    let extra_of_type =
        |types: &[&str]| extras.iter().any(|extra| types.contains(&extra["type"].as_str().unwrap()));
    let (all, largest) = beside.slack("all");

    // HTA's selection: tally measures every kernel, copy and set; HTA keeps
    // those launched before the last ProfilerStep began (when there are
    // two steps or more).
    assert_eq!(u(&whole["count"]), of, "{name}: GPU events");
    assert_eq!(u(&device["count"]), kept, "{name}: the events HTA kept");
    let steps = hta["profiler_steps"].as_array().unwrap().len();
    let iterations = whole["iterations"].as_array().unwrap();
    let per_step = hta["per_iteration"].as_object().unwrap();
    if steps < 2 {
        assert_eq!(kept, of, "{name}: HTA filters nothing below two steps");
    } else {
        // Reproduced from tally's iterations: all but the last, plus the
        // work launched outside every step (which tally leaves out of
        // its iterations), when all of that came before the last step.
        let last = hta["profiler_steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|step| step.as_str().unwrap().rsplit_once('#').unwrap().1.parse::<i64>().unwrap())
            .max()
            .unwrap();
        let before_last: u64 =
            iterations.iter().filter(|row| step_number(row) != last).map(|row| u(&row["count"])).sum();
        let outside = per_step.get("-1").map_or(0, |row| u(&row["count"]));
        assert!(
            (before_last..=before_last + outside).contains(&kept),
            "{name}: HTA kept {kept}: tally's iterations before the last have {before_last}, {outside} launched outside"
        );
        if outside == 0 {
            assert_eq!(kept, before_last, "{name}");
        }
    }

    // HTA gives no step to the events on stream 0: what its steps hold is
    // all the rest.
    let stream_zero = u(&hta["stream_zero_events"]);
    let stepped_count: u64 = per_step.values().map(|row| u(&row["count"])).sum();
    assert_eq!(stepped_count + stream_zero, of, "{name}: HTA's steps");
    if stream_zero > 0 {
        eprintln!("{name}: {stream_zero} events on stream 0, in no step of HTA's");
    } else {
        compare_steps(beside, iterations, per_step);
    }

    // get_temporal_breakdown: from the first kept event to the last, the
    // merged busy time, and compute by HTA's kernel types.
    let temporal = &hta["temporal"];
    let at = |key: &str| temporal[key].as_f64().unwrap();
    let envelope = u(&device["envelope_end_ns"]) - u(&device["envelope_start_ns"]);
    let busy = u(&device["busy_ns"]);
    let compute = u(&device["categories"]["compute"]["busy_ns"]);
    let (compute_slack, _) = beside.slack("type:COMPUTATION");
    let hta_busy = at("kernel_time") - at("idle_time");
    if extras.is_empty() {
        beside.near("temporal: kernel_time", envelope, at("kernel_time"), 2.0 * largest);
        beside.near(
            "temporal: idle_time",
            u(&device["idle"]["idle_ns"]),
            at("idle_time"),
            all + 2.0 * largest,
        );
        beside.near("temporal: busy", busy, hta_busy, all);
        beside.near("temporal: compute_time", compute, at("compute_time"), compute_slack);
        beside.near(
            "temporal: non_compute_time",
            busy - compute,
            at("non_compute_time"),
            all + compute_slack,
        );
    } else {
        // HTA counts the extras as GPU time too: never less than tally's.
        assert!(
            hta_busy * 1000.0 >= busy as f64 - all * 1000.0,
            "{name}: temporal busy {hta_busy} µs vs {busy}"
        );
        assert!(hta_busy * 1000.0 > busy as f64, "{name}: the extras add to HTA's busy time");
        let compute_extras = extra_of_type(&["COMPUTATION"]);
        assert_eq!(
            at("compute_time") * 1000.0 > compute as f64 + compute_slack * 1000.0,
            compute_extras,
            "{name}"
        );
    }

    // get_gpu_kernel_breakdown's kernel-type table: time of each exact set
    // of HTA's types ("COMPUTATION overlapping COMMUNICATION" and so on),
    // from which tally's category, overlap and exposed figures follow.
    let types = hta["kernel_types"].as_object().unwrap();
    let over = |wanted: &dyn Fn(&str) -> bool| -> f64 {
        types.iter().filter(|(set, _)| wanted(set)).map(|(_, time)| time.as_f64().unwrap()).sum()
    };
    let has = |set: &str, kind: &str| set.split(" overlapping ").any(|part| part == kind);
    let slack_of =
        |kinds: &[&str]| -> f64 { kinds.iter().map(|kind| beside.slack(&format!("type:{kind}")).0).sum() };
    if !extra_of_type(&["COMPUTATION", "COMMUNICATION", "MEMORY"]) {
        for (kind, category) in
            [("COMPUTATION", "compute"), ("COMMUNICATION", "communication"), ("MEMORY", "memory")]
        {
            let ns = u(&device["categories"][category]["busy_ns"]);
            beside.near(
                &format!("kernel types: {category} busy"),
                ns,
                over(&|set| has(set, kind)),
                slack_of(&[kind]),
            );
        }
        for (a, b, key) in [
            ("COMMUNICATION", "COMPUTATION", "communication&compute"),
            ("MEMORY", "COMPUTATION", "memory&compute"),
            ("COMMUNICATION", "MEMORY", "communication&memory"),
        ] {
            let ns = u(&device["overlap_ns"][key]);
            beside.near(
                &format!("kernel types: {key}"),
                ns,
                over(&|set| has(set, a) && has(set, b)),
                slack_of(&[a, b]),
            );
        }
        for (kind, key) in [("COMMUNICATION", "exposed_communication_ns"), ("MEMORY", "exposed_memory_ns")] {
            let hta_us = over(&|set| has(set, kind) && !has(set, "COMPUTATION"));
            beside.near(
                &format!("kernel types: {key}"),
                u(&device[key]),
                hta_us,
                slack_of(&[kind, "COMPUTATION"]),
            );
        }
        if u(&device["categories"]["other"]["count"]) == 0 {
            beside.near("kernel types: busy", busy, over(&|_| true), all);
        }
    }

    // get_comm_comp_overlap: overlapped over all communication, rounded
    // to 0.01%.
    let communication = u(&device["categories"]["communication"]["busy_ns"]) as f64 / 1000.0;
    let overlapped = u(&device["overlap_ns"]["communication&compute"]) as f64 / 1000.0;
    match hta["overlap_pctg"].as_f64() {
        None => assert_eq!(communication, 0.0, "{name}: HTA found no communication"),
        Some(pctg) if !extra_of_type(&["COMPUTATION", "COMMUNICATION"]) => {
            let (comm_slack, both) =
                (slack_of(&["COMMUNICATION"]), slack_of(&["COMMUNICATION", "COMPUTATION"]));
            let low = 100.0 * (overlapped - both).max(0.0) / (communication + comm_slack);
            let high = 100.0 * (overlapped + both) / (communication - comm_slack);
            assert!(
                (low - 0.005 - 1e-9..=high + 0.005 + 1e-9).contains(&pctg),
                "{name}: overlap: HTA {pctg}%, tally {:.4}% (HTA's rounding allows {low:.4}..{high:.4})",
                100.0 * overlapped / communication
            );
        }
        Some(_) => {}
    }

    // get_gpu_kernel_breakdown's kernel table: per name, HTA's type,
    // count, summed, shortest and longest time.
    let kernels: std::collections::BTreeMap<&str, &Value> =
        device["kernels"].as_array().unwrap().iter().map(|k| (k["name"].as_str().unwrap(), k)).collect();
    let mut listed = std::collections::BTreeSet::new();
    for row in hta["kernels"].as_array().unwrap() {
        let kernel = row["name"].as_str().unwrap();
        listed.insert(kernel);
        let (total, largest) = beside.slack(&format!("name:{kernel}"));
        let at = |key: &str| row[key].as_f64().unwrap();
        // HTA's row of a name also holds the extras of that name (a CPU op
        // named after the kernel it launched, a `Stream Wait Event` that
        // its types call compute): theirs plus tally's.
        let (extra_count, extra_us) =
            extras.iter().filter(|extra| extra["name"] == kernel).fold((0, 0.0), |(count, us), extra| {
                (count + u(&extra["count"]), us + extra["summed_us"].as_f64().unwrap())
            });
        let Some(mine) = kernels.get(kernel) else {
            assert_eq!(extra_count, u(&row["count"]), "{name}: tally has no kernel {kernel}");
            continue;
        };
        assert_eq!(mine["category"], category_of(row["type"].as_str().unwrap()), "{name}: {kernel}");
        assert_eq!(u(&mine["count"]) + extra_count, u(&row["count"]), "{name}: {kernel}: count");
        beside.near(
            &format!("{kernel}: summed, with HTA's {extra_us} µs of extras"),
            u(&mine["summed_ns"]) + (extra_us * 1000.0) as u64,
            at("sum_us"),
            total,
        );
        if extra_count > 0 {
            continue;
        }
        beside.near(&format!("{kernel}: min"), u(&mine["min_ns"]), at("min_us"), largest);
        beside.near(&format!("{kernel}: max"), u(&mine["max_ns"]), at("max_us"), largest);
    }
    // What HTA leaves out of its table is what its types call other.
    for (kernel, mine) in &kernels {
        if !listed.contains(kernel) {
            assert_eq!(mine["category"], "other", "{name}: {kernel} is not in HTA's kernel table");
        }
    }

    // tally's own rule beside HTA's types, over the whole trace: they
    // agree on every name HTA does not call other; a name HTA calls other
    // for containing `Memcpy` or `Sync` is compute or memory here.
    for kernel in whole["kernels"].as_array().unwrap() {
        let kernel_name = kernel["name"].as_str().unwrap();
        let hta_type = hta["types_by_name"][kernel_name].as_str().unwrap();
        let category = kernel["category"].as_str().unwrap();
        if hta_type == "OTHER" {
            assert!(["compute", "memory"].contains(&category), "{name}: {kernel_name}: {category}");
        } else {
            assert_eq!(category, category_of(hta_type), "{name}: {kernel_name}: tally's rule vs HTA's type");
        }
    }

    // get_idle_time_breakdown: per stream, the gaps between consecutive
    // kernels, copies and sets; host wait, kernel wait and other add up to
    // the stream's envelope less its summed time.
    let mut idle_by_stream: std::collections::BTreeMap<u64, f64> = std::collections::BTreeMap::new();
    for row in hta["idle"].as_array().unwrap() {
        *idle_by_stream.entry(u(&row["stream"])).or_default() += row["idle_us"].as_f64().unwrap();
    }
    let streams = device["streams"].as_array().unwrap();
    assert_eq!(
        streams.iter().map(|s| u(&s["stream_id"])).collect::<Vec<_>>(),
        idle_by_stream.keys().copied().collect::<Vec<_>>(),
        "{name}: streams"
    );
    for stream in streams {
        let id = u(&stream["stream_id"]);
        let span = u(&stream["envelope_end_ns"]) - u(&stream["envelope_start_ns"]);
        let gaps = span as i128 - i128::from(u(&stream["summed_ns"]));
        let (total, largest) = beside.slack(&format!("stream:{id}"));
        let hta_us = idle_by_stream[&id];
        let difference = gaps as f64 / 1000.0 - hta_us;
        assert!(
            difference.abs() <= total + 2.0 * largest + 1e-6 * hta_us.max(1.0),
            "{name}: stream {id}: idle: tally {gaps} ns, HTA {hta_us} µs"
        );
    }
    eprintln!(
        "{name}: HTA kept {kept}/{of}; busy HTA {hta_busy} µs tally {busy} ns; compute HTA {} tally {compute}; \
         overlap HTA {:?}% tally {:.3}%; idle HTA {} tally {}",
        at("compute_time"),
        hta["overlap_pctg"].as_f64(),
        if communication > 0.0 { 100.0 * overlapped / communication } else { 0.0 },
        at("idle_time"),
        u(&device["idle"]["idle_ns"]),
    );
}

#[test]
fn by_iteration_splits_the_profiler_steps() {
    let mine = breakdown_json(&kineto("nccl-distributed.json.gz"), &["--by", "iteration"]);
    let device = &mine["devices"][0];
    let iterations = device["iterations"].as_array().unwrap();
    assert!(!iterations.is_empty());
    let busy: u64 = iterations.iter().map(|row| row["busy_ns"].as_u64().unwrap()).sum();
    assert!(busy <= device["busy_ns"].as_u64().unwrap());
    for row in iterations {
        let communication = row["categories"]["communication"]["busy_ns"].as_u64().unwrap();
        let overlapped = row["overlap_ns"]["communication&compute"].as_u64().unwrap();
        assert_eq!(row["exposed_communication_ns"].as_u64().unwrap() + overlapped, communication);
    }
    assert!(
        breakdown_json(&kineto("nccl-distributed.json.gz"), &[])["devices"][0].get("iterations").is_none()
    );
}

#[test]
fn category_patterns_move_kernels() {
    let path = kineto("nccl-distributed.json.gz");
    let plain = breakdown_json(&path, &[]);
    let moved = breakdown_json(&path, &["--category-pattern", "compute=nccl*"]);
    let (a, b) = (&plain["devices"][0]["categories"], &moved["devices"][0]["categories"]);
    assert!(a["communication"]["count"].as_u64().unwrap() > 0);
    assert_eq!(b["communication"]["count"], 0);
    assert_eq!(
        b["compute"]["count"].as_u64().unwrap(),
        a["compute"]["count"].as_u64().unwrap() + a["communication"]["count"].as_u64().unwrap()
    );
    assert_eq!(moved["category_patterns"], json!(["compute=nccl*"]));
    let bad = tally(&["breakdown", "--category-pattern", "gpu=*", path.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--category-pattern: \"gpu\" is not a category"));
}

#[test]
fn diff_pairs_devices_and_kernels() {
    let (a, b) = (kineto("sampled-rank-0.json.gz"), kineto("sampled-rank-1.json.gz"));
    let output = tally(&["diff", "--format", "json", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let compared: Value = serde_json::from_slice(&output.stdout).unwrap();
    let device = &compared["devices"][0];
    assert_eq!(device["matched_by"], "position");
    let (busy_a, busy_b) = (
        breakdown_json(&a, &[])["devices"][0]["busy_ns"].clone(),
        breakdown_json(&b, &[])["devices"][0]["busy_ns"].clone(),
    );
    assert_eq!((&device["busy_ns"]["a_ns"], &device["busy_ns"]["b_ns"]), (&busy_a, &busy_b));
    let change = device["busy_ns"]["change_ns"].as_i64().unwrap();
    assert_eq!(change, busy_b.as_i64().unwrap() - busy_a.as_i64().unwrap());
    let changed = device["kernels_changed"].as_array().unwrap();
    assert!(changed.windows(2).all(|pair| {
        pair[0]["summed_ns"]["change_ns"].as_i64().unwrap().abs()
            >= pair[1]["summed_ns"]["change_ns"].as_i64().unwrap().abs()
    }));
    // A run against itself changes nothing.
    let same = tally(&["diff", "--format", "json", a.to_str().unwrap(), a.to_str().unwrap()]);
    let same: Value = serde_json::from_slice(&same.stdout).unwrap();
    let device = &same["devices"][0];
    assert_eq!(device["matched_by"], "clock");
    assert_eq!(device["busy_ns"]["change_ns"], 0);
    assert!(device["kernels_appeared"].as_array().unwrap().is_empty());
    assert!(device["kernels_changed"].as_array().unwrap().iter().all(|k| k["summed_ns"]["change_ns"] == 0));
    let table = tally(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(table.status.success());
    assert!(String::from_utf8_lossy(&table.stdout).contains("kernels changed most"));
}

#[test]
fn bad_input_names_the_file_and_line_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"schema_version\": 2, \"event_type\": \"infer.nope\"}\n").unwrap();
    for command in
        [vec!["breakdown", bad.to_str().unwrap()], vec!["diff", bad.to_str().unwrap(), bad.to_str().unwrap()]]
    {
        let output = tally(&command);
        assert_eq!(output.status.code(), Some(1), "{command:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("bad.jsonl: line 1:"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(output.stdout.is_empty());
    }
    let missing = tally(&["breakdown", dir.path().join("absent.jsonl").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("absent.jsonl"));
}

#[test]
fn help_documents_the_json_keys() {
    let output = tally(&["breakdown", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    let more = ["\"communication&compute\"", "\"memory&compute\"", "summed_ns"];
    for key in DEVICE_KEYS.into_iter().chain(more) {
        assert!(help.contains(key), "{key} in --help");
    }
}
