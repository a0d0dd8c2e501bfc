//! Live checks against vertebrae 1.1.0 itself: it loads every profile tally
//! writes and flattens it to the same columns; Python agrees with tally's
//! `repr` and numpy with its dtype sizes. Runs when `TALLY_PYTHON` names the
//! reference interpreter; prints "skipped" otherwise.

mod support;

use serde_json::{Value, json};
use support::{fixtures, json_difference, replay_embedding, replay_profiler};
use tally_profile::profile::ResourceProfile;
use tally_profile::{
    CallSpec, EmbeddingMetadata, HostMemoryMode, PersistedSizes, ProfilerConfig, ResourceProfiler,
    dtype_itemsize, python_repr, resource_profile_columns, with_embedding_footprint,
};
use tally_testkit::json::columns_json;

const SCRIPT: &str = r#"
import json, sys
from dataclasses import asdict
import numpy as np
from vertebrae.profiling import resource_profile_columns, resource_profile_from_dict
request = json.load(sys.stdin)
profiles = []
for value in request["profiles"]:
    try:
        profile = resource_profile_from_dict(json.loads(json.dumps(value)))
        same = asdict(profile) == value
        columns = [[k, v] for k, v in resource_profile_columns(profile, prefix="p_").items()]
        profiles.append({"loaded": True, "same": same, "columns": columns})
    except Exception as exc:
        profiles.append({"loaded": False, "error": f"{type(exc).__name__}: {exc}"})
reprs = [repr(text) for text in request["strings"]]
sizes = []
for name in request["dtypes"]:
    try:
        sizes.append(np.dtype(name).itemsize)
    except TypeError:
        sizes.append(None)
json.dump({"profiles": profiles, "reprs": reprs, "sizes": sizes}, sys.stdout)
"#;

/// Profiles tally measured for real: host memory by each method, an embedding.
fn measured_profiles() -> Vec<ResourceProfile> {
    let mut out = Vec::new();
    for mode in [HostMemoryMode::Auto, HostMemoryMode::Sampler] {
        let config = ProfilerConfig { host_memory_mode: mode, ..ProfilerConfig::default() };
        let mut profiler = ResourceProfiler::new(config);
        for samples in [4, 8, 8] {
            profiler.measure_call(|| vec![0u8; 1 << 20].len(), CallSpec::new(samples, "batch"));
        }
        let profile = profiler.finish(false);
        let raw = EmbeddingMetadata::dense(20, 384, "float32");
        let evaluated = EmbeddingMetadata::sparse(20, 30_000, "float32", 700);
        let with_embedding =
            with_embedding_footprint(Some(profile.clone()), &raw, &evaluated, &PersistedSizes::default())
                .expect("complete metadata")
                .expect("a profile");
        out.push(profile);
        out.push(with_embedding);
    }
    out
}

#[test]
fn vertebrae_loads_what_tally_writes() {
    let python = match tally_testkit::reference_python(&["vertebrae", "numpy"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(format!("no vertebrae to load tally's profiles: {why}")),
    };
    let mut written: Vec<(String, Value)> = Vec::new();
    for (name, fixture) in fixtures() {
        let json = match fixture["kind"].as_str() {
            Some("profiler") => {
                replay_profiler(&fixture["spec"], fixture["adapter_name"].as_str().expect("name"))
            }
            Some("embedding") => {
                let base = support::fixture(fixture["base"].as_str().expect("base"));
                let base = ResourceProfile::from_json_value(base["profile"].clone()).expect("loads");
                replay_embedding(&fixture["spec"], base)
            }
            _ => ResourceProfile::from_json_value(fixture["input"].clone())
                .expect("loads")
                .to_json_value()
                .expect("finite"),
        };
        written.push((name, json));
    }
    for (index, profile) in measured_profiles().into_iter().enumerate() {
        written.push((format!("measured-{index}"), profile.to_json_value().expect("finite")));
    }
    let strings = [
        "plain",
        "it's",
        "say \"hi\"",
        "both ' and \"",
        "tab\t\n\r\\",
        "\u{7f}\u{80}\u{a0}é€😀",
        "\u{200b}\u{2028}\u{e000}\u{fffe}",
    ];
    let dtypes = [
        "float32",
        "<f4",
        ">f8",
        "=f2",
        "float16",
        "f8",
        "float",
        "double",
        "single",
        "half",
        "int8",
        "|i1",
        "u1",
        "uint8",
        "b",
        "B",
        "int16",
        "h",
        "H",
        "int32",
        "i",
        "I",
        "int64",
        "l",
        "q",
        "L",
        "Q",
        "int",
        "uint",
        "intp",
        "uintp",
        "bool",
        "?",
        "complex64",
        "F",
        "complex128",
        "D",
        "complex",
        "longdouble",
        "g",
        "clongdouble",
        "G",
        "float128",
        "complex256",
        "S10",
        "U8",
        "V4",
        "bfloat16",
        "float8",
    ];
    let request = json!({
        "profiles": written.iter().map(|(_, json)| json.clone()).collect::<Vec<_>>(),
        "strings": strings.to_vec(),
        "dtypes": dtypes.to_vec(),
    });
    let output = tally_testkit::run_python(&python, SCRIPT, request.to_string().as_bytes());
    assert!(output.status.success(), "python failed: {}", String::from_utf8_lossy(&output.stderr));
    let answer: Value = serde_json::from_slice(&output.stdout).expect("JSON answer");
    let mut failures = Vec::new();
    for ((name, json), verdict) in written.iter().zip(answer["profiles"].as_array().expect("profiles")) {
        if verdict["loaded"] != true {
            failures.push(format!("{name}: vertebrae rejected it: {}", verdict["error"]));
            continue;
        }
        if verdict["same"] != true {
            failures.push(format!("{name}: asdict(resource_profile_from_dict(x)) != x"));
        }
        let profile = ResourceProfile::from_json_value(json.clone()).expect("tally loads its own");
        let ours = columns_json(&resource_profile_columns(&profile, "p_"));
        if let Some(difference) = json_difference(&ours, &verdict["columns"], &format!("{name}.columns")) {
            failures.push(difference);
        }
    }
    for (text, theirs) in strings.iter().zip(answer["reprs"].as_array().expect("reprs")) {
        if python_repr(text) != theirs.as_str().expect("a string") {
            failures.push(format!("repr({text:?}): tally {} != python {theirs}", python_repr(text)));
        }
    }
    for (name, theirs) in dtypes.iter().zip(answer["sizes"].as_array().expect("sizes")) {
        let ours = dtype_itemsize(name).ok();
        if ours != theirs.as_u64() {
            failures.push(format!("np.dtype({name:?}).itemsize: tally {ours:?} != numpy {theirs}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
