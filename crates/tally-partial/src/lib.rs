#![doc = include_str!("../README.md")]
//!
//! A run whose files live on many machines is accounted where the files
//! are: each machine makes a [`Partial`] of its files, partials travel and
//! [`merge`], and the merged partial resolves into the same
//! [`StreamedRun`] (so the same `tally account` and `tally breakdown`
//! output, byte for byte) as one process reading every file.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use tally_partial::{Partial, merge};
//! use tally_resolve::ResolvedEvidence;
//! # let directory = tempfile::tempdir()?;
//! # let rank = |n: u32| {
//! #     let path = directory.path().join(format!("rank{n}.jsonl"));
//! #     let line = format!(r#"{{"schema_version": 2, "event_type": "infer.iteration", "event_id": "e{n}", "context": {{"run_id": "r", "session_id": "s{n}", "producer_id": "p", "source": "doc", "clock_domain": "host", "clock_kind": "monotonic", "collection_mode": "active", "provenance": "observed"}}, "iteration_ref": {{"producer_id": "p", "id": "step-{n}"}}, "start_ns": 5, "end_ns": 9}}"#);
//! #     std::fs::write(&path, line + "\n").map(|()| path)
//! # };
//! # let (rank0, rank1) = (rank(0)?, rank(1)?);
//! // On each machine: a partial of the files that are there.
//! let here = Partial::of_paths(&[rank0])?;
//! let there = Partial::of_paths(&[rank1])?;
//! // Partials travel as bytes.
//! let there = Partial::from_bytes(there.as_bytes(), "rank1.part")?;
//! // Anywhere: merged, then resolved and accounted as one run.
//! let run = merge(vec![here, there])?.resolve(false)?;
//! assert_eq!(run.counts().iterations, 2);
//! # Ok(())
//! # }
//! ```
//!
//! # Why the answer is exact
//!
//! The resolver's answer for a valid run does not depend on the order its
//! records arrive in (`tests/tests/ingest_file_order.rs`). A partial keeps
//! every event delivery as the resolver reads it (identity key, content
//! fingerprint, the fields its tables keep) and where it came from (source
//! and line); merging concatenates, so the merged partial pushed through
//! one resolver meets every rule the single process meets: a redelivery is
//! dropped, one with other content is the same `ConflictingEventIdentity`,
//! two descriptions of one entity the same `ConflictingEntityIdentity`,
//! and every error names the original file and line.
//!
//! # Memory
//!
//! Partials are written, merged and read as streams of chunks
//! ([`PartialWriter`], [`PartialReader`]): making a partial of any number
//! of files, or merging any number of partials into a file, holds one
//! chunk and what reading one input takes; resolving holds the resolver's
//! tables, as `tally account` does. [`Partial`] holds one partial's bytes
//! in memory, for engines that pass partials as values (Python, Dask,
//! MPI).

mod stream;

use stream::ImportsAsOne;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use tally_ingest::{PreparedSink, RunError, RunOptions, Sources, Unwatched, Watcher, position};
use tally_resolve::{ResolveError, StreamedRun, StreamingResolver};
use tally_trace::{Detail, InputKind, OpenedInput};

pub use stream::{
    CHUNK_EVENTS, FORMAT_VERSION, IMPORT_FINGERPRINT, Item, MAGIC, PartialError, PartialReader,
    PartialWriter, ReadLimits, is_partial,
};

/// One partial in memory: its bytes, read through once to check them, with
/// its sources, event count and trace detail. Made from files
/// ([`Partial::of_inputs`]), read back from bytes ([`Partial::from_bytes`]),
/// merged ([`merge`]), resolved ([`Partial::resolve`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Partial {
    bytes: Vec<u8>,
    sources: Vec<String>,
    events: u64,
    traces: Option<Detail>,
}

/// Its size, not its bytes.
impl std::fmt::Debug for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partial")
            .field("bytes", &self.bytes.len())
            .field("sources", &self.sources)
            .field("events", &self.events)
            .field("traces", &self.traces)
            .finish()
    }
}

impl Default for Partial {
    fn default() -> Self {
        written(|_| Ok::<_, std::convert::Infallible>(Mixed::default()))
            .unwrap_or_else(|never| match never {})
    }
}

/// What reading a run's inputs found: the sources its records' positions
/// name, and how its traces were imported, if it has any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mixed {
    /// The sources, in order.
    pub sources: Sources,
    /// How the traces among the inputs were imported (those of partials as
    /// their partials say).
    pub traces: Option<Detail>,
}

impl Mixed {
    /// Notes traces imported as `found` by `input`; inputs of one run agree.
    fn traces(&mut self, found: Option<Detail>, input: &str) -> Result<(), PartialError> {
        match (self.traces, found) {
            (Some(expected), Some(found)) if expected != found => {
                Err(PartialError::TraceDetail { input: input.to_owned(), expected, found })
            }
            (None, found) => {
                self.traces = found;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// A partial written into memory by `fill`.
fn written<E>(fill: impl FnOnce(&mut PartialWriter<Vec<u8>>) -> Result<Mixed, E>) -> Result<Partial, E> {
    // Writing into a vector cannot fail.
    let mut writer = PartialWriter::new(Vec::new()).expect("writing into memory");
    let mixed = fill(&mut writer)?;
    let events = writer.events();
    writer.set_traces(mixed.traces);
    let bytes = writer.finish(mixed.sources.names.clone()).expect("writing into memory");
    Ok(Partial { bytes, sources: mixed.sources.names, events, traces: mixed.traces })
}

/// How `options` imports traces.
fn detail(options: &RunOptions<'_>) -> Detail {
    match options.import {
        Some(Ok(import)) => import.detail,
        // Options that could not be made stop the read before any trace.
        _ => Detail::default(),
    }
}

impl Partial {
    /// A partial of a run's inputs, read as `tally account` reads them
    /// ([`tally_ingest::read_inputs`]); activity labels are always kept.
    ///
    /// A trace import's own two records are kept with one fingerprint for
    /// every import ([`IMPORT_FINGERPRINT`], docs/partials.md). For traces split between partials, give every
    /// partial the run's ID ([`RunOptions::import`]): the default is
    /// derived from the traces being read. The import's detail (a record
    /// per launch, as `tally account` imports, or per kernel, as `tally
    /// breakdown` does) is recorded: partials are read together only when
    /// they agree.
    pub fn of_inputs(
        inputs: Vec<OpenedInput>,
        options: &RunOptions<'_>,
        watcher: &mut dyn Watcher,
    ) -> Result<Partial, RunError> {
        let labelled = RunOptions { keep_labels: true, ..*options };
        let traces = inputs.iter().any(OpenedInput::is_trace).then(|| detail(options));
        written(|writer| {
            let sources =
                tally_ingest::read_inputs(inputs, &labelled, watcher, &mut ImportsAsOne::new(writer))?;
            Ok(Mixed { sources, traces })
        })
    }

    /// [`Partial::of_inputs`] of paths with `tally account`'s defaults.
    pub fn of_paths(paths: &[PathBuf]) -> Result<Partial, RunError> {
        let inputs = tally_ingest::open_inputs(paths, None)?;
        Partial::of_inputs(inputs, &default_options(), &mut Unwatched)
    }

    /// Reads a partial back from its bytes, checking every frame; `name`
    /// names them in errors.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<Partial, PartialError> {
        Self::from_bytes_limited(bytes, name, &ReadLimits::default())
    }

    /// [`Partial::from_bytes`] within `limits`.
    pub fn from_bytes_limited(
        bytes: &[u8],
        name: &str,
        limits: &ReadLimits,
    ) -> Result<Partial, PartialError> {
        let mut reader = PartialReader::new(bytes, name, *limits)?;
        loop {
            if let Item::End { sources, events, traces } = reader.next_item()? {
                let rest = reader.into_inner();
                if !rest.is_empty() {
                    let offset = (bytes.len() - rest.len()) as u64;
                    return Err(stream::broken(name, offset, "data follows the compressed stream"));
                }
                return Ok(Partial { bytes: bytes.to_vec(), sources, events, traces });
            }
        }
    }

    /// The partial's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The partial's bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Writes the partial to `path` whole or not at all.
    pub fn write(&self, path: &Path) -> Result<(), PartialError> {
        write_atomically(path, |file| file.write_all(&self.bytes))
    }

    /// The sources the partial's events came from, in order.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// The event deliveries it holds.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// How its traces were imported (one record per launch or per kernel),
    /// if it holds any: a run's figures are those of a single process
    /// importing its traces so.
    pub fn traces(&self) -> Option<Detail> {
        self.traces
    }

    /// Resolves the partial's events as one run: the [`StreamedRun`] that
    /// one process reading every original file makes (its traces imported
    /// as [`Partial::traces`] says), or its rejection naming the original
    /// file and line. `keep_labels` as [`RunOptions::keep_labels`] (the
    /// breakdown needs them).
    pub fn resolve(&self, keep_labels: bool) -> Result<StreamedRun, PartialError> {
        resolve_bytes(&[&self.bytes], keep_labels).map(|(run, _)| run)
    }
}

fn default_options() -> RunOptions<'static> {
    RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: None,
        keep_labels: true,
        threads: 0,
        inline_small_inputs: true,
    }
}

fn resolver(keep_labels: bool, events: usize) -> StreamingResolver {
    let resolver = StreamingResolver::with_capacity(events.min(1 << 26));
    if keep_labels { resolver.keeping_labels() } else { resolver }
}

/// Merges partials into one: every source and every delivery of each, in
/// argument order. The merged partial resolves to the same run whatever
/// the order and grouping of the merges (a partial of partials is a
/// partial). Partials whose traces were imported differently are refused.
pub fn merge(parts: impl IntoIterator<Item = Partial>) -> Result<Partial, PartialError> {
    let parts: Vec<Partial> = parts.into_iter().collect();
    merge_bytes(&parts.iter().map(Partial::as_bytes).collect::<Vec<_>>())
}

/// Merges partials given as bytes (each read once, checked as it is read;
/// `partial N` names the Nth in errors): [`merge`] without first reading
/// each back into a [`Partial`].
pub fn merge_bytes(parts: &[&[u8]]) -> Result<Partial, PartialError> {
    written(|writer| {
        let mut mixed = Mixed::default();
        for (number, bytes) in parts.iter().enumerate() {
            read_partial(*bytes, &format!("partial {number}"), &ReadLimits::default(), writer, &mut mixed)?;
        }
        Ok(mixed)
    })
}

/// Resolves partials given as bytes as one run, each read once (decoded
/// ahead on a thread of its own while the resolver takes the chunks decoded
/// before; `partial N` names the Nth in errors): the run of all their
/// files, and how their traces were imported. Partials that disagree on
/// that are refused.
pub fn resolve_bytes(
    parts: &[&[u8]],
    keep_labels: bool,
) -> Result<(StreamedRun, Option<Detail>), PartialError> {
    let events = parts.iter().map(|bytes| events_in(bytes.len() as u64)).fold(0, usize::saturating_add);
    let mut resolver = resolver(keep_labels, events);
    let mut mixed = Mixed::default();
    std::thread::scope(|scope| {
        let mut ahead = parts
            .iter()
            .enumerate()
            .map(|(number, bytes)| {
                decode_ahead(scope, Ok(*bytes), format!("partial {number}"), ReadLimits::default())
            })
            .take(2)
            .collect::<std::collections::VecDeque<_>>();
        for (number, _) in parts.iter().enumerate() {
            let items = ahead.pop_front().expect("one decoder per part, started in order");
            if let Some(next) = parts.get(number + 2) {
                ahead.push_back(decode_ahead(
                    scope,
                    Ok(*next),
                    format!("partial {}", number + 2),
                    ReadLimits::default(),
                ));
            }
            consume(&mut items.into_iter(), &format!("partial {number}"), &mut resolver, &mut mixed)?;
        }
        Ok::<_, PartialError>(())
    })?;
    let run = resolver.finish().map_err(|error| PartialError::Run(mixed.sources.locate(error)))?;
    Ok((run, mixed.traces))
}

/// Pushes one partial's events into `sink`, numbered after the sources read
/// before, and adds its sources (and its trace detail) to them. A rejection
/// by the sink is reported once the partial's sources are known (they end
/// it), naming the original file and line.
fn read_partial(
    input: impl BufRead,
    name: &str,
    limits: &ReadLimits,
    sink: &mut dyn PreparedSink,
    mixed: &mut Mixed,
) -> Result<(), PartialError> {
    let mut items = Frames::new(input, name, *limits);
    consume(&mut items, name, sink, mixed)
}

/// A partial's items, read one at a time; after the end frame, the check
/// that nothing follows the compressed stream, then nothing.
struct Frames<'n, R: BufRead> {
    reader: Option<Result<PartialReader<R>, PartialError>>,
    name: &'n str,
}

impl<'n, R: BufRead> Frames<'n, R> {
    fn new(input: R, name: &'n str, limits: ReadLimits) -> Self {
        Self { reader: Some(PartialReader::new(input, name, limits)), name }
    }
}

impl<R: BufRead> Iterator for Frames<'_, R> {
    type Item = Result<Item, PartialError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut reader = match self.reader.take()? {
            Ok(reader) => reader,
            Err(error) => return Some(Err(error)),
        };
        let item = match reader.next_item() {
            Ok(item) => item,
            Err(error) => return Some(Err(error)),
        };
        if matches!(item, Item::Batch(_)) {
            self.reader = Some(Ok(reader));
            return Some(Ok(item));
        }
        let mut rest = reader.into_inner();
        let mut byte = [0u8; 1];
        match rest.read(&mut byte) {
            Ok(0) => Some(Ok(item)),
            Ok(_) => Some(Err(stream::broken(self.name, 0, "data follows the compressed stream"))),
            Err(error) => Some(Err(stream::broken(self.name, 0, error.to_string()))),
        }
    }
}

/// Pushes a partial's items, read by whoever reads them, into `sink` (see
/// [`read_partial`]).
fn consume(
    items: &mut dyn Iterator<Item = Result<Item, PartialError>>,
    name: &str,
    sink: &mut dyn PreparedSink,
    mixed: &mut Mixed,
) -> Result<(), PartialError> {
    let shift = position(mixed.sources.names.len(), 0);
    let mut rejected: Option<ResolveError> = None;
    let mut ended = false;
    for item in items {
        match item? {
            Item::Batch(mut batch) => {
                if rejected.is_none() {
                    batch.shift_records(shift);
                    rejected = sink.push(&mut batch).err();
                }
            }
            Item::End { sources, traces, .. } => {
                mixed.traces(traces, name)?;
                mixed.sources.names.extend(sources);
                ended = true;
            }
        }
    }
    if !ended {
        // The reader stops only after the end frame or an error.
        return Err(stream::broken(name, 0, "the partial ended before its end frame"));
    }
    match rejected {
        Some(error) => Err(PartialError::Run(mixed.sources.locate(error))),
        None => Ok(()),
    }
}

/// Chunks a decoding thread may run ahead of the consumer, per partial.
const AHEAD: usize = 4;

/// Decodes a partial's items on a thread of its own, at most [`AHEAD`]
/// chunks ahead of whoever takes them; an error is the last item.
fn decode_ahead<'scope, R: BufRead + Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    input: Result<R, PartialError>,
    name: String,
    limits: ReadLimits,
) -> std::sync::mpsc::Receiver<Result<Item, PartialError>> {
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Result<Item, PartialError>>(AHEAD);
    scope.spawn(move || {
        let items: Box<dyn Iterator<Item = Result<Item, PartialError>>> = match input {
            Ok(input) => Box::new(Frames::new(input, &name, limits)),
            Err(error) => Box::new(std::iter::once(Err(error))),
        };
        for item in items {
            let failed = item.is_err();
            // A consumer that stopped (an earlier error) drops its
            // receiver: nothing more to decode.
            if sender.send(item).is_err() || failed {
                return;
            }
        }
    });
    receiver
}

/// Reads consecutive partial files into `sink`, in order, decoding about
/// `threads` of them at once (none: all on the calling thread) on threads
/// of their own while the calling thread pushes the chunks of the earliest: decoding is a third of the
/// work, and the sink (the resolver) the rest. Memory stays bounded: each
/// decoder is at most [`AHEAD`] chunks ahead. Errors come in the files'
/// order, as one reader would meet them.
fn read_partials(
    paths: &[PathBuf],
    limits: &ReadLimits,
    threads: usize,
    sink: &mut dyn PreparedSink,
    mixed: &mut Mixed,
) -> Result<(), PartialError> {
    let open = |path: &PathBuf| {
        File::open(path)
            .map(|file| BufReader::with_capacity(1 << 16, file))
            .map_err(|error| PartialError::Io { path: path.clone(), error })
    };
    if threads == 0 {
        for path in paths {
            read_partial(open(path)?, &path.display().to_string(), limits, sink, mixed)?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let decode = |path: &PathBuf| decode_ahead(scope, open(path), path.display().to_string(), *limits);
        let mut pending: std::collections::VecDeque<_> = paths.iter().take(threads).map(decode).collect();
        let mut next = pending.len();
        for path in paths {
            let receiver = pending.pop_front().expect("one decoder per path, started in order");
            if let Some(path) = paths.get(next) {
                pending.push_back(decode(path));
                next += 1;
            }
            consume(&mut receiver.into_iter(), &path.display().to_string(), sink, mixed)?;
        }
        Ok(())
    })
}

/// One input of a run: a partial, or a file (or stream) that is not one,
/// opened and its kind decided.
#[derive(Debug)]
pub enum RunInput {
    /// A partial, read when its turn comes.
    Partial(PathBuf),
    /// An artifact or a trace.
    Opened(OpenedInput),
}

/// Opens a run's inputs once each, telling partials (by their first bytes,
/// for regular files) from the rest (`tally_trace::open_input`'s rule, or
/// `forced`). Standard input, pipes and devices are never partials, and
/// are read once.
pub fn open_run_inputs(paths: &[PathBuf], forced: Option<InputKind>) -> Result<Vec<RunInput>, PartialError> {
    paths
        .iter()
        .map(|path| {
            if sniff_path(path)? {
                return Ok(RunInput::Partial(path.clone()));
            }
            tally_trace::open_input(path, forced)
                .map(RunInput::Opened)
                .map_err(|error| PartialError::Run(RunError::Input(tally_ingest::InputError::Open(error))))
        })
        .collect()
}

/// The traces among a run's inputs (for their import options).
pub fn traces_of(inputs: &[RunInput]) -> Vec<&OpenedInput> {
    inputs
        .iter()
        .filter_map(|input| match input {
            RunInput::Opened(opened) if opened.is_trace() => Some(opened),
            _ => None,
        })
        .collect()
}

/// About how many events a partial of `bytes` bytes holds: a partial takes
/// about 10 bytes an event of a trace, 30 of an artifact, so this guesses
/// high (a high guess costs empty table slots, a low one rehashes).
fn events_in(bytes: u64) -> usize {
    usize::try_from(bytes / 8).unwrap_or(usize::MAX)
}

/// About how many events a run's inputs hold, from their sizes: for sizing
/// a resolver's tables once (`StreamingResolver::with_capacity`).
pub fn expected_events(inputs: &[RunInput]) -> usize {
    let mut opened: Vec<&OpenedInput> = Vec::new();
    let mut events = 0usize;
    for input in inputs {
        match input {
            RunInput::Partial(path) => {
                events = events
                    .saturating_add(events_in(std::fs::metadata(path).map_or(0, |metadata| metadata.len())));
            }
            RunInput::Opened(input) => opened.push(input),
        }
    }
    events.saturating_add(tally_ingest::expected_records(opened)).min(1 << 26)
}

/// Reads a run's inputs, partials among them, in the order given, into
/// `sink`: each partial's events, and the other inputs read together where
/// the first of them stands (as `tally account` reads them, traces imported
/// together). Returns the sources of them all and how the traces were
/// imported.
pub fn read_mixed(
    inputs: Vec<RunInput>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
    sink: &mut dyn PreparedSink,
) -> Result<Mixed, PartialError> {
    enum Part {
        Partials(Vec<PathBuf>),
        Files,
    }
    let mut parts: Vec<Part> = Vec::new();
    let mut files: Vec<OpenedInput> = Vec::new();
    for input in inputs {
        match input {
            RunInput::Partial(path) => match parts.last_mut() {
                Some(Part::Partials(paths)) => paths.push(path),
                _ => parts.push(Part::Partials(vec![path])),
            },
            RunInput::Opened(opened) => {
                if files.is_empty() {
                    parts.push(Part::Files);
                }
                files.push(opened);
            }
        }
    }
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        threads => threads,
    };
    let mut mixed = Mixed::default();
    for part in parts {
        match part {
            // Decoding threads beside the sink's: one core is the sink's.
            Part::Partials(paths) => {
                read_partials(&paths, limits, threads.saturating_sub(1), sink, &mut mixed)?
            }
            Part::Files => {
                let files = std::mem::take(&mut files);
                if let Some(trace) = files.iter().find(|input| input.is_trace()) {
                    mixed.traces(Some(detail(options)), &trace.path().display().to_string())?;
                }
                let mut sink = ImportsAsOne::new(sink);
                tally_ingest::read_more_inputs(files, options, watcher, &mut sink, &mut mixed.sources)?;
            }
        }
    }
    Ok(mixed)
}

/// Resolves a run's inputs, partials among them ([`read_mixed`]): the run
/// one process reading every original file resolves, and how its traces
/// were imported.
pub fn resolve_mixed(
    inputs: Vec<RunInput>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
) -> Result<(StreamedRun, Option<Detail>), PartialError> {
    let mut resolver = resolver(options.keep_labels, expected_events(&inputs));
    let mixed = read_mixed(inputs, options, limits, watcher, &mut resolver)?;
    let run = resolver.finish().map_err(|error| PartialError::Run(mixed.sources.locate(error)))?;
    Ok((run, mixed.traces))
}

/// What writing a partial wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The sources it lists.
    pub sources: usize,
    /// The event deliveries it holds.
    pub events: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Writes the partial of a run's inputs, partials among them
/// ([`read_mixed`]; a partial of partials is a partial), to `out`, whole
/// or not at all, holding one chunk of events at a time.
pub fn write_mixed(
    inputs: Vec<RunInput>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
    out: &Path,
) -> Result<Written, PartialError> {
    let labelled = RunOptions { keep_labels: true, ..*options };
    let mut refused = None;
    let mut summary = (0, 0);
    let written = write_atomically(out, |file| {
        let mut writer = PartialWriter::new(std::io::BufWriter::with_capacity(1 << 16, file))?;
        let mixed = match read_mixed(inputs, &labelled, limits, watcher, &mut writer) {
            Ok(mixed) => mixed,
            Err(error) => {
                refused = Some(error);
                return Err(std::io::Error::other("the inputs were refused"));
            }
        };
        summary = (mixed.sources.names.len(), writer.events());
        writer.set_traces(mixed.traces);
        writer.finish(mixed.sources.names)?.flush()
    });
    if let Some(error) = refused {
        return Err(error);
    }
    written?;
    let bytes = std::fs::metadata(out).map(|metadata| metadata.len()).unwrap_or(0);
    Ok(Written { sources: summary.0, events: summary.1, bytes })
}

/// Writes `path` through `fill` into a temporary file beside it, renamed
/// over `path` once complete; removed if anything fails.
fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> Result<(), PartialError> {
    let io = |error| PartialError::Io { path: path.to_path_buf(), error };
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map_or_else(|| "partial".into(), |name| name.to_string_lossy().into_owned());
    let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = File::create(&temporary).map_err(io)?;
    let written =
        fill(&mut file).and_then(|()| file.sync_all()).and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io(error));
    }
    Ok(())
}

/// Whether the file at `path` is a partial, from its first bytes. Only a
/// regular file is looked at: standard input (`-`), a pipe or a device is
/// never a partial, and is left unread for the reading that follows.
pub fn sniff_path(path: &Path) -> Result<bool, PartialError> {
    if path == Path::new("-") || !std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file()) {
        return Ok(false);
    }
    let io = |error| PartialError::Io { path: path.to_path_buf(), error };
    let mut head = Vec::with_capacity(MAGIC.len());
    File::open(path).map_err(io)?.take(MAGIC.len() as u64).read_to_end(&mut head).map_err(io)?;
    Ok(is_partial(&head))
}
