//! Gathering every rank's report to one rank over MPI (feature `mpi`).
//!
//! [`gather_bytes`] moves one variable-length byte buffer from every rank
//! to the root: a gather of the lengths, then a variable-count gather
//! (`MPI_Igatherv`) of the bytes. Both are non-blocking collectives polled
//! against a deadline.
//!
//! # Never a hang
//!
//! Two things can keep a job from finishing, and each is bounded:
//!
//! - a rank stuck in its own work: each rank runs its work under
//!   [`run_with_deadline`](crate::ranks::run_with_deadline) and, when it
//!   times out, reports its shard as failed; the driver aggregates the
//!   others (status `partial`);
//! - a rank that never reaches a collective at all (stuck outside its
//!   work): MPI cannot cancel a collective, so when the deadline passes
//!   with the gather incomplete, the waiting rank prints why and aborts the
//!   whole job (`MPI_Abort`, exit code [`GATHER_TIMEOUT_EXIT`]) instead of
//!   waiting forever. A rank whose process dies is handled by Open MPI
//!   itself, which ends the job.
//!
//! [`account`] is the `mpi-account` program's: a run's accounting with
//! each rank reading its share of the files, partials reduced to rank 0.

pub mod account;

use std::time::{Duration, Instant};

use mpi::Count;
use mpi::datatype::PartitionMut;
use mpi::request::{Request, Scope};
use mpi::traits::{Communicator, Root};

/// The `MPI_Abort` error code when a gather misses its deadline.
pub const GATHER_TIMEOUT_EXIT: i32 = 75;

/// Backs zero-length buffers. An empty `Vec`'s pointer is the dangling
/// address 1, which is Open MPI's `MPI_IN_PLACE`: passed as a send buffer
/// it makes `MPI_Igatherv` fail with `MPI_ERR_ARG` (or worse, on the root,
/// gather "in place"). A zero-length slice of a real array has a real
/// address.
static EMPTY: [u8; 1] = [0];

/// Why a buffer could not be offered to a gather.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatherError {
    /// MPI counts are `int`: a buffer of 2 GiB or more cannot be sent whole.
    #[error("a report of {0} bytes exceeds MPI's 2^31 - 1 byte count")]
    TooLarge(usize),
}

/// Polls `request` until it completes, or aborts the job at `deadline`.
fn complete_or_abort<'a, D: ?Sized, S: Scope<'a>, C: Communicator>(
    mut request: Request<'a, D, S>,
    comm: &C,
    deadline: Instant,
    what: &str,
    timeout: Duration,
) {
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => request = pending,
        }
        if Instant::now() >= deadline {
            eprintln!(
                "tally-distributed: rank {}: the {what} gather did not complete within {timeout:?} \
                 (a rank never reached it); aborting the MPI job instead of waiting forever",
                comm.rank()
            );
            comm.abort(GATHER_TIMEOUT_EXIT);
        }
        // Polling drives MPI's progress; a short sleep keeps an idle
        // waiting rank from burning a core.
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Gathers `payload` from every rank of `comm` to rank `root`: the root
/// gets every rank's bytes in rank order (its own included), the others
/// `None`. Every rank must call it, with its own payload. Each of the two
/// collectives gets `timeout`; see the module docs for what happens then.
pub fn gather_bytes<C: Communicator>(
    comm: &C,
    root: i32,
    payload: &[u8],
    timeout: Duration,
    what: &str,
) -> Result<Option<Vec<Vec<u8>>>, GatherError> {
    let length = Count::try_from(payload.len()).map_err(|_| GatherError::TooLarge(payload.len()))?;
    let payload = if payload.is_empty() { &EMPTY[..0] } else { payload };
    let root_process = comm.process_at_rank(root);
    let size = usize::try_from(comm.size()).unwrap_or(0);
    if comm.rank() != root {
        let deadline = Instant::now() + timeout;
        mpi::request::scope(|scope| {
            let request = root_process.immediate_gather_into(scope, &length);
            complete_or_abort(request, comm, deadline, &format!("{what} length"), timeout);
        });
        let deadline = Instant::now() + timeout;
        mpi::request::scope(|scope| {
            let request = root_process.immediate_gather_varcount_into(scope, payload);
            complete_or_abort(request, comm, deadline, what, timeout);
        });
        return Ok(None);
    }
    let mut counts: Vec<Count> = vec![0; size];
    let deadline = Instant::now() + timeout;
    mpi::request::scope(|scope| {
        let request = root_process.immediate_gather_into_root(scope, &length, &mut counts[..]);
        complete_or_abort(request, comm, deadline, &format!("{what} length"), timeout);
    });
    let mut displacements: Vec<Count> = Vec::with_capacity(size);
    let mut total: usize = 0;
    for &count in &counts {
        // The displacement of each rank is the sum of the counts before it;
        // counts come from MPI_Gather of non-negative ints.
        displacements.push(Count::try_from(total).map_err(|_| GatherError::TooLarge(total))?);
        total += usize::try_from(count).unwrap_or(0);
    }
    // At least one byte, for the same reason as EMPTY.
    let mut buffer = vec![0u8; total.max(1)];
    let deadline = Instant::now() + timeout;
    {
        let mut partition = PartitionMut::new(&mut buffer[..], &counts[..], &displacements[..]);
        mpi::request::scope(|scope| {
            let request = root_process.immediate_gather_varcount_into_root(scope, payload, &mut partition);
            complete_or_abort(request, comm, deadline, what, timeout);
        });
    }
    let mut buffers = Vec::with_capacity(size);
    let mut offset = 0;
    for &count in &counts {
        let count = usize::try_from(count).unwrap_or(0);
        buffers.push(buffer[offset..offset + count].to_vec());
        offset += count;
    }
    Ok(Some(buffers))
}
