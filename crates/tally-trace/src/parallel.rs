//! Several traces imported at once, their records passed on in file order.
//!
//! Reading a trace (JSON scanning, decompression) is most of an import and
//! each file's is independent, so `threads` workers take the files in order
//! and import each with a sink that sends its records, in batches, down a
//! bounded channel of its own. The calling thread drains the channels file
//! by file into the caller's sink: the sink sees exactly the sequence a
//! one-at-a-time import gives, and the first error, in file order, is the
//! one returned. A worker ahead of the file being drained blocks once its
//! channel is full, so at most `threads` files are in flight, each holding
//! its compact rows and a few batches: memory grows with the threads, not
//! with the number of files.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use tally_core::CorrelationEvent;

use crate::build::FileOutcome;
use crate::error::{SinkError, TraceError, TraceErrorKind};
use crate::record::TraceRecord;
use crate::{ImportOptions, OpenedInput, import_file};

/// Records sent at once: large enough that the channel costs nothing per
/// record, small enough that a few batches are a few megabytes.
const BATCH: usize = 1024;

/// Batches a file's channel holds before its worker waits.
const QUEUED: usize = 4;

enum Message {
    Records(Vec<CorrelationEvent>),
    Done(Result<FileOutcome, TraceError>),
}

/// One file's work: its input and the sending end of its channel.
type Job = (OpenedInput, SyncSender<Message>);

/// Imports `inputs` on `threads` workers; each file's records go to `sink`
/// in file order, and each file's outcome to `done`.
pub(crate) fn import_files(
    inputs: Vec<OpenedInput>,
    paths: &[PathBuf],
    options: &ImportOptions,
    threads: usize,
    sink: &mut dyn FnMut(TraceRecord<'_>) -> Result<(), SinkError>,
    done: &mut dyn FnMut(FileOutcome),
) -> Result<(), TraceError> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut receivers: Vec<(PathBuf, Receiver<Message>)> = Vec::with_capacity(inputs.len());
    let mut jobs: Vec<Job> = Vec::with_capacity(inputs.len());
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
        for _ in 0..threads {
            scope.spawn(|| worker(&queue, paths, options, &stop));
        }
        let drained = drain(receivers, sink, done);
        // Workers still reading stop at their next read; those sending find
        // their channel gone.
        stop.store(true, Ordering::Relaxed);
        drained
    })
}

fn worker(
    queue: &Mutex<std::vec::IntoIter<Job>>,
    paths: &[PathBuf],
    options: &ImportOptions,
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
        let mut batch = Vec::with_capacity(BATCH);
        // Records by their parts borrow the worker's tables, so each is
        // built in full here, on the worker, to cross to the draining thread.
        let mut send = |record: TraceRecord<'_>| -> Result<(), SinkError> {
            batch.push(record.into_event()?);
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                sender.send(Message::Records(full)).map_err(|_| "the import stopped")?;
            }
            Ok(())
        };
        let outcome = import_file(input, paths, options, &mut send);
        if !batch.is_empty() && sender.send(Message::Records(batch)).is_err() {
            return;
        }
        if sender.send(Message::Done(outcome)).is_err() {
            return;
        }
    }
}

/// Passes each file's records on, file by file; stops at the first error.
fn drain(
    receivers: Vec<(PathBuf, Receiver<Message>)>,
    sink: &mut dyn FnMut(TraceRecord<'_>) -> Result<(), SinkError>,
    done: &mut dyn FnMut(FileOutcome),
) -> Result<(), TraceError> {
    for (path, receiver) in receivers {
        loop {
            match receiver.recv() {
                Ok(Message::Records(records)) => {
                    for record in records {
                        // As a one-at-a-time import reports a refusing sink.
                        sink(TraceRecord::Event(record))
                            .map_err(|error| TraceError::new(&path, TraceErrorKind::Sink(error)))?;
                    }
                }
                Ok(Message::Done(outcome)) => {
                    done(outcome?);
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

/// A reader that fails once the import has stopped, so a worker reading a
/// later file gives up as soon as an earlier one failed.
struct Stoppable {
    inner: Box<dyn Read + Send>,
    stop: Arc<AtomicBool>,
}

impl Read for Stoppable {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(io::Error::other("the import stopped"));
        }
        self.inner.read(buf)
    }
}
