//! A build's records turned into a caller's batches ([`RecordBatcher`]) on
//! the thread that makes them, each batch sent as it fills.

use crate::error::{SinkError, TraceErrorKind};
use crate::parallel::RecordBatcher;
use crate::record::TraceRecord;

/// Records made on the batching thread, batched and sent as batches fill.
pub(super) struct Batched<'b, R: RecordBatcher> {
    pub(super) batcher: &'b R,
    pub(super) send: &'b mut dyn FnMut(R::Batch) -> Result<(), SinkError>,
    batch: R::Batch,
    filled: bool,
    /// Records so far, made here or by the emitters.
    pub(super) records: u64,
}

impl<'b, R: RecordBatcher> Batched<'b, R> {
    /// Batches whose first record follows `records` others.
    pub(super) fn new(
        batcher: &'b R,
        send: &'b mut dyn FnMut(R::Batch) -> Result<(), SinkError>,
        records: u64,
    ) -> Self {
        Self { batcher, send, batch: batcher.batch(), filled: false, records }
    }

    pub(super) fn add(&mut self, record: TraceRecord<'_>) -> Result<(), TraceErrorKind> {
        self.records += 1;
        self.filled = true;
        if self.batcher.add(&mut self.batch, self.records, record).map_err(TraceErrorKind::Sink)? {
            self.filled = false;
            (self.send)(std::mem::replace(&mut self.batch, self.batcher.batch()))
                .map_err(TraceErrorKind::Sink)?;
        }
        Ok(())
    }

    /// Sends the last batch once the records' making ended with `made`,
    /// and gives the number of records. The records before an error go
    /// too (they came first, and a consumer that refuses one of them has
    /// the first word), unless the sink or batcher refused already.
    pub(super) fn finish<T>(self, made: &Result<T, TraceErrorKind>) -> Result<u64, TraceErrorKind> {
        if self.filled && !matches!(made, Err(TraceErrorKind::Sink(_))) {
            (self.send)(self.batch).map_err(TraceErrorKind::Sink)?;
        }
        Ok(self.records)
    }

    /// Sends what is batched so far, so that batches made elsewhere come
    /// after it.
    pub(super) fn flush(&mut self) -> Result<(), TraceErrorKind> {
        if std::mem::take(&mut self.filled) {
            (self.send)(std::mem::replace(&mut self.batch, self.batcher.batch()))
                .map_err(TraceErrorKind::Sink)?;
        }
        Ok(())
    }
}
