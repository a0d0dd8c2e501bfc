//! What each coverage-guided fuzz target checks on one input, shared by the
//! libFuzzer targets (`fuzz/fuzz_targets/`) and by the test that replays
//! every crash ever found (`fuzz/regressions/`) and the seed corpora in a
//! plain `cargo test`. A check panics when tally is wrong: a parser that
//! panics, or two implementations that disagree; a clean rejection of bad
//! input is no failure.

use std::io::{Cursor, Read, Write};
use std::path::Path;

use tally_artifact::{ArtifactReader, ReadOptions, RecordDecoder, read_batches};
use tally_core::InferenceRecord;
use tally_trace::{ImportOptions, InputKind, import_inputs, open_reader};

/// One target's check of one input.
pub type Check = fn(&[u8]);

/// The fuzz targets, by name: what `cargo xtask fuzz` runs and the
/// regression folders are named after.
pub const TARGETS: &[(&str, Check)] = &[
    ("artifact_line", artifact_line),
    ("artifact_whole", artifact_whole),
    ("kineto", kineto),
    ("nsys", nsys),
    ("xplane", xplane),
    ("profile", profile),
    ("request", request),
    ("share_model", share_model),
    ("partial", partial),
];

/// The artifact line decoder: the typed fast path and the exact path give
/// the same answer on every line, whenever the fast path decides (and it
/// falls back to the exact path when it does not, so on every line).
pub fn artifact_line(data: &[u8]) {
    let mut fast = RecordDecoder::new("fuzz");
    let mut exact = RecordDecoder::new("fuzz").exact_only();
    for (number, line) in (1..).zip(data.split(|byte| *byte == b'\n')) {
        let ours = fast.decode_line(line, number);
        let reference = exact.decode_line(line, number);
        assert_eq!(
            ours.as_ref().map(|record| record.as_ref().map(json_of)),
            reference.as_ref().map(|record| record.as_ref().map(json_of)),
            "the fast and the exact path disagree on line {number}"
        );
        if reference.is_err() {
            // Both stop here, as a reader does.
            break;
        }
    }
}

/// A record's JSON: equality that does not depend on Python's numeric
/// equality (the two paths must produce the very same values).
fn json_of(record: &InferenceRecord) -> String {
    serde_json::to_string(record).unwrap_or_else(|error| format!("unserializable: {error}"))
}

/// Whole artifacts, plain and gzip: the parallel reader (several window
/// sizes) and the sequential reader agree on the records or on the first
/// error's line and reason; gzip changes nothing.
pub fn artifact_whole(data: &[u8]) {
    let limit = 1 << 20;
    let sequential = |bytes: &[u8]| -> Result<Vec<String>, (Option<u64>, String)> {
        let reader = ArtifactReader::new(std::io::BufReader::new(decompress(bytes)), "fuzz")
            .with_max_record_bytes(limit);
        let mut out = Vec::new();
        for item in reader {
            match item {
                Ok((_, record)) => out.push(json_of(&record)),
                Err(error) => return Err((error.line(), error.reason().to_owned())),
            }
        }
        Ok(out)
    };
    let parallel = |bytes: &[u8], window: usize| -> Result<Vec<String>, (Option<u64>, String)> {
        let options = ReadOptions {
            window_bytes: window,
            chunk_bytes: window / 4 + 1,
            max_record_bytes: limit,
            ..ReadOptions::default()
        };
        let mut out = Vec::new();
        read_batches(bytes, "fuzz", &options, |batch| {
            out.extend(batch.records.iter().map(json_of));
            Ok(())
        })
        .map_err(|error| (error.line(), error.reason().to_owned()))?;
        Ok(out)
    };
    let expected = sequential(data);
    for window in [64, 4096, 1 << 20] {
        let got = parallel(data, window);
        match (&expected, &got) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "records differ at window {window}"),
            // A gzip stream's I/O error has no line; the first bad line must agree.
            (Err((line_a, reason_a)), Err((line_b, reason_b))) if line_a.is_some() || line_b.is_some() => {
                assert_eq!((line_a, reason_a), (line_b, reason_b), "first errors differ at window {window}");
            }
            (Err(_), Err(_)) => {}
            _ => {
                panic!("one reader accepts what the other rejects (window {window}): {expected:?} / {got:?}")
            }
        }
    }
    if !data.starts_with(&[0x1f, 0x8b]) {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap_or_default();
        let compressed = encoder.finish().unwrap_or_default();
        let through_gzip = parallel(&compressed, 4096);
        assert_eq!(expected.is_ok(), through_gzip.is_ok(), "gzip changes the verdict");
        if let (Ok(a), Ok(b)) = (&expected, &through_gzip) {
            assert_eq!(a, b, "gzip changes the records");
        }
    }
}

fn decompress(bytes: &[u8]) -> Box<dyn Read + '_> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(bytes))
    } else {
        Box::new(bytes)
    }
}

fn options() -> ImportOptions {
    let mut options = ImportOptions::new(
        tally_core::NonEmptyString::new("fuzz").unwrap_or_else(|_| unreachable!("a literal")),
        tally_core::NonEmptyString::new("fuzz").unwrap_or_else(|_| unreachable!("a literal")),
    );
    options.max_event_bytes = 1 << 20;
    options
}

/// The Kineto reader: any bytes, as a trace; the records it sinks are the
/// count its summary gives.
pub fn kineto(data: &[u8]) {
    let source: Box<dyn Read + Send> = Box::new(Cursor::new(data.to_vec()));
    let Ok(input) = open_reader(Path::new("fuzz.json"), source, Some(InputKind::Trace)) else { return };
    let mut sunk = 0u64;
    if let Ok(summary) = import_inputs(vec![input], &options(), &mut |_| {
        sunk += 1;
        Ok(())
    }) {
        assert_eq!(summary.events, sunk, "the summary counts what was sunk");
    }
}

/// The Nsight Systems reader: any bytes as an SQLite file.
pub fn nsys(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("fuzz.sqlite");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let _ = tally_trace::import_traces_to_vec(&[path], &options());
}

/// The XPlane reader on any bytes, as a stream (so through its spooled
/// copy): refused or read, never a panic; the summary counts what was
/// sunk.
pub fn xplane(data: &[u8]) {
    let source: Box<dyn Read + Send> = Box::new(Cursor::new(data.to_vec()));
    let Ok(input) = open_reader(Path::new("fuzz.xplane.pb"), source, Some(InputKind::Trace)) else { return };
    let mut sunk = 0u64;
    if let Ok(summary) = import_inputs(vec![input], &options(), &mut |_| {
        sunk += 1;
        Ok(())
    }) {
        assert_eq!(summary.events, sunk, "the summary counts what was sunk");
    }
}

/// vertebrae's profile JSON: what loads writes back and loads again the same.
pub fn profile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(profile) = tally_profile::profile::ResourceProfile::from_json_str(text)
        && let Ok(written) = profile.to_json_string()
    {
        let again = tally_profile::profile::ResourceProfile::from_json_str(&written);
        assert_eq!(again.ok().as_ref(), Some(&profile), "a written profile loads back the same");
    }
    if let Ok(profile) = tally_distributed::DistributedResourceProfile::from_json_str(text)
        && let Ok(written) = profile.to_json_string()
    {
        let again = tally_distributed::DistributedResourceProfile::from_json_str(&written);
        assert_eq!(again.ok().as_ref(), Some(&profile), "a written distributed profile loads back the same");
    }
}

/// `tally aggregate --request`'s JSON.
pub fn request(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = tally_distributed::AggregateRequest::from_json_str(text);
}

/// `tally shares --model`'s JSON.
pub fn share_model(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = tally_gpu_time::ShareModel::from_json_str(text);
}

/// A partial's bytes (`tally partial`'s output, read back within small
/// limits): refused or read, never a panic. What reads back resolves or is
/// rejected, and merged with itself (every event delivered twice) is
/// accounted the same, or rejected by the same rule.
pub fn partial(data: &[u8]) {
    let limits = tally_partial::ReadLimits { max_frame_bytes: 1 << 20 };
    let Ok(partial) = tally_partial::Partial::from_bytes_limited(data, "fuzz", &limits) else { return };
    let twice =
        tally_partial::merge([partial.clone(), partial.clone()]).expect("a partial merges with itself");
    assert_eq!(twice.events(), 2 * partial.events(), "merging keeps every delivery");
    assert_eq!(twice.sources().len(), 2 * partial.sources().len(), "merging keeps every source");
    for labels in [false, true] {
        let once = partial_verdict(&partial, labels);
        assert_eq!(partial_verdict(&twice, labels), once, "a partial merged with itself is itself");
    }
}

/// A partial's `tally account --format json`, or its rejection (the
/// rule, the source and line).
fn partial_verdict(partial: &tally_partial::Partial, labels: bool) -> Result<String, String> {
    match partial.resolve(labels) {
        Ok(run) => {
            let accounting = tally_gpu_time::account_gpu_time(&run);
            let report = tally_gpu_time::AccountingReport::of(&run, &accounting, true);
            Ok(serde_json::to_string(&report).unwrap_or_else(|error| format!("unserializable: {error}")))
        }
        Err(tally_partial::PartialError::Run(error)) => Err(error.to_string()),
        Err(other) => panic!("a partial that was read is refused when resolved: {other}"),
    }
}

/// Seeds of the `partial` target: partials of the example serving run and
/// of a small Kineto trace, and damaged copies of the first (cut short,
/// cut to its header, a byte of its body flipped, another version).
fn partial_seeds(root: &Path) -> Vec<(String, Vec<u8>)> {
    let sources = [
        ("serving-run", root.join("examples/serving-run.jsonl")),
        (
            "kineto-minimal",
            root.join("crates/tally-trace/tests/fixtures/kineto/inference-rank-1-minimal.json.gz"),
        ),
    ];
    let mut seeds = Vec::new();
    for (name, path) in sources {
        let made = tally_partial::Partial::of_paths(&[path]).ok().map(tally_partial::Partial::into_bytes);
        if let Some(bytes) = made {
            seeds.push((format!("{name}.part"), bytes));
        }
    }
    let Some((_, whole)) = seeds.first().cloned() else { return seeds };
    seeds.push(("serving-run-cut.part".into(), whole[..whole.len() / 2].to_vec()));
    seeds.push(("serving-run-header.part".into(), whole[..whole.len().min(32)].to_vec()));
    let mut flipped = whole.clone();
    let middle = flipped.len() / 2 + 16;
    if let Some(byte) = flipped.get_mut(middle) {
        *byte ^= 0x55;
    }
    seeds.push(("serving-run-flipped.part".into(), flipped));
    let mut version = whole;
    if let Some(byte) = version.get_mut(10) {
        *byte = 2;
    }
    seeds.push(("serving-run-version-2.part".into(), version));
    seeds
}

/// The seed inputs of `target`, from the repository's fixtures under
/// `root`: what `cargo xtask fuzz` starts each corpus from and what the
/// replay test runs every check on.
pub fn seeds(target: &str, root: &Path) -> Vec<(String, Vec<u8>)> {
    let files = |dir: &str, keep: &dyn Fn(&str) -> bool| -> Vec<(String, Vec<u8>)> {
        let mut found = Vec::new();
        let mut stack = vec![root.join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let name =
                    path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                if path.is_dir() {
                    stack.push(path);
                } else if keep(&name)
                    && let Ok(bytes) = std::fs::read(&path)
                {
                    found.push((name, bytes));
                }
            }
        }
        found.sort();
        found
    };
    let json_field = |dir: &str, field: &dyn Fn(&serde_json::Value) -> Option<serde_json::Value>| {
        files(dir, &|name| name.ends_with(".json"))
            .into_iter()
            .filter_map(|(name, bytes)| {
                let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
                Some((name, field(&value)?.to_string().into_bytes()))
            })
            .collect::<Vec<_>>()
    };
    let artifacts = |name: &str| name.ends_with(".jsonl") || name.ends_with(".jsonl.gz");
    match target {
        "artifact_line" | "artifact_whole" => {
            let mut seeds = files("tests/fixtures/artifact", &artifacts);
            seeds.extend(files("tests/conformance", &artifacts));
            seeds.extend(files("examples", &artifacts));
            seeds
        }
        // The small traces: a seed of megabytes slows every mutation.
        "kineto" => files("crates/tally-trace/tests/fixtures/kineto", &|name| name.ends_with(".json.gz"))
            .into_iter()
            .filter(|(_, bytes)| bytes.len() < 200_000)
            .collect(),
        "nsys" => files("crates/tally-trace/tests/fixtures/nsys", &|name| name.ends_with(".sqlite")),
        "xplane" => files("crates/tally-trace/tests/fixtures/xplane", &|name| name.ends_with(".xplane.pb"))
            .into_iter()
            .filter(|(_, bytes)| bytes.len() < 300_000)
            .collect(),
        "profile" => {
            let mut seeds = json_field("tests/fixtures/profile", &|value| value.get("profile").cloned());
            seeds.extend(json_field("tests/fixtures/distributed", &|value| value.get("expected").cloned()));
            seeds
        }
        "request" => json_field("tests/fixtures/distributed", &|value| value.get("request").cloned()),
        "share_model" => files("tests/conformance/shares", &|name| name.ends_with(".model.json")),
        // Made from fixtures by this build, so they are in its format.
        "partial" => partial_seeds(root),
        _ => Vec::new(),
    }
}
