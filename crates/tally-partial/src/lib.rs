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
//! records arrive in (`tests/tests/ingest_file_order.rs`). A partial keeps,
//! for each distinct delivery of an event (identity key and content
//! fingerprint), what the resolver reads of it and where it came from
//! (source and line); merging keeps one of each, so the merged partial
//! pushed through one resolver meets every rule the single process meets:
//! a redelivery with other content is the same `ConflictingEventIdentity`,
//! two descriptions of one entity the same `ConflictingEntityIdentity`,
//! and every error names the original file and line.

mod format;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use tally_ingest::{PreparedSink, RunError, RunOptions, Sources, Unwatched, Watcher, origin, position};
use tally_resolve::{EventIdentity, PreparedBatch, ResolveError, StreamedRun, StreamingResolver};
use tally_trace::OpenedInput;
use tally_utils::fast_hash::FastBuildHasher;

pub use format::{FORMAT_VERSION, MAGIC, PartialError, ReadLimits, is_partial, sniff_path};

/// The evidence of some of a run's files, kept as the resolver reads it:
/// each distinct delivery of an event once, with the source and line it
/// came from. Made from files ([`Partial::of_inputs`]), read back from
/// bytes ([`Partial::from_bytes`]), merged ([`merge`]), resolved
/// ([`Partial::resolve`]).
#[derive(Debug, Clone)]
pub struct Partial {
    /// The sources the events came from (artifacts, or traces imported
    /// together), in the order they were read; events name them by index.
    sources: Vec<String>,
    /// The distinct deliveries, their positions indexing `sources`; each
    /// string stored once.
    batch: PreparedBatch,
}

impl Default for Partial {
    fn default() -> Self {
        Self { sources: Vec::new(), batch: PreparedBatch::default().interning() }
    }
}

/// Distinct deliveries seen: identity key and content fingerprint.
type Seen = HashSet<(u128, u64), FastBuildHasher>;

/// Collects the prepared records of a read into a partial.
struct Collecting<'a> {
    batch: &'a mut PreparedBatch,
    seen: Seen,
}

impl PreparedSink for Collecting<'_> {
    fn push(&mut self, batch: &mut PreparedBatch) -> Result<(), ResolveError> {
        let seen = &mut self.seen;
        self.batch.append(batch, |identity| keep(seen, identity), |record| record);
        Ok(())
    }
}

/// Whether a delivery is new: an exact redelivery adds nothing, while one
/// with other content under a known key is kept so that the merged run
/// meets the conflict where the single process would.
fn keep(seen: &mut Seen, identity: EventIdentity) -> bool {
    seen.insert((identity.key, identity.fingerprint))
}

impl Partial {
    /// A partial of a run's inputs, read as `tally account` reads them
    /// ([`tally_ingest::read_inputs`]); activity labels are always kept, so
    /// one partial serves accounting and the overlap breakdown.
    ///
    /// A trace import's own two records (its artifact identity, made "now",
    /// and its capabilities with the summary of the traces imported
    /// together) are not kept: they describe the import, which a merge of
    /// partials does not repeat, and take no part in accounting. For traces
    /// split between partials, give every partial the run's ID
    /// ([`RunOptions::import`]): the default is derived from the traces
    /// being read.
    pub fn of_inputs(
        inputs: Vec<OpenedInput>,
        options: &RunOptions<'_>,
        watcher: &mut dyn Watcher,
    ) -> Result<Partial, RunError> {
        let mut partial = Partial::default();
        let labelled = RunOptions { keep_labels: true, ..*options };
        let mut collecting = Collecting { batch: &mut partial.batch, seen: Seen::default() };
        let sources = tally_ingest::read_inputs(inputs, &labelled, watcher, &mut collecting)?;
        let Sources { names, imported } = sources;
        partial.sources = names;
        if let Some(imported) = imported {
            partial.drop_import_records(imported);
        }
        Ok(partial)
    }

    /// [`Partial::of_inputs`] of paths with `tally account`'s defaults.
    pub fn of_paths(paths: &[PathBuf]) -> Result<Partial, RunError> {
        let inputs = tally_ingest::open_inputs(paths, None)?;
        let options = RunOptions {
            max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
            import: None,
            keep_labels: true,
            threads: 0,
            inline_small_inputs: true,
        };
        Partial::of_inputs(inputs, &options, &mut Unwatched)
    }

    /// Drops the untabled records of the trace import's source (its own
    /// identity and capabilities records).
    fn drop_import_records(&mut self, imported: usize) {
        let mut kept = PreparedBatch::default().interning();
        kept.append(
            &self.batch,
            |identity| identity.tabled || origin(identity.record).0 != imported,
            |record| record,
        );
        self.batch = kept;
    }

    /// The sources the partial's events came from, in order.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// The distinct event deliveries it holds.
    pub fn events(&self) -> usize {
        self.batch.len()
    }

    /// Resolves the partial's events as one run: the [`StreamedRun`] that
    /// one process reading every original file makes, or its rejection
    /// naming the original file and line. `keep_labels` as
    /// [`RunOptions::keep_labels`] (the breakdown needs them).
    pub fn resolve(&self, keep_labels: bool) -> Result<StreamedRun, RunError> {
        let resolver = StreamingResolver::with_capacity(self.batch.len());
        let mut resolver = if keep_labels { resolver.keeping_labels() } else { resolver };
        let sources = Sources { names: self.sources.clone(), imported: None };
        resolver.push_prepared(&self.batch).map_err(|error| sources.locate(error))?;
        resolver.finish().map_err(|error| sources.locate(error))
    }
}

/// Merges partials into one: every source of each, and each distinct
/// delivery once (the first in argument order, where the same delivery is
/// in several). The merged partial resolves to the same run whatever the
/// order and grouping of the merges (a partial of partials is a partial).
pub fn merge(parts: impl IntoIterator<Item = Partial>) -> Partial {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Partial::default();
    };
    // The first part is taken as it is (its deliveries are distinct).
    let mut seen: Seen =
        first.batch.identities().map(|identity| (identity.key, identity.fingerprint)).collect();
    let mut merged = Partial { sources: first.sources, batch: first.batch.interning() };
    for part in parts {
        let shift = merged.sources.len();
        merged.sources.extend(part.sources);
        merged.batch.append(
            &part.batch,
            |identity| keep(&mut seen, identity),
            |record| {
                let (file, line) = origin(record);
                position(file + shift, line)
            },
        );
    }
    merged
}

/// Reads a run's inputs, partials among them, into one partial, in the
/// order given: each partial read back (bounded by `limits`), the other
/// inputs read together where the first of them stands (as `tally account`
/// reads them, traces imported together).
pub fn gather(
    paths: &[PathBuf],
    forced: Option<tally_trace::InputKind>,
    options: &RunOptions<'_>,
    limits: &ReadLimits,
    watcher: &mut dyn Watcher,
) -> Result<Partial, PartialError> {
    enum Part {
        Read(Partial),
        Files,
    }
    let mut parts: Vec<Part> = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for path in paths {
        if sniff_path(path)? {
            parts.push(Part::Read(Partial::read(path, limits)?));
        } else {
            if files.is_empty() {
                parts.push(Part::Files);
            }
            files.push(path.clone());
        }
    }
    let mut made = Vec::with_capacity(parts.len());
    for part in parts {
        made.push(match part {
            Part::Read(partial) => partial,
            Part::Files => {
                let inputs = tally_ingest::open_inputs(&std::mem::take(&mut files), forced)
                    .map_err(|error| PartialError::Run(error.into()))?;
                Partial::of_inputs(inputs, options, watcher).map_err(PartialError::Run)?
            }
        });
    }
    Ok(merge(made))
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

impl Partial {
    /// Reads a partial from a file, bounded by `limits`.
    pub fn read(path: &Path, limits: &ReadLimits) -> Result<Partial, PartialError> {
        format::read_file(path, limits)
    }
}
