//! Partials against the single process on shipped inputs: the example
//! serving run split between files, and real Kineto traces split between
//! partials with one run ID, give the same accounting and breakdown; the
//! bytes round-trip; damaged bytes are refused.

use std::path::{Path, PathBuf};

use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{RunOptions, Unwatched, default_import_options, open_inputs, resolve_inputs};
use tally_partial::{Partial, PartialError, ReadLimits, merge};
use tally_resolve::StreamedRun;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn options<'a>(import: &'a Result<tally_trace::ImportOptions, String>, labels: bool) -> RunOptions<'a> {
    RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: Some(import),
        keep_labels: labels,
        threads: 1,
        inline_small_inputs: true,
    }
}

fn import(run_id: &str) -> Result<tally_trace::ImportOptions, String> {
    default_import_options(&[], Some(run_id)).map(|mut options| {
        options.created_at_ns = 0;
        options
    })
}

fn opened(paths: &[PathBuf]) -> Vec<tally_partial::RunInput> {
    tally_partial::open_run_inputs(paths, None).expect("inputs open")
}

fn report(run: &StreamedRun) -> String {
    let report = AccountingReport::of(run, &account_gpu_time(run), true);
    serde_json::to_string(&report).expect("a report serializes")
}

fn single(paths: &[PathBuf], run_id: &str, labels: bool) -> StreamedRun {
    let import = import(run_id);
    let inputs = open_inputs(paths, None).expect("inputs open");
    resolve_inputs(inputs, &options(&import, labels), &mut Unwatched).expect("the run resolves")
}

fn partial(paths: &[PathBuf], run_id: &str) -> Partial {
    let import = import(run_id);
    let inputs = open_inputs(paths, None).expect("inputs open");
    Partial::of_inputs(inputs, &options(&import, true), &mut Unwatched).expect("the partial is made")
}

/// The example run's lines dealt round-robin into three files, each made
/// a partial, travel as bytes and merged in two orders: the same report
/// as the three files read by one process.
#[test]
fn split_artifact_merges_to_the_single_process_answer() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let paths = tally_testkit::records::split_artifact(
        &root().join("examples/serving-run.jsonl"),
        directory.path(),
        3,
    );
    let expected = report(&single(&paths, "unused", false));
    let parts: Vec<Partial> = paths
        .iter()
        .map(|path| {
            let made = partial(std::slice::from_ref(path), "unused");
            Partial::from_bytes(made.as_bytes(), "part").expect("decodes")
        })
        .collect();
    let forward = merge(parts.clone()).expect("merged");
    let backward = merge(parts.into_iter().rev()).expect("merged");
    assert_eq!(report(&forward.resolve(false).expect("resolves")), expected);
    assert_eq!(report(&backward.resolve(false).expect("resolves")), expected);
    // A partial of partials is a partial.
    let again = merge([merge([forward.clone()]).expect("merged"), Partial::default()]).expect("merged");
    assert_eq!(report(&again.resolve(false).expect("resolves")), expected);
}

/// Real Kineto traces, one partial each with the run's ID: the same
/// accounting as one import of them all.
#[test]
fn traces_split_between_partials_account_as_one_import() {
    let fixtures = root().join("crates/tally-trace/tests/fixtures/kineto");
    let paths = vec![fixtures.join("sampled-rank-0.json.gz"), fixtures.join("sampled-rank-1.json.gz")];
    let expected = report(&single(&paths, "ranks", false));
    let parts: Vec<Partial> = paths.iter().map(|path| partial(std::slice::from_ref(path), "ranks")).collect();
    let merged = merge(parts).expect("merged");
    assert_eq!(report(&merged.resolve(false).expect("resolves")), expected);
    let size: u64 = paths.iter().map(|path| std::fs::metadata(path).expect("exists").len()).sum();
    eprintln!("partial {} bytes for {size} bytes of gzip traces", merged.as_bytes().len());
}

/// Cut or altered bytes are refused with the byte offset and the rule.
#[test]
fn damaged_partials_are_refused() {
    let made = partial(&[root().join("examples/serving-run.jsonl")], "unused");
    let bytes = made.as_bytes().to_vec();
    let refused = |bytes: &[u8]| match Partial::from_bytes_limited(bytes, "p", &ReadLimits::default()) {
        Err(PartialError::Format { offset, rule, .. }) => format!("byte {offset}: {rule}"),
        other => panic!("accepted or another error: {other:?}"),
    };
    let cut = refused(&bytes[..bytes.len() - 1]);
    assert!(cut.contains("truncated") || cut.contains("damaged"), "{cut}");
    assert!(refused(&bytes[..12]).contains("cut short"));
    assert!(refused(b"{\"not\": 1}").contains("not a tally partial"));
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    let rule = refused(&flipped);
    assert!(rule.contains("damaged") || rule.contains("decode") || rule.contains("truncated"), "{rule}");
    let mut version = bytes.clone();
    version[10] = 9;
    assert!(refused(&version).contains("format version 9"));
    let mut extended = bytes.clone();
    extended.push(0);
    assert!(refused(&extended).contains("follows"));
    let small = ReadLimits { max_frame_bytes: 10 };
    let refused_small = Partial::from_bytes_limited(&bytes, "p", &small);
    assert!(
        matches!(&refused_small, Err(PartialError::Format { rule, .. }) if rule.contains("over the limit")),
        "{refused_small:?}"
    );
}

/// Two files deliver one event with different content: the partials,
/// alone or mixed with a raw file, are rejected with the message one
/// process gives, naming the original file and line.
#[test]
fn a_conflict_across_partials_names_the_original_file_and_line() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let line = |end: u64| {
        format!(
            r#"{{"schema_version": 2, "event_type": "infer.iteration", "event_id": "e1", "context": {{"run_id": "r", "session_id": "s", "producer_id": "p", "source": "doc", "clock_domain": "host", "clock_kind": "monotonic", "collection_mode": "active", "provenance": "observed"}}, "iteration_ref": {{"producer_id": "p", "id": "step-1"}}, "start_ns": 5, "end_ns": {end}}}"#
        )
    };
    let first = directory.path().join("a.jsonl");
    let second = directory.path().join("b.jsonl");
    std::fs::write(&first, format!("{}\n{}\n", line(9), line(9))).expect("written");
    std::fs::write(&second, format!("{}\n{}\n", line(9), line(10))).expect("written");
    let raw = vec![first.clone(), second.clone()];
    let import = import("unused");
    let expected =
        resolve_inputs(open_inputs(&raw, None).expect("open"), &options(&import, false), &mut Unwatched)
            .expect_err("a conflict")
            .to_string();
    assert!(expected.contains("b.jsonl: line 2"), "{expected}");
    let part = |path: &Path, name: &str| {
        let out = directory.path().join(name);
        partial(&[path.to_path_buf()], "unused").write(&out).expect("written");
        out
    };
    let (part_a, part_b) = (part(&first, "a.part"), part(&second, "b.part"));
    for inputs in [vec![part_a.clone(), part_b.clone()], vec![part_a.clone(), second.clone()]] {
        let found = tally_partial::resolve_mixed(
            opened(&inputs),
            &options(&import, false),
            &ReadLimits::default(),
            &mut Unwatched,
        )
        .map(|(run, _)| run)
        .expect_err("a conflict")
        .to_string();
        assert_eq!(found, expected, "{inputs:?}");
    }
    // A partial of partials keeps the original names.
    let both = directory.path().join("both.part");
    tally_partial::write_mixed(
        opened(&[part_a, part_b]),
        &options(&import, false),
        &ReadLimits::default(),
        &mut Unwatched,
        &both,
    )
    .expect("written");
    let found = tally_partial::resolve_mixed(
        opened(&[both]),
        &options(&import, false),
        &ReadLimits::default(),
        &mut Unwatched,
    )
    .map(|(run, _)| run)
    .expect_err("a conflict")
    .to_string();
    assert_eq!(found, expected);
}

/// A partial written into a missing directory leaves nothing behind; one
/// that cannot be made (a missing input) neither.
#[test]
fn a_failed_write_leaves_no_file() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let import = import("unused");
    let example = root().join("examples/serving-run.jsonl");
    let nowhere = directory.path().join("missing/out.part");
    let failed = tally_partial::write_mixed(
        opened(&[example]),
        &options(&import, false),
        &ReadLimits::default(),
        &mut Unwatched,
        &nowhere,
    );
    assert!(failed.is_err());
    let out = directory.path().join("out.part");
    let missing = directory.path().join("no-such.jsonl");
    let failed = tally_partial::open_run_inputs(&[missing], None);
    assert!(failed.expect_err("no input").to_string().contains("no-such.jsonl"));
    let refused = tally_partial::write_mixed(
        opened(&[root().join("crates/tally-trace/tests/fixtures/kineto/sampled-rank-0.json.gz")]),
        &options(&Err("--run-id: refused".into()), false),
        &ReadLimits::default(),
        &mut Unwatched,
        &out,
    );
    assert!(refused.expect_err("refused options").to_string().contains("refused"));
    assert_eq!(std::fs::read_dir(directory.path()).expect("listed").count(), 0);
}

/// Partials of traces imported per launch and per kernel are not read as
/// one run; each records how it was made.
#[test]
fn partials_of_different_trace_detail_are_refused_together() {
    let trace = root().join("crates/tally-trace/tests/fixtures/kineto/sampled-rank-0.json.gz");
    let launch = partial(std::slice::from_ref(&trace), "ranks");
    let kernel_import = import("ranks").map(|mut options| {
        options.detail = tally_trace::Detail::Kernel;
        options
    });
    let inputs = open_inputs(std::slice::from_ref(&trace), None).expect("inputs open");
    let kernel = Partial::of_inputs(inputs, &options(&kernel_import, true), &mut Unwatched).expect("made");
    assert_eq!(launch.traces(), Some(tally_trace::Detail::Launch));
    assert_eq!(kernel.traces(), Some(tally_trace::Detail::Kernel));
    let artifact = partial(&[root().join("examples/serving-run.jsonl")], "unused");
    assert_eq!(artifact.traces(), None);
    let refused = merge([launch.clone(), artifact, kernel]).expect_err("different detail");
    assert!(refused.to_string().contains("per kernel, but the inputs before it per launch"), "{refused}");
    assert!(merge([launch.clone(), launch]).is_ok());
}

/// Partial files decoded ahead on threads give the run, and the first
/// damaged one (in the files' order) is the error, whatever the threads.
#[test]
fn partials_decoded_on_threads_read_as_one_reader_reads_them() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let paths = tally_testkit::records::split_artifact(
        &root().join("examples/serving-run.jsonl"),
        directory.path(),
        5,
    );
    let import = import("unused");
    let parts: Vec<PathBuf> = paths
        .iter()
        .enumerate()
        .map(|(number, path)| {
            let out = directory.path().join(format!("p{number}.part"));
            partial(std::slice::from_ref(path), "unused").write(&out).expect("written");
            out
        })
        .collect();
    let expected = report(&single(&paths, "unused", false));
    let threaded = |threads: usize| RunOptions { threads, ..options(&import, false) };
    for threads in [1, 2, 3, 8] {
        let (run, _) = tally_partial::resolve_mixed(
            opened(&parts),
            &threaded(threads),
            &ReadLimits::default(),
            &mut Unwatched,
        )
        .expect("resolves");
        assert_eq!(report(&run), expected, "{threads} threads");
    }
    // The second and fourth cut short: the second is named.
    for cut in [&parts[1], &parts[3]] {
        let bytes = std::fs::read(cut).expect("read");
        std::fs::write(cut, &bytes[..bytes.len() / 2]).expect("written");
    }
    for threads in [1, 2, 8] {
        let error = tally_partial::resolve_mixed(
            opened(&parts),
            &threaded(threads),
            &ReadLimits::default(),
            &mut Unwatched,
        )
        .map(|_| ())
        .expect_err("cut short");
        assert!(error.to_string().starts_with(&parts[1].display().to_string()), "{threads} threads: {error}");
    }
}

/// Traces with no GPU work still name the run: the import's own records
/// are kept (with one fingerprint for every import of the run), so the
/// partials' run is the traces' run, not one without events.
#[test]
fn traces_without_gpu_work_keep_their_run() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let paths: Vec<PathBuf> = (0..2)
        .map(|rank| {
            let path = directory.path().join(format!("cpu{rank}.json"));
            let trace = format!(
                r#"{{"traceEvents": [{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": {rank}, "tid": 1, "ts": 1, "dur": 2}}]}}"#
            );
            std::fs::write(&path, trace).expect("written");
            path
        })
        .collect();
    let expected = report(&single(&paths, "cpu-run", false));
    assert!(expected.contains("\"run_id\":\"cpu-run\""), "{expected}");
    let parts: Vec<Partial> =
        paths.iter().map(|path| partial(std::slice::from_ref(path), "cpu-run")).collect();
    let merged = merge(parts).expect("merged");
    assert_eq!(report(&merged.resolve(false).expect("resolves")), expected);
}

/// Partials as bytes resolve and merge without being read back first: the
/// same run as their merge, and a damaged one named by its place.
#[test]
fn partials_as_bytes_resolve_and_merge_as_partials_do() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let paths = tally_testkit::records::split_artifact(
        &root().join("examples/serving-run.jsonl"),
        directory.path(),
        3,
    );
    let parts: Vec<Partial> =
        paths.iter().map(|path| partial(std::slice::from_ref(path), "unused")).collect();
    let bytes: Vec<&[u8]> = parts.iter().map(Partial::as_bytes).collect();
    let expected = report(&single(&paths, "unused", false));
    let (run, traces) = tally_partial::resolve_bytes(&bytes, false).expect("resolves");
    assert_eq!((report(&run), traces), (expected.clone(), None));
    let merged = tally_partial::merge_bytes(&bytes).expect("merged");
    assert_eq!(merged, merge(parts.clone()).expect("merged"));
    let cut = &bytes[1][..bytes[1].len() - 3];
    let damaged = [bytes[0], cut, bytes[2]];
    for error in [
        tally_partial::resolve_bytes(&damaged, false).map(|_| ()).expect_err("damaged"),
        tally_partial::merge_bytes(&damaged).map(|_| ()).expect_err("damaged"),
    ] {
        assert!(error.to_string().starts_with("partial 1: byte"), "{error}");
    }
}
