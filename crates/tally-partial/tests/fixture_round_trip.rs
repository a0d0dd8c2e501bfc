//! Every shipped trace, one partial each, carried as bytes and read back:
//! the same run, labels and all, as the trace's batches resolved without
//! encoding, and the same report as one process reading the trace. A
//! partial stores no event or activity key where the IDs and references it
//! holds give them (the reader computes them again), so this is also the
//! check that the keys computed on reading are those the trace's own
//! reading made.

use std::path::{Path, PathBuf};

use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{
    PreparedSink, RunOptions, Unwatched, default_import_options, open_inputs, resolve_inputs,
};
use tally_partial::{Item, Partial, PartialReader, PartialWriter, ReadLimits};
use tally_resolve::{PreparedBatch, ResolveError, StreamedRun, StreamingResolver};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn import() -> Result<tally_trace::ImportOptions, String> {
    default_import_options(&[], Some("round-trip")).map(|mut options| {
        options.created_at_ns = 0;
        options
    })
}

fn options(import: &Result<tally_trace::ImportOptions, String>) -> RunOptions<'_> {
    RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: Some(import),
        keep_labels: true,
        threads: 1,
        inline_small_inputs: true,
    }
}

fn report(run: &StreamedRun) -> String {
    let report = AccountingReport::of(run, &account_gpu_time(run), true);
    serde_json::to_string(&report).expect("a report serializes")
}

/// The traces of a folder whose names end in `suffix`.
fn traces(folder: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|entries| entries.filter_map(|entry| entry.ok().map(|entry| entry.path())).collect())
        .unwrap_or_default();
    paths.retain(|path| path.to_string_lossy().ends_with(suffix));
    paths.sort();
    paths
}

/// The chunks of a partial's bytes, decoded.
fn chunks(bytes: &[u8]) -> Vec<PreparedBatch> {
    let mut reader = PartialReader::new(bytes, "partial", ReadLimits::default()).expect("a partial");
    let mut chunks = Vec::new();
    while let Item::Batch(batch) = reader.next_item().expect("a frame") {
        chunks.push(batch);
    }
    chunks
}

/// Writes a read's batches into a partial, and keeps them as the partial
/// keeps them (a trace import's own records with their fingerprint set).
struct Both {
    writer: PartialWriter<Vec<u8>>,
    batches: Vec<PreparedBatch>,
}

impl PreparedSink for Both {
    fn source(&mut self, index: usize, imported: bool) {
        self.writer.source(index, imported);
    }

    fn push(&mut self, batch: &mut PreparedBatch) -> Result<(), ResolveError> {
        let pushed = self.writer.push(batch);
        // Copied as a partial copies them: with the contexts of the events
        // kept, and no other.
        let mut kept = PreparedBatch::default();
        kept.append(batch, |record| record);
        self.batches.push(kept);
        pushed
    }
}

/// Traces up to this size (compressed) are also read as one process reads
/// them, to compare reports; the larger ones would only slow the test.
const COMPARED_WITH_ONE_PROCESS: u64 = 2 << 20;

/// The trace's partial through bytes resolves to the very run (labels and
/// all) its batches make unencoded, and to the report of one process
/// reading the trace; its chunks, written again, are the same chunks.
fn check(path: &Path) {
    let name = path.display().to_string();
    let import = import();
    let mut both = Both { writer: PartialWriter::new(Vec::new()).expect("into memory"), batches: Vec::new() };
    let inputs = open_inputs(&[path.to_path_buf()], None).expect("inputs open");
    let read = tally_ingest::read_inputs(inputs, &options(&import), &mut Unwatched, &mut both);
    let single = |import| {
        let inputs = open_inputs(&[path.to_path_buf()], None).expect("inputs open");
        resolve_inputs(inputs, &options(import), &mut Unwatched)
    };
    let sources = match read {
        Ok(sources) => sources,
        Err(error) => {
            let refused = single(&import).expect_err("one process refuses it too");
            assert_eq!(refused.to_string(), error.to_string(), "{name}: the same refusal");
            return;
        }
    };
    let bytes = both.writer.finish(sources.names).expect("into memory");
    let back = Partial::from_bytes(&bytes, &name).expect("decodes");
    let run = back.resolve(true).expect("resolves");
    let mut resolver = StreamingResolver::new().keeping_labels();
    for batch in &both.batches {
        resolver.push_prepared(batch).expect("resolves");
    }
    let unencoded = resolver.finish().expect("resolves");
    assert!(format!("{run:?}") == format!("{unencoded:?}"), "{name}: the run differs from the unencoded one");
    if std::fs::metadata(path).expect("the trace").len() <= COMPARED_WITH_ONE_PROCESS {
        let single = single(&import).expect("one process reads it");
        assert_eq!(report(&run), report(&single), "{name}: the report");
    }
    // Written again from its decoded chunks, the partial holds the same
    // chunks, encoded alike (zlib's bytes may differ with how the stream
    // was fed).
    let mut writer = PartialWriter::new(Vec::new()).expect("into memory");
    let first = chunks(&bytes);
    for chunk in &first {
        writer.append(chunk, |record| record).expect("into memory");
    }
    let again = chunks(&writer.finish(back.sources().to_vec()).expect("into memory"));
    let encoded = |chunks: &[PreparedBatch]| -> Vec<String> {
        chunks.iter().map(|chunk| serde_json::to_string(chunk).expect("encodes")).collect()
    };
    assert!(encoded(&again) == encoded(&first), "{name}: the chunks written again differ");
}

#[test]
fn every_kineto_fixture_round_trips() {
    let paths = traces(&root().join("crates/tally-trace/tests/fixtures/kineto"), ".json.gz");
    assert!(paths.len() >= 10, "the Kineto fixtures: {paths:?}");
    for path in paths {
        check(&path);
    }
}

#[test]
fn every_nsys_fixture_round_trips() {
    let paths = traces(&root().join("crates/tally-trace/tests/fixtures/nsys"), ".sqlite");
    assert!(!paths.is_empty(), "the nsys fixtures");
    for path in paths {
        check(&path);
    }
}

/// The real exports beside the repository (`../shared/data/nsys`), where a
/// checkout has them.
#[test]
fn every_shared_nsys_export_round_trips() {
    let folder = root().join("../shared/data/nsys");
    let paths = traces(&folder, ".sqlite");
    if paths.is_empty() {
        eprintln!("skipped: no nsys exports in {} (a fresh clone has no ../shared)", folder.display());
        return;
    }
    for path in paths {
        check(&path);
    }
}
