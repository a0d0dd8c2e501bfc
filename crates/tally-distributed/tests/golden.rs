//! Golden tests against what vertebrae 1.1.0 computed for the same requests
//! (`python/fixtures/make_distributed_fixtures.py`), and a live differential
//! check on fresh random requests when `TALLY_PYTHON` is set.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{ScriptedStore, fixtures, key_order, strict_difference};
use tally_distributed::{
    AggregateRequest, DistributedResourceProfile, ResourceProfileLike, aggregate_in_chunks,
    distributed_resource_profile_columns, with_distributed_embedding_footprint,
};
use tally_profile::{EmbeddingMetadata, EmbeddingStore, PersistedSizes, StoredEmbeddingStat};
use tally_testkit::json::{Ordered, columns_json, json_files};

fn report(failures: &[String]) {
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// Checks one `aggregate` fixture through every path; returns the mismatches.
fn check_aggregate(name: &str, fixture: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    let request = match AggregateRequest::from_json_value(fixture["request"].clone()) {
        Ok(request) => request,
        Err(error) => return vec![format!("{name}: request rejected: {error}")],
    };
    let store = ScriptedStore::from_spec(&fixture["store"]);
    let store = store.as_ref().map(|store| store as &dyn EmbeddingStore);
    let results = [
        ("sequential", request.aggregate(store)),
        ("parallel", request.aggregate_parallel(store)),
        (
            "chunks of 1",
            aggregate_in_chunks(&request.profiles, &request.merged_embeddings, &request.options(store), 1),
        ),
        (
            "chunks of 7",
            aggregate_in_chunks(&request.profiles, &request.merged_embeddings, &request.options(store), 7),
        ),
    ];
    for (path, result) in results {
        match (&fixture["error"], result) {
            (Value::Null, Ok(profile)) => {
                let ours = profile.to_json_value().expect("finite");
                if let Some(difference) = strict_difference(&ours, &fixture["expected"], name) {
                    failures.push(format!("{path}: {difference}"));
                }
                for (prefix, key) in [("", "columns"), ("rp_", "columns_prefixed")] {
                    let columns = columns_json(&distributed_resource_profile_columns(&profile, prefix));
                    if let Some(difference) =
                        strict_difference(&columns, &fixture[key], &format!("{name}.{key}"))
                    {
                        failures.push(format!("{path}: {difference}"));
                    }
                }
            }
            (Value::Null, Err(error)) => failures.push(format!("{name} ({path}): tally failed: {error}")),
            (expected, Ok(_)) => {
                failures.push(format!("{name} ({path}): vertebrae raised {expected}, tally did not"))
            }
            (expected, Err(error)) => {
                if error.to_string() != expected["message"].as_str().expect("message") {
                    failures.push(format!("{name} ({path}): tally {error:?} != vertebrae {expected}"));
                }
            }
        }
    }
    failures
}

#[test]
fn aggregation_matches_vertebrae_on_every_fixture() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut errors = 0;
    for (name, fixture) in fixtures().iter().filter(|(_, fixture)| fixture["kind"] == "aggregate") {
        failures.extend(check_aggregate(name, fixture));
        checked += 1;
        errors += usize::from(!fixture["error"].is_null());
    }
    assert!(checked >= 30, "only {checked} aggregate fixtures");
    assert!(errors >= 4, "the error cases are committed ({errors})");
    report(&failures);
}

#[test]
fn the_fixtures_cover_what_the_issue_lists() {
    let all = fixtures();
    let expected = |name: &str| {
        &all.iter().find(|(candidate, _)| candidate == name).unwrap_or_else(|| panic!("fixture {name}")).1["expected"]
    };
    assert_eq!(expected("missing_shards")["status"], "partial");
    assert_eq!(expected("all_cache_hits")["status"], "not_measured");
    assert_eq!(expected("cache_hits")["profiled_shard_count"], 2);
    assert_eq!(expected("device_unavailable")["max_worker_peak_device_allocated_bytes"], Value::Null);
    assert_eq!(expected("sparse_merged")["embedding"]["evaluated_bytes"], 123_456 * 8 + 10_001 * 4);
    assert!(expected("warnings")["warnings"].as_array().is_some_and(|warnings| warnings.len() >= 6));
    assert_eq!(expected("peak_ties")["max_worker_peak_rss_shard_key"], "z");
    assert_eq!(expected("store_error_warns")["embedding"]["evaluated_persisted"]["status"], "unavailable");
    let inconsistent = &all.iter().find(|(name, _)| name == "error_inconsistent_model").expect("fixture").1;
    assert_eq!(
        inconsistent["error"]["message"],
        "Resource-profile shards have inconsistent model footprints."
    );
}

#[test]
fn the_inconsistent_model_error_names_the_disagreeing_shards() {
    let fixture =
        &fixtures().into_iter().find(|(name, _)| name == "error_inconsistent_model").expect("fixture").1;
    let request = AggregateRequest::from_json_value(fixture["request"].clone()).expect("valid request");
    match request.aggregate(None) {
        Err(tally_distributed::AggregateError::InconsistentModelFootprint { first_shard, other_shard }) => {
            assert_eq!((first_shard.as_str(), other_shard.as_str()), ("m0", "m1"));
        }
        other => panic!("expected the inconsistent-model error, got {other:?}"),
    }
}

#[test]
fn written_field_order_is_asdict_order() {
    let mut failures = Vec::new();
    for (name, text) in json_files(&support::fixtures_dir()) {
        let fixture: Value = serde_json::from_str(&text).expect("JSON");
        if fixture["kind"] != "aggregate" || !fixture["error"].is_null() {
            continue;
        }
        let theirs: Ordered = serde_json::from_str(&text).expect("JSON");
        let theirs = key_order(theirs.member("expected"));
        let profile =
            DistributedResourceProfile::from_json_value(fixture["expected"].clone()).expect("loads");
        let ours: Ordered = serde_json::from_str(&profile.to_json_string().expect("finite")).expect("JSON");
        if key_order(&ours) != theirs {
            failures.push(format!("{name}: field order differs from asdict"));
        }
    }
    report(&failures);
}

#[test]
fn profiles_load_like_resource_profile_like_from_dict() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, fixture) in fixtures().iter().filter(|(_, fixture)| fixture["kind"] == "dict") {
        checked += 1;
        let loaded = match ResourceProfileLike::from_json_value(fixture["input"].clone()) {
            Ok(loaded) => loaded,
            Err(error) => {
                failures.push(format!("{name}: rejected: {error}"));
                continue;
            }
        };
        let scope = match &loaded {
            ResourceProfileLike::Local(_) => "local",
            ResourceProfileLike::Distributed(_) => "distributed_shards",
        };
        if fixture["scope"] != scope {
            failures.push(format!("{name}: loaded as {scope}, vertebrae as {}", fixture["scope"]));
            continue;
        }
        let written = loaded.to_json_value().expect("finite");
        failures.extend(strict_difference(&written, &fixture["expected"], name));
        for (prefix, key) in [("", "columns"), ("rp_", "columns_prefixed")] {
            let columns = columns_json(&loaded.columns(prefix));
            failures.extend(strict_difference(&columns, &fixture[key], &format!("{name}.{key}")));
        }
    }
    assert!(checked >= 6, "only {checked} dict fixtures");
    report(&failures);
}

fn stat(spec: &Value, key: &str) -> Option<StoredEmbeddingStat> {
    spec.get(key).filter(|value| !value.is_null()).map(|stat| {
        StoredEmbeddingStat::new(
            stat["uri"].as_str().expect("uri"),
            stat["size_bytes"].as_u64().expect("size"),
            stat["storage_format"].as_str().expect("format"),
        )
        .expect("valid stat")
    })
}

#[test]
fn with_distributed_embedding_footprint_matches_vertebrae() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, fixture) in fixtures().iter().filter(|(_, fixture)| fixture["kind"] == "with_embedding") {
        checked += 1;
        let spec = &fixture["spec"];
        let before =
            DistributedResourceProfile::from_json_value(fixture["expected_before"].clone()).expect("loads");
        let store = ScriptedStore::from_spec(&spec["store"]);
        let (raw_stat, evaluated_stat) = (stat(spec, "raw_stat"), stat(spec, "evaluated_stat"));
        let persisted = PersistedSizes {
            store: store.as_ref().map(|store| store as &dyn EmbeddingStore),
            raw_key: spec["raw_key"].as_str(),
            evaluated_key: spec["evaluated_key"].as_str(),
            raw_stat: raw_stat.as_ref(),
            evaluated_stat: evaluated_stat.as_ref(),
            persisted_storage: spec["persisted_storage"].as_bool().unwrap_or(true),
        };
        let raw = EmbeddingMetadata::from_json(&spec["raw"]).expect("metadata");
        let evaluated = EmbeddingMetadata::from_json(&spec["evaluated"]).expect("metadata");
        let after = with_distributed_embedding_footprint(Some(before.clone()), &raw, &evaluated, &persisted)
            .expect("footprint")
            .expect("Some in, Some out");
        failures.extend(strict_difference(
            &after.to_json_value().expect("finite"),
            &fixture["expected"],
            name,
        ));
        // The distributed evidence is kept: only the embedding and warnings change.
        assert_eq!(
            DistributedResourceProfile {
                embedding: before.embedding.clone(),
                warnings: before.warnings.clone(),
                ..after
            },
            before,
            "{name}"
        );
        let none = with_distributed_embedding_footprint(None, &raw, &evaluated, &persisted).expect("None");
        assert!(none.is_none());
    }
    assert!(checked >= 3, "only {checked} with_embedding fixtures");
    report(&failures);
}

#[test]
fn live_vertebrae_agrees_on_fresh_random_requests() {
    let python = match tally_testkit::reference_python(&["vertebrae"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(why),
    };
    let out = tempfile::tempdir().expect("temporary directory");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/fixtures/make_distributed_fixtures.py");
    let seed = std::process::id() % 100_000;
    let status = Command::new(python)
        .arg(script)
        .args(["--random", "25", "--seed", &seed.to_string(), "--out"])
        .arg(out.path())
        .status()
        .expect("run the fixture script");
    assert!(status.success(), "the fixture script failed");
    let mut failures = Vec::new();
    let cases = json_files(out.path());
    assert_eq!(cases.len(), 25);
    for (name, text) in cases {
        let fixture: Value = serde_json::from_str(&text).expect("JSON");
        failures.extend(check_aggregate(&format!("{name} (seed {seed})"), &fixture));
    }
    report(&failures);
}

#[test]
fn text_requests_load_exactly_like_decoded_json() {
    let mut checked = 0;
    for (name, fixture) in fixtures().iter().filter(|(_, fixture)| fixture["kind"] == "aggregate") {
        let text = fixture["request"].to_string();
        let from_text = AggregateRequest::from_json_str(&text);
        let from_value = AggregateRequest::from_json_value(fixture["request"].clone());
        assert_eq!(from_text, from_value, "{name}");
        checked += 1;
    }
    assert!(checked >= 30);
    let profile = r#"{"inference": {"status": "not_measured"}, "host_memory": {"status": "disabled"},
        "device_memory": {"status": "disabled"}, "model": {"status": "unavailable"}}"#;
    let merged =
        r#""merged_embeddings": {"shape": [2, 2], "dtype": "float32", "sparse": false, "nnz": null}"#;
    // A duplicated key takes its last value, as Python's json does.
    let duplicated = format!(r#"{{"profiles": [], "profiles": [["a", {profile}]], {merged}}}"#);
    let request = AggregateRequest::from_json_str(&duplicated).expect("the last value wins");
    assert_eq!(request.profiles.len(), 1);
    // A profile must be an object, not its fields in a list.
    let listed = format!(
        r#"{{"profiles": [["a", ["not_measured", {{"status": "not_measured"}}, {{"status": "disabled"}},
            {{"status": "disabled"}}, {{"status": "unavailable"}}, null, {{}}, []]]], {merged}}}"#
    );
    let error = AggregateRequest::from_json_str(&listed).expect_err("not an object");
    assert!(error.to_string().contains("must be a JSON object"), "{error}");
    // `persisted_storage` must be a boolean, not null.
    let null_flag = format!(r#"{{"profiles": [], {merged}, "persisted_storage": null}}"#);
    let error = AggregateRequest::from_json_str(&null_flag).expect_err("null is not a boolean");
    assert_eq!(error.to_string(), "persisted_storage: must be true or false");
    let unknown = format!(r#"{{"profiles": [], {merged}, "merged_keys": "typo"}}"#);
    let error = AggregateRequest::from_json_str(&unknown).expect_err("unknown key");
    assert!(error.to_string().starts_with("merged_keys: unknown key"), "{error}");
}
