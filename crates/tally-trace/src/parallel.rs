//! Several traces imported at once, their records passed on in file order.
//!
//! Reading a trace (JSON scanning, decompression) is most of an import and
//! each file's is independent, so `workers` threads take the files in order
//! and import each with a sink that turns its records into the caller's
//! batches ([`RecordBatcher`]: full events, or evidence prepared for a
//! resolver) and sends them down a bounded channel of its own. The calling
//! thread drains the channels file by file into the caller's sink: the sink
//! sees exactly the sequence a one-at-a-time import gives (each batch with
//! the number of records before its file, so record numbers run on over the
//! files), and the first error, in file order, is the one returned. A
//! worker ahead of the file being drained blocks once its channel is full,
//! so at most `workers` files are in flight, each holding its compact rows
//! and a few batches: memory grows with the threads, not with the number
//! of files.
//!
//! One file's own build spreads over threads too (its GPU groups' records
//! made on `emitters` threads, `Spread`'s second half): that lives with the
//! build, in `build/schedule.rs`, which says why it stays apart from this.

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use crate::build::FileOutcome;
use crate::error::{SinkError, TraceError, TraceErrorKind};
use crate::record::TraceRecord;
use crate::{ImportOptions, OpenedInput};

/// What the thread importing a trace makes of its records before they
/// cross to the thread that passes them on: full events for a sink of
/// events, prepared evidence for a resolver (the part of its work that can
/// run beside the import), ...
pub trait RecordBatcher: Sync {
    /// What crosses, a batch of records at a time.
    type Batch: Send;

    /// An empty batch.
    fn batch(&self) -> Self::Batch;

    /// Adds a file's record number `number` (counted from 1 in that file)
    /// to `batch`; `true` when the batch is full and goes on its way.
    fn add(&self, batch: &mut Self::Batch, number: u64, record: TraceRecord<'_>) -> Result<bool, SinkError>;
}

/// Batches a file's channel holds before its worker waits.
const QUEUED: usize = 4;

enum Message<B> {
    Batch(B),
    Done(Result<FileOutcome, TraceError>),
}

/// One file's work: its input and the sending end of its channel.
type Job<B> = (OpenedInput, SyncSender<Message<B>>);

/// How an import spreads over threads: `workers` files at once, each
/// file's activity records made on `emitters` threads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spread {
    pub(crate) workers: usize,
    pub(crate) emitters: usize,
}

/// Imports `inputs` on `workers` threads, each turning its records into
/// `batcher`'s batches; each file's batches go to `sink` in file order with
/// the number of records of the files before it, and each file's outcome
/// to `done`.
pub(crate) fn import_files<R: RecordBatcher>(
    inputs: Vec<OpenedInput>,
    paths: &[PathBuf],
    options: &ImportOptions,
    Spread { workers, emitters }: Spread,
    batcher: &R,
    sink: &mut dyn FnMut(R::Batch, u64) -> Result<(), SinkError>,
    done: &mut dyn FnMut(FileOutcome),
) -> Result<(), TraceError> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut receivers: Vec<(PathBuf, Receiver<Message<R::Batch>>)> = Vec::with_capacity(inputs.len());
    let mut jobs: Vec<Job<R::Batch>> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let (sender, receiver) = sync_channel(QUEUED);
        receivers.push((input.path().to_path_buf(), receiver));
        let input = input.map_reader(|reader| Box::new(Stoppable { inner: reader, stop: stop.clone() }));
        jobs.push((input, sender));
    }
    // Taken in file order, so the file being drained has always been taken
    // by a worker that is not waiting on a later file's channel.
    let queue = Mutex::new(jobs.into_iter());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| worker(&queue, paths, options, batcher, emitters, &stop));
        }
        let drained = drain(receivers, sink, done);
        // Workers still reading stop at their next read; those sending find
        // their channel gone.
        stop.store(true, Ordering::Relaxed);
        drained
    })
}

/// Imports one file on this thread into `batcher`'s batches, each passed to
/// `send` when full and the last one at the end. With more than one
/// emitter, its activity records are made and batched on `emitters`
/// threads ([`crate::build::build_batched`]); the records are the same.
pub(crate) fn import_file_batched<R: RecordBatcher>(
    input: OpenedInput,
    paths: &[PathBuf],
    options: &ImportOptions,
    batcher: &R,
    emitters: usize,
    send: &mut dyn FnMut(R::Batch) -> Result<(), SinkError>,
) -> Result<FileOutcome, TraceError> {
    let mut read = crate::read_file(input, paths, options)?;
    crate::build::build_batched(
        &mut read.collected,
        &read.info,
        &read.file,
        options,
        &read.uuids,
        batcher,
        emitters,
        send,
    )
    .map_err(|kind| TraceError::new(&read.path, kind))
}

fn worker<R: RecordBatcher>(
    queue: &Mutex<std::vec::IntoIter<Job<R::Batch>>>,
    paths: &[PathBuf],
    options: &ImportOptions,
    batcher: &R,
    emitters: usize,
    stop: &AtomicBool,
) {
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // A poisoned queue means another worker panicked; the scope reports
        // that panic, so this one just stops.
        let Some((input, sender)) = queue.lock().ok().and_then(|mut jobs| jobs.next()) else {
            return;
        };
        let outcome = import_file_batched(input, paths, options, batcher, emitters, &mut |batch| {
            sender.send(Message::Batch(batch)).map_err(|_| "the import stopped".into())
        });
        if sender.send(Message::Done(outcome)).is_err() {
            return;
        }
    }
}

/// Passes each file's batches on, file by file, with the records before
/// the file; stops at the first error.
fn drain<B>(
    receivers: Vec<(PathBuf, Receiver<Message<B>>)>,
    sink: &mut dyn FnMut(B, u64) -> Result<(), SinkError>,
    done: &mut dyn FnMut(FileOutcome),
) -> Result<(), TraceError> {
    let mut before = 0;
    for (path, receiver) in receivers {
        loop {
            match receiver.recv() {
                Ok(Message::Batch(batch)) => {
                    // As a one-at-a-time import reports a refusing sink.
                    sink(batch, before)
                        .map_err(|error| TraceError::new(&path, TraceErrorKind::Sink(error)))?;
                }
                Ok(Message::Done(outcome)) => {
                    let outcome = outcome?;
                    before += outcome.events;
                    done(outcome);
                    break;
                }
                // Only a worker that panicked drops a channel unfinished;
                // the scope re-raises its panic.
                Err(_) => {
                    return Err(TraceError::new(
                        &path,
                        TraceErrorKind::Io(io::Error::other("the import thread of this trace stopped")),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A reader that fails once `stop` is set: a worker reading a later file
/// gives up as soon as an earlier one failed, and the second reader of a
/// split trace ([`crate::kineto::read_kineto_split`]) once the first no
/// longer needs it.
pub(crate) struct Stoppable<R, S> {
    pub(crate) inner: R,
    pub(crate) stop: S,
}

impl<R: Read, S: Deref<Target = AtomicBool>> Read for Stoppable<R, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(io::Error::other("the import stopped"));
        }
        self.inner.read(buf)
    }
}

impl<R: Seek, S> Seek for Stoppable<R, S> {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        self.inner.seek(position)
    }
}
