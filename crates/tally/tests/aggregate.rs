//! `tally aggregate` against vertebrae's results for the golden requests
//! (`tests/fixtures/distributed`, made by
//! `python/fixtures/make_distributed_fixtures.py`), its error exits, and
//! `tally account` on several ranks' artifacts at once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tally_artifact::{Form, write_artifact};
use tally_distributed::{CpuStandInRecorder, account_ranks, stand_in_clock_name};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/distributed")
}

fn fixtures() -> Vec<(String, Value)> {
    tally_testkit::json::json_fixtures(&fixtures_dir())
}

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().expect("tally runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// Equal as vertebrae wrote it: integers stay integers, floats bit for bit.
fn strict_eq(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(key, x)| b.get(key).is_some_and(|y| strict_eq(x, y)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| strict_eq(x, y))
        }
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            a.is_f64() && b.is_f64() && a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits)
        }
        _ => ours == theirs,
    }
}

#[test]
fn requests_print_what_vertebrae_computed() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut checked = 0;
    for (name, fixture) in fixtures() {
        // Scripted stores exist only in the fixture script.
        if fixture["kind"] != "aggregate" || !fixture["store"].is_null() {
            continue;
        }
        let path = dir.path().join(format!("{name}.request.json"));
        std::fs::write(&path, fixture["request"].to_string()).expect("write the request");
        let output = tally(&["aggregate", "--request", path.to_str().expect("UTF-8 path")]);
        match fixture["error"].as_object() {
            None => {
                assert_eq!(output.status.code(), Some(0), "{name}: {}", text(&output.stderr));
                let printed: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
                assert!(
                    strict_eq(&printed, &fixture["expected"]),
                    "{name}: {printed} != {}",
                    fixture["expected"]
                );
            }
            Some(error) => {
                assert_eq!(output.status.code(), Some(1), "{name}");
                assert!(output.stdout.is_empty(), "{name}: nothing on stdout");
                let message = error["message"].as_str().expect("message");
                let stderr = text(&output.stderr);
                assert!(stderr.contains(message), "{name}: {stderr}");
                // Every error names the file it concerns.
                assert!(stderr.contains(&path.display().to_string()), "{name}: {stderr}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} requests checked");
}

#[test]
fn the_inconsistent_model_exit_names_the_shards() {
    let fixture =
        fixtures().into_iter().find(|(name, _)| name == "error_inconsistent_model").expect("fixture").1;
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("request.json");
    std::fs::write(&path, fixture["request"].to_string()).expect("write");
    let output = tally(&["aggregate", "--request", path.to_str().expect("UTF-8 path")]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("Resource-profile shards have inconsistent model footprints.")
            && stderr.contains("\"m1\"")
            && stderr.contains("\"m0\""),
        "{stderr}"
    );
}

/// Writes each worker profile of a request to `<shard_key>.json`.
fn profile_files(request: &Value, dir: &Path) -> Vec<String> {
    request["profiles"]
        .as_array()
        .expect("pairs")
        .iter()
        .map(|pair| {
            let path = dir.join(format!("{}.json", pair[0].as_str().expect("key")));
            std::fs::write(&path, pair[1].to_string()).expect("write a profile");
            path.to_str().expect("UTF-8 path").to_owned()
        })
        .collect()
}

#[test]
fn profile_files_aggregate_like_the_request() {
    let mut checked = 0;
    for (name, fixture) in fixtures() {
        let request = &fixture["request"];
        let merged = &request["merged_embeddings"];
        let plain = fixture["kind"] == "aggregate"
            && fixture["error"].is_null()
            && fixture["store"].is_null()
            && request.get("merged_key").is_none()
            && request.get("merged_stat").is_none()
            && !request["profiles"].as_array().is_some_and(Vec::is_empty);
        if !plain {
            continue;
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut args: Vec<String> = vec!["aggregate".into()];
        args.extend(profile_files(request, dir.path()));
        args.extend([
            "--merged-shape".into(),
            format!("{},{}", merged["shape"][0], merged["shape"][1]),
            "--dtype".into(),
            merged["dtype"].as_str().expect("dtype").into(),
        ]);
        if merged["sparse"] == true {
            args.extend(["--sparse-nnz".into(), merged["nnz"].to_string()]);
        }
        if let Some(keys) = request["all_shard_keys"].as_array().filter(|keys| !keys.is_empty()) {
            let keys: Vec<&str> = keys.iter().map(|key| key.as_str().expect("key")).collect();
            args.extend(["--all-shard-keys".into(), keys.join(",")]);
        }
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        // The table is the default for files.
        let table = tally(&args);
        assert_eq!(table.status.code(), Some(0), "{name}: {}", text(&table.stderr));
        let table = text(&table.stdout);
        args.extend(["--format", "json"]);
        let output = tally(&args);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", text(&output.stderr));
        let printed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        assert!(strict_eq(&printed, &fixture["expected"]), "{name}: {printed}");
        let expected = &fixture["expected"];
        let first_line = format!(
            "status             {}: {} of {} shards profiled",
            expected["status"].as_str().expect("status"),
            expected["profiled_shard_count"],
            expected["shard_count"]
        );
        assert!(table.starts_with(&first_line), "{name}: {table}");
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} fixtures aggregated from files");
}

#[test]
fn an_invalid_profile_file_exits_one_naming_it() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("w0.json");
    std::fs::write(&path, r#"{"status": "measured", "inference": {"status": "fast"}}"#).expect("write");
    let output = tally(&["aggregate", path.to_str().expect("UTF-8 path"), "--merged-shape", "1,1"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("w0.json") && stderr.contains("invalid resource profile"), "{stderr}");
    let output = tally(&[
        "aggregate",
        path.to_str().expect("UTF-8 path"),
        "--merged-shape",
        "1,1",
        "--shard-keys",
        "a,b",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("--shard-keys names 2 shards for 1 profile files"));
}

#[test]
fn a_local_store_gives_the_merged_persisted_size() {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/profile/store");
    let fixture = fixtures().into_iter().find(|(name, _)| name == "single_worker").expect("fixture").1;
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("request.json");
    std::fs::write(&path, fixture["request"].to_string()).expect("write");
    let path = path.to_str().expect("UTF-8 path");
    let output = tally(&[
        "aggregate",
        "--request",
        path,
        "--store",
        store.to_str().expect("UTF-8"),
        "--merged-key",
        "emb/raw",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let printed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let persisted = &printed["embedding"]["evaluated_persisted"];
    assert_eq!(persisted["status"], "measured");
    // The store's array file, as vertebrae's manifest records it.
    let array = std::fs::read_dir(store.join("emb/raw"))
        .expect("store")
        .map(|entry| entry.expect("entry").path())
        .find(|path| path.extension().is_some_and(|ext| ext == "npy"))
        .expect("the stored array");
    assert_eq!(persisted["bytes"], std::fs::metadata(&array).expect("size").len());
    assert_eq!(printed["embedding"]["raw_persisted"], *persisted);
}

#[test]
fn account_takes_every_ranks_artifact_and_keeps_their_clocks_apart() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut paths = Vec::new();
    let mut records = Vec::new();
    for (rank, windows) in [(0u64, 4usize), (1, 2), (2, 3)] {
        let mut recorder = CpuStandInRecorder::new("ranks-run", rank, 3).expect("valid");
        for index in 0..windows {
            recorder
                .window(&format!("batch-{index}"), || {
                    std::hint::black_box((0..20_000u64).map(|x| x ^ rank).sum::<u64>())
                })
                .expect("event");
        }
        let rank_records = recorder.into_records();
        let path = dir.path().join(format!("rank-{rank}.jsonl"));
        write_artifact(&path, &rank_records, Form::Compact).expect("write the artifact");
        records.extend(rank_records);
        paths.push(path.to_str().expect("UTF-8 path").to_owned());
    }
    let mut args = vec!["account", "--format", "json"];
    args.extend(paths.iter().map(String::as_str));
    let output = tally(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let expected = serde_json::to_value(account_ranks(&records).expect("resolves")).expect("JSON");
    assert_eq!(report["device_totals"], expected["device_totals"]);
    assert_eq!(report["iterations"], expected["iterations"]);
    let clocks: Vec<&str> = report["device_totals"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["clock_domain"].as_str().expect("clock"))
        .collect();
    let names: Vec<String> = (0..3).map(stand_in_clock_name).collect();
    assert_eq!(clocks, names);
    let counts: Vec<u64> = report["device_totals"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["activity_count"].as_u64().expect("n"))
        .collect();
    assert_eq!(counts, [4, 2, 3]);
    assert_eq!(report["counts"]["iterations"], 9);
    // The table names each rank's clock too.
    let mut args = vec!["account"];
    args.extend(paths.iter().map(String::as_str));
    let table = text(&tally(&args).stdout);
    for name in &names {
        assert!(table.contains(name.as_str()), "{name} missing from\n{table}");
    }
}
