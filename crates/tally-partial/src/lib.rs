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
//! let there = Partial::from_bytes(&there.to_bytes()?, "rank1.part")?;
//! // Anywhere: merged, then resolved and accounted as one run.
//! let run = merge(vec![here, there]).resolve(false)?;
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

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use tally_ingest::{PreparedSink, RunError, RunOptions, Sources, Unwatched, Watcher, position};
use tally_resolve::{ResolveError, StreamedRun, StreamingResolver};
use tally_trace::InputKind;

pub use stream::{
    CHUNK_EVENTS, FORMAT_VERSION, Item, MAGIC, PartialError, PartialReader, PartialWriter, ReadLimits,
    is_partial,
};

/// One partial in memory: its bytes, read through once to check them, with
/// its sources and event count. Made from files ([`Partial::of_inputs`]),
/// read back from bytes ([`Partial::from_bytes`]), merged ([`merge`]),
/// resolved ([`Partial::resolve`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Partial {
    bytes: Vec<u8>,
    sources: Vec<String>,
    events: u64,
}

/// Its size, not its bytes.
impl std::fmt::Debug for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partial")
            .field("bytes", &self.bytes.len())
            .field("sources", &self.sources)
            .field("events", &self.events)
            .finish()
    }
}

impl Default for Partial {
    fn default() -> Self {
        written(|_| Ok::<_, std::convert::Infallible>(Vec::new())).unwrap_or_else(|never| match never {})
    }
}

/// A partial written into memory by `fill`, which returns the sources.
fn written<E>(
    fill: impl FnOnce(&mut PartialWriter<Vec<u8>>) -> Result<Vec<String>, E>,
) -> Result<Partial, E> {
    // Writing into a vector cannot fail.
    let mut writer = PartialWriter::new(Vec::new()).expect("writing into memory");
    let sources = fill(&mut writer)?;
    let events = writer.events();
    let bytes = writer.finish(sources.clone()).expect("writing into memory");
    Ok(Partial { bytes, sources, events })
}

impl Partial {
    /// A partial of a run's inputs, read as `tally account` reads them
    /// ([`tally_ingest::read_inputs`]); activity labels are always kept, so
    /// one partial serves accounting and the overlap breakdown.
    ///
    /// A trace import's own two records are not kept (see
    /// docs/partials.md). For traces split between partials, give every
    /// partial the run's ID ([`RunOptions::import`]): the default is
    /// derived from the traces being read.
    pub fn of_inputs(
        inputs: Vec<tally_trace::OpenedInput>,
        options: &RunOptions<'_>,
        watcher: &mut dyn Watcher,
    ) -> Result<Partial, RunError> {
        let labelled = RunOptions { keep_labels: true, ..*options };
        written(|writer| {
            tally_ingest::read_inputs(inputs, &labelled, watcher, writer).map(|sources| sources.names)
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
            if let Item::End { sources, events } = reader.next_item()? {
                let rest = reader.into_inner();
                if !rest.is_empty() {
                    let offset = (bytes.len() - rest.len()) as u64;
                    return Err(stream::broken(name, offset, "data follows the compressed stream"));
                }
                return Ok(Partial { bytes: bytes.to_vec(), sources, events });
            }
        }
    }

    /// Reads a partial from a file into memory, bounded by `limits`.
    pub fn read(path: &Path, limits: &ReadLimits) -> Result<Partial, PartialError> {
        let bytes =
            std::fs::read(path).map_err(|error| PartialError::Io { path: path.to_path_buf(), error })?;
        Self::from_bytes_limited(&bytes, &path.display().to_string(), limits)
    }

    /// The partial's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The partial's bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The partial's bytes, copied (kept for callers that hold the
    /// partial).
    pub fn to_bytes(&self) -> Result<Vec<u8>, PartialError> {
        Ok(self.bytes.clone())
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

    /// Resolves the partial's events as one run: the [`StreamedRun`] that
    /// one process reading every original file makes, or its rejection
    /// naming the original file and line. `keep_labels` as
    /// [`RunOptions::keep_labels`] (the breakdown needs them).
    pub fn resolve(&self, keep_labels: bool) -> Result<StreamedRun, PartialError> {
        let mut resolver = resolver(keep_labels, self.events as usize);
        let mut sources = Sources::default();
        read_partial(&self.bytes[..], "partial", &ReadLimits::default(), &mut resolver, &mut sources)?;
        resolver.finish().map_err(|error| PartialError::Run(sources.locate(error)))
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

/// Merges partials into one: every source of each, and every delivery of
/// each, in argument order. The merged partial resolves to the same run
/// whatever the order and grouping of the merges (a partial of partials is
/// a partial).
pub fn merge(parts: impl IntoIterator<Item = Partial>) -> Partial {
    let merged = written(|writer| {
        let mut sources = Sources::default();
        for part in parts {
            // Each was checked when it was made or read.
            read_partial(&part.bytes[..], "partial", &ReadLimits::default(), writer, &mut sources)?;
        }
        Ok::<_, PartialError>(sources.names)
    });
    merged.unwrap_or_else(|error| unreachable!("a checked partial reads again: {error}"))
}

/// Pushes one partial's events into `sink`, numbered after `sources`, and
/// adds its sources to them. A rejection by the sink is reported once the
/// partial's sources are known (they end it), naming the original file
/// and line.
fn read_partial(
    input: impl std::io::BufRead,
    name: &str,
    limits: &ReadLimits,
    sink: &mut dyn PreparedSink,
    sources: &mut Sources,
) -> Result<(), PartialError> {
    let shift = position(sources.names.len(), 0);
    let mut reader = PartialReader::new(input, name, *limits)?;
    let mut rejected: Option<ResolveError> = None;
    loop {
        match reader.next_item()? {
            Item::Batch(mut batch) => {
                if rejected.is_none() {
                    batch.shift_records(shift);
                    rejected = sink.push(&mut batch).err();
                }
            }
            Item::End { sources: names, .. } => {
                sources.names.extend(names);
                break;
            }
        }
    }
    let mut rest = reader.into_inner();
    let mut byte = [0u8; 1];
    if rest.read(&mut byte).map_err(|error| stream::broken(name, 0, error.to_string()))? != 0 {
        return Err(stream::broken(name, 0, "data follows the compressed stream"));
    }
    match rejected {
        Some(error) => Err(PartialError::Run(sources.locate(error))),
        None => Ok(()),
    }
}

/// Reads a run's inputs, partials among them, in the order given, into
/// `sink`: each partial's events, and the other inputs read together where
/// the first of them stands (as `tally account` reads them, traces imported
/// together). Returns the sources of them all.
pub fn read_mixed(
    paths: &[PathBuf],
    forced: Option<InputKind>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
    sink: &mut dyn PreparedSink,
) -> Result<Sources, PartialError> {
    enum Part<'p> {
        Partial(&'p Path),
        Files,
    }
    let mut parts: Vec<Part<'_>> = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for path in paths {
        if sniff_path(path)? {
            parts.push(Part::Partial(path));
        } else {
            if files.is_empty() {
                parts.push(Part::Files);
            }
            files.push(path.clone());
        }
    }
    let mut sources = Sources::default();
    for part in parts {
        match part {
            Part::Partial(path) => {
                let file =
                    File::open(path).map_err(|error| PartialError::Io { path: path.to_path_buf(), error })?;
                let reader = BufReader::with_capacity(1 << 16, file);
                read_partial(reader, &path.display().to_string(), limits, sink, &mut sources)?;
            }
            Part::Files => {
                let inputs =
                    tally_ingest::open_inputs(&std::mem::take(&mut files), forced).map_err(RunError::from)?;
                tally_ingest::read_more_inputs(inputs, options, watcher, sink, &mut sources)?;
            }
        }
    }
    Ok(sources)
}

/// Resolves a run's inputs, partials among them ([`read_mixed`]): the run
/// one process reading every original file resolves.
pub fn resolve_mixed(
    paths: &[PathBuf],
    forced: Option<InputKind>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
) -> Result<StreamedRun, PartialError> {
    let mut resolver = resolver(options.keep_labels, 0);
    let sources = read_mixed(paths, forced, options, limits, watcher, &mut resolver)?;
    resolver.finish().map_err(|error| PartialError::Run(sources.locate(error)))
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
    paths: &[PathBuf],
    forced: Option<InputKind>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
    out: &Path,
) -> Result<Written, PartialError> {
    let labelled = RunOptions { keep_labels: true, ..*options };
    let mut summary = None;
    write_atomically(out, |file| {
        let mut writer = PartialWriter::new(std::io::BufWriter::with_capacity(1 << 16, file))?;
        let sources = read_mixed(paths, forced, &labelled, limits, watcher, &mut writer)
            .map_err(std::io::Error::other)?;
        let events = writer.events();
        let count = sources.names.len();
        writer.finish(sources.names)?.flush()?;
        summary = Some((count, events));
        Ok(())
    })
    .map_err(|error| match error {
        // A read's own error, passed through the writer's io::Error.
        PartialError::Io { error, .. } if error.get_ref().is_some_and(|inner| inner.is::<PartialError>()) => {
            // Checked just above.
            *error.into_inner().expect("an inner error").downcast::<PartialError>().expect("a PartialError")
        }
        other => other,
    })?;
    let (sources, events) = summary.unwrap_or_default();
    let bytes = std::fs::metadata(out).map(|metadata| metadata.len()).unwrap_or(0);
    Ok(Written { sources, events, bytes })
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

/// Reads a run's inputs, partials among them, into one partial in memory
/// ([`read_mixed`]).
pub fn gather(
    paths: &[PathBuf],
    forced: Option<InputKind>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
) -> Result<Partial, PartialError> {
    let labelled = RunOptions { keep_labels: true, ..*options };
    written(|writer| {
        read_mixed(paths, forced, &labelled, limits, watcher, writer).map(|sources| sources.names)
    })
}

/// Whether the file at `path` is a partial, from its first bytes (`-`,
/// standard input, never is).
pub fn sniff_path(path: &Path) -> Result<bool, PartialError> {
    if path == Path::new("-") {
        return Ok(false);
    }
    let io = |error| PartialError::Io { path: path.to_path_buf(), error };
    let mut head = Vec::with_capacity(MAGIC.len());
    File::open(path).map_err(io)?.take(MAGIC.len() as u64).read_to_end(&mut head).map_err(io)?;
    Ok(is_partial(&head))
}

/// Whether any of the paths is a partial (read from its first bytes).
pub fn any_partial(paths: &[PathBuf]) -> Result<bool, PartialError> {
    for path in paths {
        if sniff_path(path)? {
            return Ok(true);
        }
    }
    Ok(false)
}
