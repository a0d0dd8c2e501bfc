//! An artifact that fits in its first window is read and decoded on the
//! calling thread, with no thread started; the threaded pipeline reads it
//! otherwise. Both must give the same thing on tally-conformance's generated
//! cases (valid and broken runs, embedded and compact files, gzip, several
//! rank files): the same records in the same order, or the same first error
//! naming the same file and line.

use std::io::Read;
use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::Index;
use tally_artifact::{ArtifactError, ErrorKind, ReadOptions, ReadStats, read_batches};
use tally_conformance::Kind;
use tally_conformance::generate::{CaseSpec, arb_case};
use tally_core::InferenceRecord;
use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{RunError, RunOptions, Unwatched, open_inputs, resolve_inputs};

/// What a read gave: each record with its line, and the counts; or the
/// first error's file, line, kind and reason.
type Outcome = Result<(Vec<(u64, InferenceRecord)>, ReadStats), (String, Option<u64>, ErrorKind, String)>;

fn read(bytes: &[u8], window_bytes: usize, chunk_bytes: usize, inline_small_inputs: bool) -> Outcome {
    let options = ReadOptions { window_bytes, chunk_bytes, inline_small_inputs, ..ReadOptions::default() };
    let mut records = Vec::new();
    read_batches(bytes, "rank0.jsonl", &options, |batch| {
        records.extend(batch.lines.into_iter().zip(batch.records));
        Ok(())
    })
    .map(|stats| (records, stats))
    .map_err(|error: ArtifactError| {
        (error.source_name().to_owned(), error.line(), error.kind(), error.reason().to_owned())
    })
}

/// A run's accounting in full detail, or its rejection: the kind, the file
/// and line it names, and the whole message.
fn resolve(paths: &[PathBuf], inline_small_inputs: bool) -> Result<AccountingReport, (String, String)> {
    let options = RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: None,
        keep_labels: false,
        threads: 0,
        inline_small_inputs,
    };
    let inputs = open_inputs(paths, None).map_err(|error| ("input".to_owned(), error.to_string()))?;
    match resolve_inputs(inputs, &options, &mut Unwatched) {
        Ok(run) => Ok(AccountingReport::of(&run, &account_gpu_time(&run), true)),
        Err(error) => {
            let located = match &error {
                RunError::Artifact(artifact) => {
                    format!("artifact {}:{:?}", artifact.source_name(), artifact.line())
                }
                RunError::Resolve { source, line, .. } => format!("resolve {source}:{line}"),
                RunError::Input(_) => "input".to_owned(),
            };
            Err((located, error.to_string()))
        }
    }
}

fn any_case() -> impl Strategy<Value = CaseSpec> {
    // Account cases include the broken runs; align cases the alignments.
    prop_oneof![3 => arb_case(Kind::Account), 1 => arb_case(Kind::Align)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_run_resolves_the_same_on_the_small_path_and_through_the_pipeline(spec in any_case()) {
        let case = spec.build();
        let directory = tempfile::tempdir().expect("temporary directory");
        let inputs = case.write(directory.path()).expect("the case is written");
        // The case's files are a few kilobytes: well inside one window.
        let small = resolve(&inputs.inputs, true);
        let piped = resolve(&inputs.inputs, false);
        prop_assert_eq!(small, piped, "{}", case.note);
    }

    #[test]
    fn an_artifact_reads_the_same_on_the_small_path_and_through_the_pipeline(
        spec in any_case(),
        cut in any::<Index>(),
        small_window in 16usize..2048,
        chunk in 1usize..4096,
    ) {
        let case = spec.build();
        for file in &case.files {
            let whole = file.encode().expect("the file encodes");
            // Cut short too: a gzip stream then fails part way, after some
            // lines (or a plain file ends inside a line).
            let short = whole[..cut.index(whole.len() + 1)].to_vec();
            for bytes in [whole, short] {
                let mut text = Vec::new();
                let _ = tally_artifact::decompressed(&bytes[..]).map(|mut text_of| text_of.read_to_end(&mut text));
                let length = text.len();
                // Windows just past the text (it fits: the small path), of
                // its size exactly (it does not: the end is a window of its
                // own), and smaller (several windows).
                for window in [length + 1, length.max(1), 2 * length + 1, small_window, 1 << 20] {
                    for chunk in [chunk, length + 1, 64 << 10] {
                        let small = read(&bytes, window, chunk, true);
                        let piped = read(&bytes, window, chunk, false);
                        prop_assert_eq!(&small, &piped, "{} (window {}, chunk {})", file.name, window, chunk);
                    }
                }
            }
        }
    }
}

#[test]
fn errors_name_the_same_file_and_line_on_both_paths() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let good = directory.path().join("rank0.jsonl");
    let bad = directory.path().join("rank1.jsonl");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/serving-run.jsonl");
    std::fs::copy(&example, &good).expect("copy");
    std::fs::write(&bad, "\n\n{\"schema_version\": 1, \"event_type\": \"infer.a\"}\n{not json\n")
        .expect("write");
    let paths = vec![good, bad.clone()];
    let small = resolve(&paths, true).expect_err("line 4 is not JSON");
    assert_eq!(small, resolve(&paths, false).expect_err("line 4 is not JSON"));
    assert_eq!(small.0, format!("artifact {}:Some(4)", bad.display()));
    assert!(small.1.starts_with(&format!("{}: line 4: ", bad.display())), "{}", small.1);
}
