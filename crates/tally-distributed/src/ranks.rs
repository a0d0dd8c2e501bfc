//! What a rank reports to the driver, how the driver combines the reports,
//! how a rank bounds its own work in time, and the GPU-time accounting of
//! every rank's evidence together. Transport-free: the `mpi` module moves
//! the bytes; these types are also what a test reads back.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tally_core::InferenceRecord;
use tally_gpu_time::AccountingReport;
use tally_profile::profile::ResourceProfile;
use tally_resolve::{ResolveError, resolve_inference_events};
use tally_utils::document::{DEFAULT_MAX_DOCUMENT_BYTES, DocumentError, read_document};

/// Resolves the records of every rank together and reports their GPU time
/// per device clock (stormlog's rules; the report `tally account --format
/// json` prints). Records are taken in order: rank 0's first, then rank
/// 1's, ... Ranks' clocks are separate domains, so each rank keeps its own
/// rows and nothing is added across ranks.
pub fn account_ranks(records: &[InferenceRecord]) -> Result<AccountingReport, ResolveError> {
    let graph = resolve_inference_events(records)?;
    Ok(AccountingReport::from_resolved(&graph, false))
}

/// One rank's report, as sent to the driver: its shard and either its
/// profile or why it has none.
///
/// ```
/// use tally_distributed::ranks::RankReport;
/// let failed = RankReport::failed(2, "shard-2", "timed out after 60 s");
/// let bytes = failed.to_bytes()?;
/// assert_eq!(RankReport::from_bytes(&bytes)?, failed);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankReport {
    /// The rank.
    pub rank: u64,
    /// The shard it worked on.
    pub shard_key: String,
    /// The profile, when the rank's work finished.
    #[serde(default, with = "optional_profile")]
    pub profile: Option<ResourceProfile>,
    /// Why there is no profile.
    #[serde(default)]
    pub failure: Option<String>,
}

/// The profile as vertebrae's JSON inside the report, checked on load.
mod optional_profile {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;
    use tally_profile::profile::ResourceProfile;

    pub fn serialize<S: Serializer>(
        profile: &Option<ResourceProfile>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match profile {
            Some(profile) => {
                profile.to_json_value().map_err(serde::ser::Error::custom)?.serialize(serializer)
            }
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<ResourceProfile>, D::Error> {
        match Option::<Value>::deserialize(deserializer)? {
            Some(value) => {
                ResourceProfile::from_json_value(value).map(Some).map_err(serde::de::Error::custom)
            }
            None => Ok(None),
        }
    }
}

impl RankReport {
    /// A rank that finished its work.
    pub fn reported(rank: u64, shard_key: impl Into<String>, profile: ResourceProfile) -> Self {
        Self { rank, shard_key: shard_key.into(), profile: Some(profile), failure: None }
    }

    /// A rank that failed before it could report a profile.
    pub fn failed(rank: u64, shard_key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { rank, shard_key: shard_key.into(), profile: None, failure: Some(reason.into()) }
    }

    /// The report as JSON bytes (what a rank sends).
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

    /// Reads a report a rank sent.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// What the driver learned of one rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankStatus {
    /// The rank.
    pub rank: u64,
    /// Its shard.
    pub shard_key: String,
    /// `reported` or `failed`.
    pub status: &'static str,
    /// Why it failed.
    pub reason: Option<String>,
}

/// The reports of every rank, in rank order, combined for aggregation.
#[derive(Debug, Clone, PartialEq)]
pub struct CombinedReports {
    /// `(shard_key, profile)` of the ranks that reported, in rank order.
    pub profiles: Vec<(String, ResourceProfile)>,
    /// Every rank's shard key, reported or not: a failed rank's shard
    /// counts as not profiled.
    pub all_shard_keys: Vec<String>,
    /// One line per rank.
    pub statuses: Vec<RankStatus>,
}

/// Combines what the driver received from each rank (`payloads[r]` from
/// rank `r`). A payload that is not a readable report, or names another
/// rank, makes that rank `failed` with the reason; `shard_key_of` gives the
/// shard of a rank whose report cannot be read.
pub fn combine_reports(payloads: &[Vec<u8>], shard_key_of: impl Fn(u64) -> String) -> CombinedReports {
    let mut combined =
        CombinedReports { profiles: Vec::new(), all_shard_keys: Vec::new(), statuses: Vec::new() };
    for (rank, payload) in payloads.iter().enumerate() {
        let rank = rank as u64;
        let report = match RankReport::from_bytes(payload) {
            Ok(report) if report.rank == rank => report,
            Ok(report) => RankReport::failed(
                rank,
                shard_key_of(rank),
                format!("rank {rank} sent a report for rank {}", report.rank),
            ),
            Err(error) => RankReport::failed(
                rank,
                shard_key_of(rank),
                format!("rank {rank} sent an unreadable report: {error}"),
            ),
        };
        combined.all_shard_keys.push(report.shard_key.clone());
        let status = match (report.profile, report.failure) {
            (Some(profile), None) => {
                combined.profiles.push((report.shard_key.clone(), profile));
                RankStatus { rank, shard_key: report.shard_key, status: "reported", reason: None }
            }
            (_, failure) => RankStatus {
                rank,
                shard_key: report.shard_key,
                status: "failed",
                reason: Some(
                    failure.unwrap_or_else(|| "the report has neither a profile nor a failure".into()),
                ),
            },
        };
        combined.statuses.push(status);
    }
    combined
}

/// Why a rank's bounded work produced nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RankFailure {
    /// The work returned an error.
    #[error("{0}")]
    Failed(String),
    /// The work panicked.
    #[error("the rank's work panicked: {0}")]
    Panicked(String),
    /// The work did not finish in time; it is left running, detached, and
    /// dies with the process.
    #[error("the rank's work did not finish within {0:?}; its shard is reported unprofiled")]
    TimedOut(Duration),
}

/// Runs `work` on its own thread and waits at most `timeout` for it, so a
/// rank stuck in its workload still reaches the collective calls in
/// bounded time and reports itself failed instead of hanging the job.
///
/// ```
/// use std::time::Duration;
/// use tally_distributed::ranks::{run_with_deadline, RankFailure};
/// assert_eq!(run_with_deadline(Duration::from_secs(5), || Ok::<_, String>(7)), Ok(7));
/// let stuck = run_with_deadline(Duration::from_millis(20), || {
///     std::thread::sleep(Duration::from_secs(3600));
///     Ok::<_, String>(0)
/// });
/// assert_eq!(stuck, Err(RankFailure::TimedOut(Duration::from_millis(20))));
/// ```
pub fn run_with_deadline<T, E>(
    timeout: Duration,
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, RankFailure>
where
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let (sender, receiver) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new().name("rank-work".into()).spawn(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        // The receiver may be gone after a timeout; nothing to tell then.
        let _ = sender.send(outcome);
    });
    if let Err(error) = spawned {
        return Err(RankFailure::Failed(format!("cannot start the rank's work thread: {error}")));
    }
    match receiver.recv_timeout(timeout) {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(error))) => Err(RankFailure::Failed(error.to_string())),
        Ok(Err(payload)) => Err(RankFailure::Panicked(panic_message(payload.as_ref()))),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(RankFailure::TimedOut(timeout)),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(RankFailure::Panicked("the work thread ended without a result".into()))
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    tally_profile::panic_text(payload).unwrap_or("a non-string panic payload").to_owned()
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, synced, then renamed over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let directory = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary: PathBuf = directory.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Pretty JSON of `value` plus a newline, written atomically.
pub fn write_json_atomically<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    text.push(b'\n');
    write_atomically(path, &text)
}

/// Loads a value written by [`write_json_atomically`] (at most
/// [`DEFAULT_MAX_DOCUMENT_BYTES`]).
pub fn read_json(path: &Path) -> std::io::Result<Value> {
    let text =
        read_document(std::fs::File::open(path)?, DEFAULT_MAX_DOCUMENT_BYTES).map_err(
            |error| match error {
                DocumentError::Io(error) => error,
                too_large => std::io::Error::other(too_large),
            },
        )?;
    serde_json::from_slice(&text).map_err(std::io::Error::other)
}
