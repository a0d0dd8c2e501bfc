//! Golden interchange tests against profiles vertebrae 1.1.0 wrote
//! (`python/fixtures/make_profile_fixtures.py`).

mod support;

use serde_json::Value;
use support::{fixtures, json_difference, key_order, replay_embedding, replay_profiler};
use tally_profile::profile::ResourceProfile;
use tally_profile::resource_profile_columns;
use tally_testkit::json::columns_json;

fn failures_report(failures: &[String]) {
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn vertebrae_profiles_load_and_write_back_unchanged() {
    let mut failures = Vec::new();
    for (name, fixture) in fixtures() {
        let expected = &fixture["profile"];
        let profile = match ResourceProfile::from_json_value(expected.clone()) {
            Ok(profile) => profile,
            Err(error) => {
                failures.push(format!("{name}: rejected: {error}"));
                continue;
            }
        };
        let written = profile.to_json_value().expect("finite profile");
        if let Some(difference) = json_difference(&written, expected, &name) {
            failures.push(difference);
        }
        // Field order is asdict's, everywhere but inside the free-form context.
        let ours = key_order(&profile.to_json_string().expect("finite profile"));
        let theirs = key_order(&serde_json::to_string(expected).expect("JSON"));
        let theirs_in_file_order = key_order(
            &std::fs::read_to_string(support::fixtures_dir().join(format!("{name}.json"))).expect("fixture"),
        );
        let file_profile_keys: Vec<&String> =
            theirs_in_file_order.iter().filter(|path| path.starts_with(".profile.")).collect();
        let ours_prefixed: Vec<String> = ours.iter().map(|path| format!(".profile{path}")).collect();
        let ours_prefixed: Vec<&String> = ours_prefixed.iter().collect();
        if ours_prefixed != file_profile_keys {
            failures.push(format!("{name}: field order differs from asdict"));
        }
        assert_eq!(ours.len(), theirs.len(), "{name}: same number of fields");
    }
    failures_report(&failures);
}

#[test]
fn columns_match_resource_profile_columns() {
    let mut failures = Vec::new();
    for (name, fixture) in fixtures() {
        let profile = ResourceProfile::from_json_value(fixture["profile"].clone()).expect("loads");
        for (prefix, key) in [("", "columns"), ("rp_", "columns_prefixed")] {
            let ours = columns_json(&resource_profile_columns(&profile, prefix));
            let theirs = &fixture[key];
            let names = |columns: &Value| -> Vec<Value> {
                columns.as_array().expect("pairs").iter().map(|pair| pair[0].clone()).collect()
            };
            if names(&ours) != names(theirs) {
                failures.push(format!("{name}: column names or order differ for prefix {prefix:?}"));
            } else if let Some(difference) = json_difference(&ours, theirs, &format!("{name}.{key}")) {
                failures.push(difference);
            }
        }
    }
    failures_report(&failures);
}

#[test]
fn serialized_dicts_load_like_resource_profile_from_dict() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, fixture) in fixtures().into_iter().filter(|(_, fixture)| fixture["kind"] == "dict") {
        let profile =
            ResourceProfile::from_json_value(fixture["input"].clone()).expect("vertebrae loaded it");
        let written = profile.to_json_value().expect("finite");
        if let Some(difference) = json_difference(&written, &fixture["profile"], &name) {
            failures.push(difference);
        }
        checked += 1;
    }
    failures_report(&failures);
    assert!(checked >= 3);
}

#[test]
fn finish_builds_the_profile_vertebrae_builds_from_the_same_calls() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, fixture) in fixtures().into_iter().filter(|(_, fixture)| fixture["kind"] == "profiler") {
        let adapter_name = fixture["adapter_name"].as_str().expect("adapter name");
        let ours = replay_profiler(&fixture["spec"], adapter_name);
        if let Some(difference) = json_difference(&ours, &fixture["profile"], &name) {
            failures.push(difference);
        }
        checked += 1;
    }
    failures_report(&failures);
    assert!(checked >= 20, "every profiler case replays ({checked})");
}

#[test]
fn with_embedding_footprint_matches_vertebrae() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, fixture) in fixtures().into_iter().filter(|(_, fixture)| fixture["kind"] == "embedding") {
        let base_name = fixture["base"].as_str().expect("base case");
        let base = ResourceProfile::from_json_value(support::fixture(base_name)["profile"].clone())
            .expect("base loads");
        let ours = replay_embedding(&fixture["spec"], base);
        if let Some(difference) = json_difference(&ours, &fixture["profile"], &name) {
            failures.push(difference);
        }
        checked += 1;
    }
    failures_report(&failures);
    assert!(checked >= 6);
}
