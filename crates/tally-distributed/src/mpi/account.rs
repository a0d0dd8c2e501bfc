//! A run's GPU-time accounting over MPI, each rank reading its share of
//! the files (the `mpi-account` program; feature `mpi`).
//!
//! Rank `r` of `n` reads `files[r]`, `files[r + n]`, ... into a
//! [`Partial`] ([`rank_partial`]); the partials travel to rank 0 along a
//! binomial tree of point-to-point messages ([`reduce_to_root`]), each
//! parent putting its children's after its own, in rank order (gathered,
//! not merged: a merge would decode and encode every event again and
//! shrink nothing); rank 0 resolves them together, each read once, and
//! writes the JSON `tally account --format json` (or `tally breakdown
//! --format json`) writes for the same files, byte for byte
//! ([`report_json`]): partials resolve to the run one process makes of
//! every file.
//!
//! # Failures
//!
//! A rank that cannot read its share (a bad file: the error names the file
//! and line) prints why and sends an error marker up the tree in place of
//! its partial. A parent keeps receiving from all its children, so no
//! sender is left blocked, and passes the failed ranks on; rank 0 then
//! broadcasts the outcome, so that every rank exits non-zero, none waiting
//! for a message that will not come. A rank whose process dies is handled
//! by Open MPI itself, which ends the job.

use std::io::Write;
use std::path::PathBuf;

use mpi::traits::{Communicator, Destination, Root, Source};
use tally_gpu_time::breakdown::{BreakdownOptions, breakdown};
use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{RunOptions, Unwatched, default_import_options};
use tally_partial::{Partial, PartialError};
use tally_trace::{Detail, OpenedInput};

/// The rank the partials are reduced to, which prints the report.
pub const ROOT: mpi::Rank = 0;

/// What to account and how.
#[derive(Debug, Clone, Default)]
pub struct AccountRequest {
    /// Artifacts or profiler traces of one run, as `tally account` takes
    /// them; every rank is given the same list.
    pub files: Vec<PathBuf>,
    /// `tally breakdown`'s report instead of `tally account`'s.
    pub breakdown: bool,
    /// The run ID for traces; by default the one a single process reading
    /// every file derives.
    pub run_id: Option<String>,
    /// Threads each rank reads its files with (0: one per core). MPI runs
    /// a rank per core, so the program's default is 1: more would contend
    /// with the other ranks (on 2 cores, `-np 2` with every core each took
    /// half again as long).
    pub threads: usize,
}

/// The files rank `rank` of `ranks` reads: every `ranks`-th, from its own
/// index.
pub fn share_of(files: &[PathBuf], rank: usize, ranks: usize) -> Vec<PathBuf> {
    files.iter().skip(rank).step_by(ranks.max(1)).cloned().collect()
}

/// The partial of rank `rank`'s share of the files, read as `tally account`
/// (or, with [`AccountRequest::breakdown`], `tally breakdown`) reads them;
/// the error is ready to print (`FILE: line N: reason`).
///
/// Traces are imported with the run ID of the whole run (the one given, or
/// the default one process derives from all the traces), so that traces
/// split between ranks account as one import. The default is derived from
/// every input's path and kind, so a rank with traces opens every file,
/// not only its own: where ranks do not see each other's files, give
/// [`AccountRequest::run_id`].
pub fn rank_partial(request: &AccountRequest, rank: usize, ranks: usize) -> Result<Partial, String> {
    let own = share_of(&request.files, rank, ranks);
    if own.is_empty() {
        return Ok(Partial::default());
    }
    let inputs = tally_ingest::open_inputs(&own, None).map_err(|error| error.to_string())?;
    let traces: Vec<&OpenedInput> = inputs.iter().filter(|input| input.is_trace()).collect();
    // As the umbrella's commands: import options only for a run with
    // traces (the trace flags concern nothing else).
    let import = if traces.is_empty() {
        None
    } else {
        let run_id = match &request.run_id {
            Some(run_id) => run_id.clone(),
            None => whole_run_id(&request.files)?,
        };
        Some(default_import_options(&traces, Some(&run_id)).map(|mut options| {
            // `tally breakdown` imports one record per kernel, copy or
            // memset, so that each kernel keeps its name.
            if request.breakdown {
                options.detail = Detail::Kernel;
            }
            // Traces read at once, and the threads one trace is read on.
            options.threads = request.threads;
            options
        }))
    };
    let options = RunOptions {
        max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
        import: import.as_ref(),
        // A partial keeps labels whatever this says (one partial serves
        // both reports).
        keep_labels: true,
        threads: request.threads,
        inline_small_inputs: true,
    };
    Partial::of_inputs(inputs, &options, &mut Unwatched).map_err(|error| error.to_string())
}

/// The run ID one process reading every file gives its traces.
fn whole_run_id(files: &[PathBuf]) -> Result<String, String> {
    let every = tally_ingest::open_inputs(files, None).map_err(|error| {
        format!(
            "{error} (every rank with traces opens every file to derive the run's default ID; \
             give --run-id where ranks do not see each other's files)"
        )
    })?;
    let traces: Vec<&OpenedInput> = every.iter().filter(|input| input.is_trace()).collect();
    Ok(tally_trace::default_run_id(&traces))
}

/// The report of the ranks' partials (their bytes, in rank order), as
/// `tally account --format json` (or, with `breakdown`, `tally breakdown
/// --format json`) writes it for the same files: serde_json's pretty
/// layout and a final newline. Each partial is read once, as it is
/// resolved. The error is a rejection of the run, naming the original file
/// and line, or a damaged partial (`partial N`, the Nth in rank order).
pub fn report_json(parts: &[&[u8]], breakdown_report: bool) -> Result<Vec<u8>, ReportError> {
    // Every rank imports its traces with the same options, so the partials
    // agree on how (the one thing reading them together checks).
    let (run, _) = tally_partial::resolve_bytes(parts, breakdown_report)?;
    let mut out = Vec::new();
    let written = if breakdown_report {
        serde_json::to_writer_pretty(&mut out, &breakdown(&run, &BreakdownOptions::default()))
    } else {
        let accounting = account_gpu_time(&run);
        // The JSON layout of `tally account` shows the device detail only
        // with `--detail`.
        serde_json::to_writer_pretty(&mut out, &AccountingReport::of(&run, &accounting, false))
    };
    written?;
    out.push(b'\n');
    Ok(out)
}

/// Why the merged run has no report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The merged run was rejected (the error names the original file and
    /// line).
    #[error(transparent)]
    Rejected(#[from] PartialError),
    /// The report could not be serialized (not met: tally-gpu-time's
    /// reports serialize to memory).
    #[error("the report could not be serialized: {0}")]
    Json(#[from] serde_json::Error),
}

/// What reached a rank from its subtree of the reduction tree.
#[derive(Debug)]
pub enum Reduced {
    /// The partial of every rank of the subtree, in rank order, as bytes:
    /// gathered, not merged (a merged partial is no smaller than its parts,
    /// and merging would decode and encode every event at every level).
    Partials(Vec<Vec<u8>>),
    /// The ranks of the subtree that could not make their partial (each
    /// printed why), in rank order.
    Failed(Vec<mpi::Rank>),
}

/// The largest piece of one message: MPI counts are `int`.
const PIECE: usize = 1 << 30;
/// A message's first byte: partials follow, each its length (8 bytes
/// little-endian) and its bytes.
const PARTIALS: u8 = 0;
/// A message's first byte: the failed ranks follow, 4 bytes each.
const FAILED: u8 = 1;

/// Reduces every rank's outcome to [`ROOT`] along a binomial tree: at step
/// `k` (1, 2, 4, ...) a rank that is an odd multiple of `k` sends what it
/// holds (its own and its subtree's, ranks `[rank, rank + k)`) to
/// `rank - k` and is done; a multiple of `2k` receives from `rank + k`, if
/// there is one, and puts it after its own, which keeps rank order.
/// `log2(ranks)` rounds; the root gets the whole run, every other rank
/// `None`. Every rank must call it.
pub fn reduce_to_root<C: Communicator>(comm: &C, own: Result<Partial, ()>) -> Option<Reduced> {
    let rank = comm.rank();
    let size = comm.size();
    let mut held = match own {
        Ok(partial) => Reduced::Partials(vec![partial.into_bytes()]),
        Err(()) => Reduced::Failed(vec![rank]),
    };
    let mut step: mpi::Rank = 1;
    while step < size {
        if rank % (2 * step) == step {
            send(comm, rank - step, &held);
            return None;
        }
        let child = rank + step;
        if child < size {
            held = combine(held, receive(comm, child));
        }
        step = step.saturating_mul(2);
    }
    Some(held)
}

/// What a parent holds after a child's subtree: both lists of partials
/// when both made them, else every failed rank.
fn combine(held: Reduced, child: Reduced) -> Reduced {
    match (held, child) {
        (Reduced::Partials(mut own), Reduced::Partials(theirs)) => {
            own.extend(theirs);
            Reduced::Partials(own)
        }
        (Reduced::Failed(mut own), Reduced::Failed(theirs)) => {
            own.extend(theirs);
            Reduced::Failed(own)
        }
        (Reduced::Failed(failed), Reduced::Partials(_)) | (Reduced::Partials(_), Reduced::Failed(failed)) => {
            Reduced::Failed(failed)
        }
    }
}

/// Sends `held` to `to`: a header (kind, then the body's length as 8
/// bytes little-endian) and the body in pieces MPI can count.
fn send<C: Communicator>(comm: &C, to: mpi::Rank, held: &Reduced) {
    let (kind, bytes) = match held {
        Reduced::Partials(parts) => {
            let mut body = Vec::with_capacity(parts.iter().map(|part| part.len() + 8).sum());
            for part in parts {
                body.extend_from_slice(&(part.len() as u64).to_le_bytes());
                body.extend_from_slice(part);
            }
            (PARTIALS, body)
        }
        Reduced::Failed(ranks) => (FAILED, ranks.iter().flat_map(|rank| rank.to_le_bytes()).collect()),
    };
    let mut header = [0u8; 9];
    header[0] = kind;
    header[1..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    let process = comm.process_at_rank(to);
    process.send(&header[..]);
    for piece in bytes.chunks(PIECE) {
        process.send(piece);
    }
}

/// Receives what [`send`] sent from `from`. Bytes that do not decode are
/// reported as `from`'s failure.
fn receive<C: Communicator>(comm: &C, from: mpi::Rank) -> Reduced {
    let process = comm.process_at_rank(from);
    let mut header = [0u8; 9];
    process.receive_into(&mut header[..]);
    let mut length = [0u8; 8];
    length.copy_from_slice(&header[1..]);
    let length = usize::try_from(u64::from_le_bytes(length)).unwrap_or(usize::MAX);
    let mut bytes = vec![0u8; length];
    for piece in bytes.chunks_mut(PIECE) {
        process.receive_into(piece);
    }
    if header[0] == FAILED {
        let ranks =
            bytes.chunks_exact(4).map(|rank| mpi::Rank::from_le_bytes([rank[0], rank[1], rank[2], rank[3]]));
        return Reduced::Failed(ranks.collect());
    }
    // Each partial is checked as the root reads it; here only the framing.
    let mut parts = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let Some((length, after)) = rest.split_first_chunk::<8>() else {
            eprintln!(
                "mpi-account: rank {}: the partials of rank {from}'s subtree are cut short",
                comm.rank()
            );
            return Reduced::Failed(vec![from]);
        };
        let length = usize::try_from(u64::from_le_bytes(*length)).unwrap_or(usize::MAX);
        if length > after.len() {
            eprintln!(
                "mpi-account: rank {}: the partials of rank {from}'s subtree are cut short",
                comm.rank()
            );
            return Reduced::Failed(vec![from]);
        }
        parts.push(after[..length].to_vec());
        rest = &after[length..];
    }
    Reduced::Partials(parts)
}

/// The whole program on one rank: its partial, the reduction, and at the
/// root the report on standard output. Whether the run was accounted, the
/// same on every rank (rank 0 broadcasts it): false when any rank failed
/// or the merged run was rejected, each failure printed to standard error
/// by the rank that met it.
pub fn run<C: Communicator>(comm: &C, request: &AccountRequest) -> bool {
    let rank = comm.rank();
    let (index, ranks) = (usize::try_from(rank).unwrap_or(0), usize::try_from(comm.size()).unwrap_or(1));
    // A panic in the reading is this rank's failure, not a job that ends
    // without saying which file.
    let made = std::panic::catch_unwind(|| rank_partial(request, index, ranks))
        .unwrap_or_else(|_| Err("panicked while reading its files".to_owned()));
    let own = made.map_err(|message| eprintln!("mpi-account: rank {rank}: {message}"));
    let mut succeeded = u8::from(match reduce_to_root(comm, own) {
        None => false,
        Some(Reduced::Failed(failed)) => {
            let failed: Vec<String> = failed.iter().map(ToString::to_string).collect();
            eprintln!("mpi-account: no report: rank(s) {} could not read their files", failed.join(", "));
            false
        }
        Some(Reduced::Partials(parts)) => print_report(&parts, request.breakdown),
    });
    comm.process_at_rank(ROOT).broadcast_into(&mut succeeded);
    succeeded == 1
}

/// Writes the merged run's report to standard output, or why it was
/// rejected to standard error; whether it was written.
fn print_report(parts: &[Vec<u8>], breakdown_report: bool) -> bool {
    let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let report = match report_json(&parts, breakdown_report) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("mpi-account: {error}");
            return false;
        }
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(&report).and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(error) => {
            eprintln!("mpi-account: writing the report: {error}");
            false
        }
    }
}
