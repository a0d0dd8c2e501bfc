#![doc = include_str!("../README.md")]
//!
//! Property-based differential testing of a GPU-time accounting
//! implementation against tally, the reference: generate evidence, run the
//! other implementation on it, compare its answer with tally's field by
//! field, and shrink any disagreement to a minimal artifact.
//!
//! The parts, each usable alone:
//!
//! - [`runs`] and [`generate`]: proptest strategies of whole valid runs
//!   (references colliding on purpose, repeated and shuffled deliveries,
//!   re-reported entities, `metadata.intervals`, overlapping and touching
//!   activities, several devices and clock kinds, unmeasured and
//!   unattributed activities, unresolved references, legacy alignments,
//!   multi-file rank sets) and of invalid ones (conflicting re-deliveries,
//!   field rules, truncated lines), as [`Case`]s of three [`Kind`]s;
//! - [`Case::write`]: a case's input files in the form it chose (embedded
//!   v2/v3 or compact v4 through tally-artifact's encoder, sometimes gzip,
//!   sometimes several rank files), beside its share model or queries;
//! - [`tally_answer`]: tally's answer (the accounting object of the corpus
//!   schema, the share verdict, the alignment answers);
//! - [`judge`] and [`differences`]: the comparison;
//! - [`check()`]: the runner, the static corpus first, then generated cases,
//!   shrinking the first disagreement of each kind with proptest's
//!   `simplify`/`complicate`;
//! - [`Implementation`]: the implementation under test, as a Rust closure
//!   ([`Inputs`] → [`Reply`]), an external program run per case
//!   ([`CommandImplementation`]) or one answering a JSON line per case
//!   ([`BatchImplementation`]); the [`implementation`] module states the
//!   contract.
//!
//! A Rust implementation runs the same checks in its own `cargo test`:
//!
//! ```
//! use tally_conformance::{Kind, Options, Reply, check};
//! // Mine counts busy time as summed time: a wrong rule.
//! let mut mine = |inputs: &tally_conformance::Inputs| match tally_conformance::tally_answer(inputs) {
//!     Reply::Answer(mut object) if inputs.kind == Kind::Account => {
//!         for row in object["device_totals"].as_array_mut().unwrap() {
//!             row["busy_ns"] = row["summed_activity_ns"].clone();
//!         }
//!         Reply::Answer(object)
//!     }
//!     other => other,
//! };
//! let options = Options { kinds: vec![Kind::Account], cases: 300, seed: 7,
//!                         stop_at_first_disagreement: true, ..Options::default() };
//! let report = check(&mut mine, &options).unwrap();
//! let finding = report.kinds[0].finding.as_ref().expect("caught");
//! assert!(finding.records <= 10, "shrunk to {} records", finding.records);
//! assert!(finding.differences.iter().any(|d| d.path.ends_with("busy_ns")));
//! ```

pub mod answer;
pub mod case;
pub mod check;
pub mod compare;
pub mod corpus;
pub mod generate;
pub mod implementation;
pub mod runs;

use std::path::{Path, PathBuf};

pub use answer::{Reply, tally_answer};
pub use case::{Case, CaseFile, Inputs, Kind};
pub use check::{Counts, Finding, KindReport, Options, Report, check};
pub use compare::{Difference, Verdict, differences, judge};
pub use implementation::{
    BatchImplementation, CommandImplementation, DEFAULT_TIMEOUT, Implementation, Tally, split_command,
};

/// Why the runner itself could not go on (the implementation's failures
/// are counted in the report instead).
#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A case's file could not be encoded.
    #[error("cannot encode a case: {0}")]
    Encode(String),
    /// The generator gave up (proptest's reason).
    #[error("cannot generate a case: {0}")]
    Generate(String),
    /// The corpus's manifest is not what its README says.
    #[error("the corpus: {0}")]
    Corpus(String),
    /// The implementation's command line does not split or cannot run.
    #[error("the implementation's command: {0}")]
    Command(String),
}

impl ConformError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ConformError::Io { path: path.to_path_buf(), source }
    }
}
