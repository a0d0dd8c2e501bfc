#![doc = include_str!("../README.md")]
//!
//! One run's evidence, read from its files and resolved as it streams by:
//! what `tally account` and `tally shares` do before they count, and what
//! the Python package's `account_paths` does, in one place.
//!
//! ```no_run
//! # fn main() -> Result<(), tally_ingest::RunError> {
//! use tally_resolve::ResolvedEvidence;
//! let run = tally_ingest::resolve_paths(&["rank0.jsonl".into(), "rank1.jsonl.gz".into()])?;
//! println!("{} activities", run.counts().activities);
//! # Ok(())
//! # }
//! ```
//!
//! Artifacts are decoded window by window and pushed into a
//! [`StreamingResolver`], keeping none of their records; profiler traces
//! among the inputs are imported together (as `tally import` would) where
//! the first of them stands. The first rejection ends the read.

use std::fmt;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use tally_artifact::{ArtifactError, LineSink, ReadOptions, decompressed_as, read_events};
use tally_core::view::EventView;
use tally_core::{InferenceRecord, NonEmptyString};
use tally_resolve::{PreparedBatch, ResolveError, StreamedRun, StreamingResolver};
use tally_trace::{ImportOptions, OpenedInput, RecordBatcher, SinkError, TraceError, TraceRecord};

/// Why a run could not be read and resolved.
#[derive(Debug)]
pub enum RunError {
    /// An artifact could not be opened or read, or one of its lines broke a
    /// rule (the error names the file and line).
    Artifact(ArtifactError),
    /// The records broke a resolution rule; `source` and `line` name the
    /// offending record (for imported traces, `line` is the record's number).
    Resolve {
        /// The file (or `a + b` for traces imported together).
        source: String,
        /// The 1-based line or record number.
        line: u64,
        /// The rule.
        error: ResolveError,
    },
    /// An input could not be opened, or its traces not imported.
    Input(InputError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Artifact(error) => error.fmt(f),
            RunError::Resolve { source, line, error } => write!(f, "{source}: line {line}: {error}"),
            RunError::Input(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for RunError {}

impl From<InputError> for RunError {
    fn from(error: InputError) -> Self {
        RunError::Input(error)
    }
}

/// Why an input could not be opened, or the traces among a run's inputs
/// not imported: the one error of the way in, from the opening to the
/// import, each cause kept as its layer made it.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The input could not be opened, or what it is not decided
    /// ([`tally_trace::open_input`]).
    #[error(transparent)]
    Open(TraceError),
    /// The import options for the traces could not be made: the message of
    /// whoever made them ([`RunOptions::import`], [`default_import_options`]),
    /// in its own terms (a command names the flag at fault).
    #[error("{0}")]
    ImportOptions(String),
    /// The traces could not be imported.
    #[error(transparent)]
    Import(TraceError),
    /// The resolver rejected a record that none of the inputs holds (not
    /// reached: every record it is given is numbered by its input).
    #[error(transparent)]
    Unplaced(ResolveError),
}

/// What a caller may watch of a long read (a progress bar); every method
/// has a default that does nothing.
pub trait Watcher {
    /// An artifact starts to be read from `reader`: the reader to read from
    /// instead (one that counts its bytes, say).
    fn reading(&mut self, path: &Path, reader: Box<dyn Read + Send>) -> Box<dyn Read + Send> {
        let _ = path;
        reader
    }
    /// A window of lines was resolved.
    fn window_done(&mut self) {}
    /// The artifact is read.
    fn finished(&mut self) {}
    /// Traces read together were imported; `summary` is what the import
    /// says of each (its `notes` among them).
    fn traces_imported(&mut self, summary: &tally_trace::ImportSummary) {
        let _ = summary;
    }
}

/// A [`Watcher`] that watches nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unwatched;

impl Watcher for Unwatched {}

/// How the inputs of a run are read.
#[derive(Debug)]
pub struct RunOptions<'a> {
    /// The longest artifact line accepted
    /// ([`ReadOptions::max_record_bytes`]).
    pub max_record_bytes: usize,
    /// The import options for the traces among the inputs, made by the
    /// caller before the read from those traces (in input order), or why
    /// they could not be made; `None` for [`default_import_options`]. Only
    /// a run with traces uses them, and options that could not be made are
    /// reported where the traces stand among the inputs, as an import's
    /// rejection would be: after the artifacts before them are read.
    pub import: Option<&'a Result<ImportOptions, String>>,
    /// Keep each activity's labels (name, CUDA correlation ID and scope:
    /// [`StreamingResolver::keeping_labels`]), as the overlap breakdown
    /// needs; accounting does not, and is faster without them.
    pub keep_labels: bool,
    /// Threads decoding each artifact ([`ReadOptions::threads`]; 0: one per
    /// core). The result is the same whatever the number.
    pub threads: usize,
    /// Whether a small artifact is read and decoded on the calling thread
    /// ([`ReadOptions::inline_small_inputs`]; the results are the same, and
    /// it is faster: off only to test the pipeline).
    pub inline_small_inputs: bool,
}

/// Import options with the defaults every importer uses: the run ID given,
/// or one derived from the traces' paths; created now; this host.
pub fn default_import_options(
    traces: &[&OpenedInput],
    run_id: Option<&str>,
) -> Result<ImportOptions, String> {
    let run_id = match run_id {
        Some(run_id) => run_id.to_owned(),
        None => tally_trace::default_run_id(traces),
    };
    let run_id = NonEmptyString::new(run_id).map_err(|error| error.to_string())?;
    let mut options = ImportOptions::new(run_id.clone(), run_id);
    options.created_at_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
    options.importer_host = host_name();
    Ok(options)
}

fn host_name() -> Option<NonEmptyString> {
    let text = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())?;
    NonEmptyString::new(text.trim()).ok()
}

/// Opens each path once and decides what it is (`tally_trace::open_input`'s
/// rule, or `forced`).
pub fn open_inputs(
    paths: &[PathBuf],
    forced: Option<tally_trace::InputKind>,
) -> Result<Vec<OpenedInput>, InputError> {
    paths.iter().map(|path| tally_trace::open_input(path, forced).map_err(InputError::Open)).collect()
}

/// Imported trace records resolved at a time.
const TRACE_BATCH: usize = 512;

/// Batches the resolver has emptied, for the decoding threads to fill again.
///
/// A fresh batch per chunk of lines was most of a run's page faults (a
/// perf of `tally account` on the 150 MB v4 bench artifact: 28 000 minor
/// faults, half of them in the batches' first writes and growth), since the
/// allocator hands the freed pages back to the system at once
/// (`tally`'s main). Batches in flight are bounded by the reader's windows,
/// so the pool is too; [`BatchPool::MOST`] caps it all the same, and a
/// batch grown past [`BatchPool::LARGEST`] by one huge record is let go
/// rather than kept.
struct BatchPool {
    emptied: Mutex<Vec<PreparedBatch>>,
    /// Whether the resolver keeps activity labels, so batches must carry
    /// them ([`PreparedBatch::without_labels`]).
    labels: bool,
}

impl BatchPool {
    /// The most batches kept.
    const MOST: usize = 64;
    /// The largest batch kept, in bytes of room (a 64 KB chunk's batch has
    /// about 50 KB).
    const LARGEST: usize = 1 << 20;

    fn new(labels: bool) -> Self {
        Self { emptied: Mutex::new(Vec::new()), labels }
    }

    /// An empty batch with room for about `events`, reused where one is
    /// free.
    fn take(&self, events: usize) -> PreparedBatch {
        let reused = self.emptied.lock().ok().and_then(|mut emptied| emptied.pop());
        match reused {
            Some(mut batch) => {
                batch.clear();
                batch.reserve(events);
                batch
            }
            None if self.labels => PreparedBatch::with_capacity(events),
            None => PreparedBatch::with_capacity(events).without_labels(),
        }
    }

    /// Gives a resolved batch back.
    fn give(&self, batch: PreparedBatch) {
        if batch.capacity_bytes() > Self::LARGEST {
            return;
        }
        if let Ok(mut emptied) = self.emptied.lock()
            && emptied.len() < Self::MOST
        {
            emptied.push(batch);
        }
    }
}

/// An import's records, prepared for the resolver where they are imported.
struct TracePreparing<'p> {
    /// The import's place among the run's inputs.
    file: usize,
    pool: &'p BatchPool,
}

impl RecordBatcher for TracePreparing<'_> {
    type Batch = PreparedBatch;

    fn batch(&self) -> PreparedBatch {
        self.pool.take(TRACE_BATCH)
    }

    fn add(
        &self,
        batch: &mut PreparedBatch,
        number: u64,
        record: TraceRecord<'_>,
    ) -> Result<bool, SinkError> {
        batch.push(position(self.file, number), &record.view());
        Ok(batch.len() >= TRACE_BATCH)
    }
}

/// Lines read per window: small windows keep the decoder's working set at a
/// few megabytes, and are no slower.
const WINDOW_BYTES: usize = 1 << 19;

/// Where a record came from, packed into the position the resolver reports
/// in its errors: the file's index above bit 40, the line below. No table
/// of positions is kept.
const LINE_BITS: u32 = 40;

/// The position of line (or record number) `line` of source `file`: what
/// the resolver reports in its errors, and what a partial result keeps of
/// each event's origin.
pub fn position(file: usize, line: u64) -> usize {
    (file << LINE_BITS) | (line & ((1 << LINE_BITS) - 1)) as usize
}

/// The source index and line of a [`position`].
pub fn origin(position: usize) -> (usize, u64) {
    (position >> LINE_BITS, (position & ((1 << LINE_BITS) - 1)) as u64)
}

/// The sources a run's records came from, in the order they were read: an
/// artifact's path, or the traces imported together (`a + b`, their
/// records numbered across the import). A [`position`]'s file indexes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// Each source's name, as errors show it.
    pub names: Vec<String>,
}

impl Sources {
    /// The error of the resolver's rejection, naming the source and line of
    /// the record it names.
    pub fn locate(&self, error: ResolveError) -> RunError {
        let (file, line) = origin(error.record());
        match self.names.get(file) {
            Some(name) => RunError::Resolve { source: name.clone(), line, error },
            None => RunError::Input(InputError::Unplaced(error)),
        }
    }
}

/// Where a run's prepared records go, batch by batch in the stream's order:
/// a resolver, or a partial result collecting them.
pub trait PreparedSink {
    /// Source number `index` starts (an artifact, or the traces imported
    /// together: `imported`), before any of its records.
    fn source(&mut self, index: usize, imported: bool) {
        let _ = (index, imported);
    }

    /// Takes the next batch (its positions made with [`position`]); the
    /// sink may change it (renumber it, say), as it is emptied after. A
    /// rejection stops the read.
    fn push(&mut self, batch: &mut PreparedBatch) -> Result<(), ResolveError>;
}

impl PreparedSink for StreamingResolver {
    fn push(&mut self, batch: &mut PreparedBatch) -> Result<(), ResolveError> {
        self.push_prepared(batch)
    }
}

impl PreparedSink for Resolver<'_> {
    fn push(&mut self, batch: &mut PreparedBatch) -> Result<(), ResolveError> {
        self.get().push_prepared(batch)
    }
}

/// A chunk of an artifact's lines, prepared for the resolver as they are
/// decoded.
struct Preparing<'p> {
    file: usize,
    batch: PreparedBatch,
    pool: &'p BatchPool,
}

impl LineSink for Preparing<'_> {
    type Output = PreparedBatch;

    fn reserve(&mut self, lines: usize) {
        self.batch = self.pool.take(lines);
    }

    fn record(&mut self, line: u64, record: InferenceRecord) {
        self.batch.push_record(position(self.file, line), &record);
    }

    fn event(&mut self, line: u64, event: &EventView<'_>) {
        self.batch.push(position(self.file, line), event);
    }

    fn finish(self) -> PreparedBatch {
        self.batch
    }
}

/// Reads every input of one run and resolves their records together as
/// they stream by, keeping none of them: stormlog's rules, file by file, in
/// order.
pub fn resolve_inputs(
    inputs: Vec<OpenedInput>,
    options: &RunOptions<'_>,
    watcher: &mut dyn Watcher,
) -> Result<StreamedRun, RunError> {
    std::thread::scope(|scope| resolve_in(scope, inputs, options, watcher))
}

/// Records past which the resolver's tables are made on a thread of their
/// own while the first windows are read and decoded: sized for a large
/// input they are megabytes, and filling them was most of the start of
/// `tally account` of the 150 MB bench artifact (4 ms), when no other
/// thread had work yet.
const TABLES_APART: usize = 1 << 16;

/// The resolver, its tables being made on another thread until the first
/// batch needs them.
struct Resolver<'scope> {
    made: Option<StreamingResolver>,
    making: Option<std::thread::ScopedJoinHandle<'scope, StreamingResolver>>,
    keep_labels: bool,
}

impl<'scope> Resolver<'scope> {
    /// A resolver with room for about `records` records.
    fn new(scope: &'scope std::thread::Scope<'scope, '_>, records: usize, keep_labels: bool) -> Self {
        let make = move || {
            let resolver = StreamingResolver::with_capacity(records);
            if keep_labels { resolver.keeping_labels() } else { resolver }
        };
        if records < TABLES_APART {
            return Self { made: Some(make()), making: None, keep_labels };
        }
        Self { made: None, making: Some(scope.spawn(make)), keep_labels }
    }

    /// The resolver, waiting for its tables if they are still being made.
    fn get(&mut self) -> &mut StreamingResolver {
        let (making, keep_labels) = (&mut self.making, self.keep_labels);
        self.made.get_or_insert_with(|| match making.take() {
            // Making tables only allocates; a panic there is a bug, passed on.
            Some(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // `new` made it or started making it: not reached.
            None if keep_labels => StreamingResolver::new().keeping_labels(),
            None => StreamingResolver::new(),
        })
    }

    /// The resolver itself.
    fn into_made(mut self) -> StreamingResolver {
        self.get();
        // `get` just made it.
        self.made.unwrap_or_default()
    }
}

fn resolve_in<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    inputs: Vec<OpenedInput>,
    options: &RunOptions<'_>,
    watcher: &mut dyn Watcher,
) -> Result<StreamedRun, RunError> {
    let mut resolver = Resolver::new(scope, expected_records(&inputs), options.keep_labels);
    let sources = read_inputs(inputs, options, watcher, &mut resolver)?;
    resolver.into_made().finish().map_err(|error| sources.locate(error))
}

/// About how many records the inputs hold, from their sizes: for sizing a
/// resolver's tables once, instead of rehashing them at every doubling.
pub fn expected_records<'a>(inputs: impl IntoIterator<Item = &'a OpenedInput>) -> usize {
    // Tables sized once for about the records the files hold (an artifact
    // row is some hundreds of bytes: 578 on average in the bench's v4
    // artifact, more in v2; a real Kineto trace makes a record of about 830
    // bytes, its CPU ops and flow events making none), instead of rehashed
    // at every doubling. A high guess costs the key indexes' slots, filled
    // at once (8 bytes each); a low one (a compressed file), the rehashes.
    let expected: u64 = inputs
        .into_iter()
        .filter_map(|input| {
            let bytes = std::fs::metadata(input.path()).ok()?.len();
            Some(if input.is_trace() { bytes / 1000 } else { bytes / 500 })
        })
        .sum();
    usize::try_from(expected).unwrap_or(0).min(1 << 26)
}

/// Reads every input of one run and passes their records, prepared, to
/// `sink` in the stream's order (artifacts window by window, the traces
/// imported together where the first of them stands), keeping none of
/// them: what [`resolve_inputs`] resolves, and what a partial result
/// collects. Returns the sources the records' positions name. The first
/// rejection, the sink's included, ends the read.
pub fn read_inputs(
    inputs: Vec<OpenedInput>,
    options: &RunOptions<'_>,
    watcher: &mut dyn Watcher,
    sink: &mut dyn PreparedSink,
) -> Result<Sources, RunError> {
    let mut sources = Sources::default();
    read_more_inputs(inputs, options, watcher, sink, &mut sources)?;
    Ok(sources)
}

/// [`read_inputs`] after the records of `sources` (partial results read
/// before these inputs, say): the inputs' sources are numbered after them
/// and added to them, and a rejection names its source among them all.
pub fn read_more_inputs(
    inputs: Vec<OpenedInput>,
    options: &RunOptions<'_>,
    watcher: &mut dyn Watcher,
    sink: &mut dyn PreparedSink,
    sources: &mut Sources,
) -> Result<(), RunError> {
    let pool = BatchPool::new(options.keep_labels);
    enum Step {
        Artifact(OpenedInput),
        Traces,
    }
    let mut traces: Vec<OpenedInput> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    for input in inputs {
        if input.is_trace() {
            if traces.is_empty() {
                steps.push(Step::Traces);
            }
            traces.push(input);
        } else {
            steps.push(Step::Artifact(input));
        }
    }
    for step in steps {
        let input = match step {
            Step::Traces => {
                // Their "line" is the record's number.
                let shown: Vec<String> =
                    traces.iter().map(|input| input.path().display().to_string()).collect();
                sources.names.push(shown.join(" + "));
                let file = sources.names.len() - 1;
                sink.source(file, true);
                let defaults;
                let import = match options.import {
                    Some(Ok(import)) => import,
                    Some(Err(message)) => return Err(InputError::ImportOptions(message.clone()).into()),
                    None => {
                        defaults = default_import_options(&traces.iter().collect::<Vec<_>>(), None)
                            .map_err(InputError::ImportOptions)?;
                        &defaults
                    }
                };
                let mut rejected: Option<ResolveError> = None;
                // Imported records are prepared on the threads that import
                // them and resolved a batch at a time, as artifact windows
                // are: the resolver touches a batch's table slots together.
                let batcher = TracePreparing { file, pool: &pool };
                let outcome = tally_trace::import_in_batches(
                    std::mem::take(&mut traces),
                    import,
                    &batcher,
                    &mut |mut batch, before| {
                        // Numbered in its trace; `before` records came
                        // before the trace (positions' lines are the low
                        // bits, far from full).
                        batch.shift_records(before as usize);
                        let pushed = sink.push(&mut batch);
                        pool.give(batch);
                        // The resolver's rejection itself stops the import
                        // (which may end with another error of its threads
                        // meanwhile): the rejection is the answer.
                        pushed.map_err(|error| {
                            rejected = Some(error.clone());
                            Box::new(error) as SinkError
                        })
                    },
                );
                if let Some(error) = rejected {
                    return Err(sources.locate(error));
                }
                watcher.traces_imported(&outcome.map_err(InputError::Import)?);
                continue;
            }
            Step::Artifact(input) => input,
        };
        let name = input.path().display().to_string();
        sources.names.push(name.clone());
        let file = sources.names.len() - 1;
        sink.source(file, false);
        let path = input.path().to_path_buf();
        // Opening sniffed it: read as it told, not sniffed again.
        let compression = input.compression();
        let reader = decompressed_as(watcher.reading(&path, input.into_reader()), compression);
        let read_options = ReadOptions {
            window_bytes: WINDOW_BYTES,
            chunk_bytes: WINDOW_BYTES / 8,
            max_record_bytes: options.max_record_bytes,
            threads: options.threads,
            inline_small_inputs: options.inline_small_inputs,
            ..ReadOptions::default()
        };
        // Each chunk is read into views where it can be, and hashed and
        // copied into its compact form, on the decoding threads: the
        // resolver is the serial part of the pipeline, and is left only the
        // lookups.
        let start = || Preparing { file, batch: PreparedBatch::default(), pool: &pool };
        let outcome = read_events(reader, &name, &read_options, start, |mut prepared| {
            let pushed = sink.push(&mut prepared);
            pool.give(prepared);
            match pushed {
                Ok(()) => {
                    watcher.window_done();
                    ControlFlow::Continue(())
                }
                // Stop reading: the first rejection is the answer.
                Err(error) => ControlFlow::Break(error),
            }
        });
        watcher.finished();
        if let ControlFlow::Break(error) = outcome.map_err(RunError::Artifact)? {
            return Err(sources.locate(error));
        }
    }
    Ok(())
}

/// [`resolve_inputs`] of paths, with default import options for traces and
/// the default record limit: `tally account FILE...` with no flags.
pub fn resolve_paths(paths: &[PathBuf]) -> Result<StreamedRun, RunError> {
    let inputs = open_inputs(paths, None)?;
    let options = RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: None,
        keep_labels: false,
        threads: 0,
        inline_small_inputs: true,
    };
    resolve_inputs(inputs, &options, &mut Unwatched)
}

#[cfg(test)]
mod tests {
    use super::{Resolver, TABLES_APART};
    use tally_resolve::ResolvedEvidence;

    /// A resolver for a large input is made on another thread and waited
    /// for when first wanted; a small one at once; either way configured
    /// as asked and empty.
    #[test]
    fn the_resolver_is_made_as_asked_on_either_thread() {
        for records in [16, TABLES_APART, 4 * TABLES_APART] {
            for keep_labels in [false, true] {
                let run = std::thread::scope(|scope| {
                    let mut resolver = Resolver::new(scope, records, keep_labels);
                    assert_eq!(resolver.made.is_none(), records >= TABLES_APART);
                    resolver.get();
                    assert!(resolver.made.is_some() && resolver.making.is_none());
                    resolver.into_made().finish().expect("nothing to reject")
                });
                assert_eq!(run.labels_kept(), keep_labels);
                assert_eq!(run.counts().activities, 0);
            }
        }
    }
}
