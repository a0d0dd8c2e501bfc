//! The parallel batch reader behind [`read_artifact`], [`read_batches`],
//! [`read_mapped`] and [`read_events`]: a reader thread cuts the stream
//! into whole-line windows ([`crate::windows`]), plans each (lines counted,
//! v4 definitions registered in file order) and deals whole windows out to
//! the decoding threads, whose batches come back in file order; a small
//! input is read on the calling thread alone. The record limit lives here.

use std::convert::Infallible;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc;

use tally_core::view::EventView;
use tally_core::{CorrelationContext, InferenceRecord};

use crate::decode::{
    DecodePath, DecodeStats, LineError, Row, context_finder, decode_row, definition_of, may_define,
};
use crate::error::{ArtifactError, ErrorKind};
use crate::lines::Lines;
use crate::open::{Sniffed, decompressed, open_raw, source_name};
use crate::registry::{Interner, Registry};
use crate::windows::{LineTooLong, Window, WindowSource};

/// Reads a whole artifact (a path, or `-` for standard input; plain or
/// gzip) into memory, decoding in parallel; the records come back in file
/// order, definitions consumed. See the crate documentation for the rules.
pub fn read_artifact(path: &Path) -> Result<Vec<InferenceRecord>, ArtifactError> {
    read_artifact_from(open_raw(path)?, &source_name(path))
}

/// [`read_artifact`] over any byte stream (plain or gzip); `source_name`
/// names it in errors.
pub fn read_artifact_from<R: Read + Send>(
    reader: R,
    source_name: &str,
) -> Result<Vec<InferenceRecord>, ArtifactError> {
    let mut records = Vec::new();
    read_batches(reader, source_name, &ReadOptions::default(), |batch| {
        records.extend(batch.records);
        Ok(())
    })?;
    Ok(records)
}

/// The longest line (record) a reader accepts by default: 8 MiB. A record
/// of stormlog's is a few hundred bytes to a few kilobytes; the limit is
/// there so that no input, however hostile, takes the machine's memory. A
/// line without a line end (`/dev/zero`, a gzip bomb) is held once, up to
/// the limit; a line within it is parsed, and JSON parsed into values takes
/// up to about 20 times its text (a metadata array of `0,`s: 32 bytes per
/// value and the array's growth), about 40 times while the allocator keeps
/// what it freed; at 8 MiB that is about 320 MB at the worst (measured: a
/// 7 MiB line of zeros, 156 MB for `validate`, 275 MB for `account`), so
/// every command stays under 512 MB by default. Real artifacts with huge
/// metadata pass with a raised limit.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 8 << 20;

/// The message of a line past the record limit.
pub(crate) fn too_long(limit: usize) -> String {
    format!("the line is longer than the record limit of {limit} bytes")
}

/// How [`read_batches`] splits its work.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Bytes read per window: the unit a decoding thread takes; a few
    /// windows per thread are in memory at once.
    pub window_bytes: usize,
    /// Bytes of a window decoded into one batch (one call of the sink).
    pub chunk_bytes: usize,
    /// Decoding threads (0: one per core). The results are the same
    /// whatever the number.
    pub threads: usize,
    /// Whether to use the typed fast path (the results are the same).
    pub fast_path: bool,
    /// The longest line accepted, in bytes ([`DEFAULT_MAX_RECORD_BYTES`]);
    /// a longer one is an [`ErrorKind::Limit`] error at its line.
    pub max_record_bytes: usize,
    /// Whether a small input (see [`read_mapped`]) is read and decoded on
    /// the calling thread, with no thread started (the results are the
    /// same; off only to test the pipeline on small inputs).
    pub inline_small_inputs: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            window_bytes: 1 << 20,
            chunk_bytes: 256 << 10,
            threads: 0,
            fast_path: true,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            inline_small_inputs: true,
        }
    }
}

/// Consecutive records of an artifact, with their physical line numbers.
#[derive(Debug, Clone, Default)]
pub struct RecordBatch {
    /// The 1-based line of each record.
    pub lines: Vec<u64>,
    /// The records, in file order.
    pub records: Vec<InferenceRecord>,
    /// How many of them were v4 rows naming their context by `context_id`.
    pub compact_records: u64,
    /// `infer.context` definitions consumed among these lines.
    pub definitions: u64,
    /// Which decoder path decided these records.
    pub decoded: DecodeStats,
}

/// What [`read_batches`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Bytes of artifact text (decompressed).
    pub bytes: u64,
    /// Physical lines, blank lines and definitions included.
    pub lines: u64,
    /// Records delivered.
    pub records: u64,
    /// Records that were v4 rows naming their context by `context_id`.
    pub compact_records: u64,
    /// `infer.context` definition rows.
    pub definitions: u64,
    /// Which decoder path decided the records.
    pub decoded: DecodeStats,
}

/// Decodes an artifact in parallel and hands its records to `sink` in file
/// order, one batch at a time, without holding the whole artifact: a reader
/// thread reads (and decompresses) the stream in windows of whole lines and
/// deals them out to the decoding threads ([`ReadOptions::threads`]), each
/// of which decodes whole windows on its own. A small input is read and
/// decoded on the calling thread instead (see [`read_mapped`]).
///
/// v4 definitions are found first, by the reader, in each window (every
/// line that could be one, cheaply told by its bytes), registered in file
/// order and sent on to every decoder, and a reference resolves only to a
/// definition on an earlier line, so the result and the first error, by
/// line, are those of a sequential read.
pub fn read_batches<R: Read + Send>(
    reader: R,
    source_name: &str,
    options: &ReadOptions,
    sink: impl FnMut(RecordBatch) -> Result<(), ArtifactError>,
) -> Result<ReadStats, ArtifactError> {
    read_mapped(reader, source_name, options, |batch| batch, sink)
}

/// [`read_batches`] of an input whose compression is already known
/// ([`crate::decompressed_as`], for an input its opener sniffed): it is not
/// sniffed again.
pub fn read_sniffed_batches<R: Read + Send>(
    input: Sniffed<R>,
    source_name: &str,
    options: &ReadOptions,
    sink: impl FnMut(RecordBatch) -> Result<(), ArtifactError>,
) -> Result<ReadStats, ArtifactError> {
    read_collected(input, source_name, options, |batch| batch, sink)
}

/// [`read_batches`] with a `map` that runs on the decoding threads, right
/// after each batch is decoded: a caller that only summarizes records (a
/// count, a check) does that work, and frees the records, in parallel, and
/// `sink` receives the summaries in file order. Batches after the first
/// error may be mapped but are never handed to `sink`.
///
/// A small input, whose text ends within its first 64 KiB and its first
/// window, is read, decoded and handed on by the calling thread alone, with
/// no thread started (unless [`ReadOptions::inline_small_inputs`] is off):
/// the pipeline would overlap nothing, and its start-up would cost more
/// than the decoding. Either way the same steps run in the same order, on
/// the same windows, so the records and the first error are the same.
///
/// ```
/// use tally_artifact::{read_mapped, ReadOptions};
/// let text = b"{\"schema_version\": 1, \"event_type\": \"infer.a\"}\n{\"event_type\": \"infer.b\"}\n";
/// let mut total = 0;
/// read_mapped(&text[..], "mem", &ReadOptions::default(), |batch| batch.records.len(), |count| {
///     total += count;
///     Ok(())
/// })
/// .unwrap();
/// assert_eq!(total, 2);
/// ```
pub fn read_mapped<R, T, M, S>(
    reader: R,
    source_name: &str,
    options: &ReadOptions,
    map: M,
    sink: S,
) -> Result<ReadStats, ArtifactError>
where
    R: Read + Send,
    T: Send,
    M: Fn(RecordBatch) -> T + Sync,
    S: FnMut(T) -> Result<(), ArtifactError>,
{
    let stream = decompressed(reader).map_err(|error| ArtifactError::io(source_name, &error))?;
    read_collected(stream, source_name, options, map, sink)
}

/// [`read_mapped`] of a sniffed stream.
fn read_collected<R: Read + Send, T: Send>(
    stream: Sniffed<R>,
    source_name: &str,
    options: &ReadOptions,
    map: impl Fn(RecordBatch) -> T + Sync,
    mut sink: impl FnMut(T) -> Result<(), ArtifactError>,
) -> Result<ReadStats, ArtifactError> {
    let flow = read_lines(
        stream,
        source_name,
        options,
        false,
        &|| Collect { batch: RecordBatch::default(), map: &map },
        |output| sink(output).map(|()| ControlFlow::<Infallible>::Continue(())),
    )?;
    match flow {
        ControlFlow::Continue(stats) => Ok(stats),
        ControlFlow::Break(never) => match never {},
    }
}

/// Receives one chunk of an artifact's lines, in order, on a decoding
/// thread ([`read_events`]): each record line either as an event read
/// straight from its bytes or as a record the decoder built.
pub trait LineSink {
    /// What the chunk becomes, handed on in file order.
    type Output: Send;
    /// Room for about `lines` lines.
    fn reserve(&mut self, lines: usize) {
        let _ = lines;
    }
    /// A record the decoder built: a legacy record, or an event the view
    /// path left to the other paths (a rare type, an escape, an error).
    fn record(&mut self, line: u64, record: InferenceRecord);
    /// An event the view path read straight from its line; the view
    /// borrows the line, which is gone once the chunk is done.
    fn event(&mut self, line: u64, event: &EventView<'_>);
    /// The chunk is done.
    fn finish(self) -> Self::Output;
}

/// What the pipeline needs of a chunk's sink: a [`LineSink`], or
/// [`read_mapped`]'s batch, which also carries the chunk's counts.
trait ChunkSink {
    type Output: Send;
    fn reserve(&mut self, lines: usize);
    fn record(&mut self, line: u64, record: InferenceRecord);
    fn event(&mut self, line: u64, event: &EventView<'_>);
    fn finish(self, counts: &BatchCounts) -> Self::Output;
}

impl<L: LineSink> ChunkSink for L {
    type Output = L::Output;

    fn reserve(&mut self, lines: usize) {
        LineSink::reserve(self, lines);
    }

    fn record(&mut self, line: u64, record: InferenceRecord) {
        LineSink::record(self, line, record);
    }

    fn event(&mut self, line: u64, event: &EventView<'_>) {
        LineSink::event(self, line, event);
    }

    fn finish(self, _counts: &BatchCounts) -> L::Output {
        LineSink::finish(self)
    }
}

/// [`read_mapped`]'s sink: every record built, then mapped.
struct Collect<'m, M> {
    batch: RecordBatch,
    map: &'m M,
}

impl<T: Send, M: Fn(RecordBatch) -> T> ChunkSink for Collect<'_, M> {
    type Output = T;

    fn reserve(&mut self, lines: usize) {
        self.batch.lines.reserve(lines);
        self.batch.records.reserve(lines);
    }

    fn record(&mut self, line: u64, record: InferenceRecord) {
        self.batch.lines.push(line);
        self.batch.records.push(record);
    }

    fn event(&mut self, _line: u64, _event: &EventView<'_>) {
        // read_mapped reads with the view path off, so no line arrives here.
        unreachable!("read_mapped asks for records only")
    }

    fn finish(mut self, counts: &BatchCounts) -> T {
        self.batch.compact_records = counts.compact_records;
        self.batch.definitions = counts.definitions;
        self.batch.decoded = counts.decoded;
        (self.map)(self.batch)
    }
}

/// Reads an artifact like [`read_mapped`], but hands each chunk's lines to
/// a [`LineSink`] made by `start` on the decoding thread, and reads the
/// ordinary rows of the common types (requests, iterations, stages,
/// memberships, activities) straight into [`EventView`]s borrowed from
/// their lines, never building their events: for a caller that only reads
/// what a view holds (the streaming resolver), that skips every allocation
/// an event makes. Lines the view path cannot decide are decoded as
/// [`read_mapped`] decodes them and arrive as records; the results, the
/// errors and their lines are the same either way.
///
/// The input comes with its compression decided ([`decompressed`], or
/// [`crate::decompressed_as`] for an input its opener already sniffed), so
/// it is not sniffed again. `sink` may stop the read: its
/// [`ControlFlow::Break`] ends it at once (no later chunk reaches `sink`)
/// and is returned; else the read's counts are.
pub fn read_events<R, L, S, B>(
    input: Sniffed<R>,
    source_name: &str,
    options: &ReadOptions,
    start: impl Fn() -> L + Sync,
    mut sink: S,
) -> Result<ControlFlow<B, ReadStats>, ArtifactError>
where
    R: Read + Send,
    L: LineSink,
    S: FnMut(L::Output) -> ControlFlow<B>,
{
    read_lines(input, source_name, options, options.fast_path, &start, |output| Ok(sink(output)))
}

fn read_lines<R, L, S, B>(
    stream: Sniffed<R>,
    source_name: &str,
    options: &ReadOptions,
    views: bool,
    start: &(impl Fn() -> L + Sync),
    mut sink: S,
) -> Result<ControlFlow<B, ReadStats>, ArtifactError>
where
    R: Read + Send,
    L: ChunkSink,
    S: FnMut(L::Output) -> Result<ControlFlow<B>, ArtifactError>,
{
    let window_bytes = options.window_bytes.max(1);
    let max_record = options.max_record_bytes.max(1);
    let mut stats = ReadStats::default();
    let decoder = WindowDecoder {
        source_name,
        registry: Registry::default(),
        interner: Interner::default(),
        paths: Paths { fast: options.fast_path, views, max_record },
    };
    let mut source = WindowSource::new(stream, window_bytes, max_record);
    let first = source.start();
    let small = options.inline_small_inputs && first.is_some();
    let threads = if small { 1 } else { decoding_threads(options.threads) };
    let mut planner = Planner {
        source_name,
        registry: Registry::default(),
        // One pool of contexts for the reader and every decoder: a context
        // defined and one embedded are one `Arc`.
        interner: decoder.interner.clone(),
        chunk_bytes: options.chunk_bytes.max(1),
        max_record,
        next_line: 1,
        unseen: vec![Vec::new(); threads],
    };
    if small && let Some(mut message) = first {
        // A small input: every step on this thread, one after the other
        // (its one window, or the lines before a read error and the error).
        let mut decoder = decoder;
        loop {
            let planned = planner.plan(message, 0)?;
            match stats.add(decoder.decode(planned, start, drop)?, &mut sink)? {
                ControlFlow::Break(stop) => return Ok(ControlFlow::Break(stop)),
                ControlFlow::Continue(true) => return Ok(ControlFlow::Continue(stats)),
                ControlFlow::Continue(false) => {}
            }
            message = source.next_window(None);
        }
    }
    let long_lines = std::sync::Mutex::new(());
    std::thread::scope(|scope| {
        // Spent windows go back to the reader: no fresh pages per window.
        let (recycle, recycled) = mpsc::channel::<Window>();
        // Window `n` goes to decoder `n % threads` and its batches come
        // back from it, so they reach `sink` in file order with no
        // reordering; each decoder holds a window in hand and one waiting
        // on either side of it, so the records in memory stay within a few
        // windows per thread.
        let mut to_decoders = Vec::with_capacity(threads);
        let mut from_decoders = Vec::with_capacity(threads);
        // A window grown for a line of several windows is decoded by one
        // decoder at a time: parsed JSON takes up to about 20 times its
        // text, and lines near the record limit decoded on every core at
        // once would multiply that by the cores (16 lines of 7 MiB of
        // zeros: `account` at 386 MB on 2 cores).
        let long_lines = &long_lines;
        for _ in 0..threads {
            let (planned_sender, planned) = mpsc::sync_channel::<Result<Planned, ArtifactError>>(1);
            let (decoded_sender, decoded) =
                mpsc::sync_channel::<Result<Decoded<L::Output>, ArtifactError>>(1);
            let mut decoder = decoder.clone();
            let recycle = recycle.clone();
            scope.spawn(move || {
                for message in planned {
                    let result = message.and_then(|planned| {
                        let _one_at_a_time = (planned.window.filled > 4 * window_bytes)
                            .then(|| long_lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
                        decoder.decode(planned, start, |window| {
                            let _ = recycle.send(window);
                        })
                    });
                    let stop = !matches!(result, Ok(Decoded { last: false, .. }));
                    // A closed channel means `sink` stopped on an error.
                    if decoded_sender.send(result).is_err() || stop {
                        return;
                    }
                }
            });
            to_decoders.push(planned_sender);
            from_decoders.push(decoded);
        }
        drop(recycle);
        // The reader reads a window ahead, counts its lines and registers
        // its definitions in file order (cheap, and the only serial step of
        // decoding), and deals the windows out.
        scope.spawn(move || {
            let mut message = first.unwrap_or_else(|| source.next_window(None));
            for turn in (0..threads).cycle() {
                let planned = planner.plan(message, turn);
                let stop = !matches!(planned, Ok(Planned { last: false, .. }));
                // A closed channel means the consumer stopped on an error.
                if to_decoders[turn].send(planned).is_err() || stop {
                    return;
                }
                message = source.next_window(recycled.try_recv().ok());
            }
        });
        for turn in (0..threads).cycle() {
            // A decoder that hung up early panicked; the scope reraises it.
            let Ok(decoded) = from_decoders[turn].recv() else { break };
            match stats.add(decoded?, &mut sink)? {
                // Returning drops the channels, which stops the threads.
                ControlFlow::Break(stop) => return Ok(ControlFlow::Break(stop)),
                ControlFlow::Continue(true) => break,
                ControlFlow::Continue(false) => {}
            }
        }
        Ok(ControlFlow::Continue(stats))
    })
}

/// The decoding threads [`ReadOptions::threads`] asks for.
fn decoding_threads(wanted: usize) -> usize {
    match wanted {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        wanted => wanted,
    }
}

impl ReadStats {
    /// Counts a decoded window and hands its batches to `sink`, in order,
    /// until it stops the read; whether the window was the last.
    fn add<T, B>(
        &mut self,
        window: Decoded<T>,
        sink: &mut impl FnMut(T) -> Result<ControlFlow<B>, ArtifactError>,
    ) -> Result<ControlFlow<B, bool>, ArtifactError> {
        self.bytes += window.bytes;
        self.lines += window.lines;
        for (output, counts) in window.outputs {
            self.records += counts.records;
            self.compact_records += counts.compact_records;
            self.definitions += counts.definitions;
            self.decoded.fast += counts.decoded.fast;
            self.decoded.exact += counts.decoded.exact;
            if let ControlFlow::Break(stop) = sink(output)? {
                return Ok(ControlFlow::Break(stop));
            }
        }
        Ok(ControlFlow::Continue(window.last))
    }
}

/// One window's decoded batches, on their way from the decoding thread to
/// the sink.
struct Decoded<T> {
    outputs: Vec<(T, BatchCounts)>,
    bytes: u64,
    lines: u64,
    last: bool,
}

/// What a batch held, kept for [`ReadStats`] when the batch is mapped away.
#[derive(Debug, Clone, Copy)]
struct BatchCounts {
    records: u64,
    compact_records: u64,
    definitions: u64,
    decoded: DecodeStats,
}

/// A window ready to decode: its lines counted chunk by chunk and its
/// definitions registered, in file order, by the [`Planner`].
struct Planned {
    window: Window,
    last: bool,
    chunks: Vec<ChunkPlan>,
    /// The lines of the window.
    lines: u64,
    /// Definitions that are new since the receiving decoder's last window
    /// (by their first line), for its copy of the registry.
    defined: Vec<NewDefinition>,
}

/// A chunk of a planned window.
struct ChunkPlan {
    /// Where the chunk ends in the window.
    end: usize,
    first_line: u64,
    lines: u64,
    /// The definitions on the chunk's lines, each registered or refused.
    definitions: Vec<(u64, Result<(), String>)>,
}

/// A `context_id` defined for the first time: its ID, context and line.
type NewDefinition = (String, std::sync::Arc<CorrelationContext>, u64);

/// The serial part of decoding, on the reader thread: lines counted and
/// definitions registered in file order, so that a decoder, with the
/// definitions of every earlier window, decodes any window on its own.
struct Planner<'a> {
    source_name: &'a str,
    registry: Registry,
    interner: Interner,
    chunk_bytes: usize,
    max_record: usize,
    /// The line the next window starts at.
    next_line: u64,
    /// For each decoder, the definitions it has not yet been sent.
    unseen: Vec<Vec<NewDefinition>>,
}

type DefinitionOutcome = Result<(String, std::sync::Arc<CorrelationContext>), String>;

impl Planner<'_> {
    /// Plans what the window source gave, for decoder `decoder`: the
    /// window, or the error (a read error, a line past the limit) with its
    /// line.
    fn plan(
        &mut self,
        message: io::Result<(Window, bool)>,
        decoder: usize,
    ) -> Result<Planned, ArtifactError> {
        let (window, last) = message.map_err(|error| {
            match error.get_ref().is_some_and(|inner| inner.is::<LineTooLong>()) {
                // The unfinished line is the next one after every line
                // counted so far.
                true => ArtifactError::at_line(
                    self.source_name,
                    self.next_line,
                    ErrorKind::Limit,
                    too_long(self.max_record),
                ),
                false => ArtifactError::io(self.source_name, &error),
            }
        })?;
        let text = window.text();
        let window_start = text.as_ptr() as usize;
        let mut chunks = Vec::new();
        let first_line = self.next_line;
        for chunk in split_chunks(text, self.chunk_bytes) {
            let (lines, found) = scan_chunk(chunk, &mut self.interner);
            let mut definitions = Vec::with_capacity(found.len());
            for (relative, outcome) in found {
                let line = self.next_line + relative;
                let outcome = outcome.and_then(|(id, context)| {
                    if self.registry.define(&id, &context, line)? {
                        for unseen in &mut self.unseen {
                            unseen.push((id.clone(), std::sync::Arc::clone(&context), line));
                        }
                    }
                    Ok(())
                });
                definitions.push((line, outcome));
            }
            let end = chunk.as_ptr() as usize + chunk.len() - window_start;
            chunks.push(ChunkPlan { end, first_line: self.next_line, lines, definitions });
            self.next_line += lines;
        }
        let defined = std::mem::take(&mut self.unseen[decoder]);
        Ok(Planned { window, last, chunks, lines: self.next_line - first_line, defined })
    }
}

/// Decodes planned windows, one at a time, on one thread.
#[derive(Clone)]
struct WindowDecoder<'a> {
    source_name: &'a str,
    /// The definitions of every window sent to this decoder so far, and of
    /// the windows between.
    registry: Registry,
    interner: Interner,
    paths: Paths,
}

impl WindowDecoder<'_> {
    /// Decodes a planned window's chunks against the registry, one sink per
    /// chunk, and hands the spent window to `recycle`.
    fn decode<L: ChunkSink>(
        &mut self,
        planned: Planned,
        start: &impl Fn() -> L,
        recycle: impl FnOnce(Window),
    ) -> Result<Decoded<L::Output>, ArtifactError> {
        for (id, context, line) in &planned.defined {
            // The planner's registry took it as new, and this copy holds
            // the same definitions as that one did then.
            let _ = self.registry.define(id, context, *line);
        }
        let text = planned.window.text();
        let mut outputs = Vec::with_capacity(planned.chunks.len());
        let mut from = 0;
        for chunk in &planned.chunks {
            let mut sink = start();
            let counts = decode_chunk(
                &text[from..chunk.end],
                (chunk.first_line, chunk.lines),
                &chunk.definitions,
                &self.registry,
                &mut self.interner,
                self.paths,
                &mut sink,
            )
            .map_err(|(line, (kind, reason))| ArtifactError::at_line(self.source_name, line, kind, reason))?;
            outputs.push((sink.finish(&counts), counts));
            from = chunk.end;
        }
        let bytes = planned.window.filled as u64;
        recycle(planned.window);
        Ok(Decoded { outputs, bytes, lines: planned.lines, last: planned.last })
    }
}

/// Cuts a window into chunks of about `size` bytes, each ending just after a
/// `\n` (so no `\r\n` is split), the last taking the rest.
fn split_chunks(window: &[u8], size: usize) -> Vec<&[u8]> {
    let mut chunks = Vec::with_capacity(window.len() / size + 1);
    let mut rest = window;
    while !rest.is_empty() {
        let cut = if rest.len() <= size {
            rest.len()
        } else {
            memchr::memchr(b'\n', &rest[size..]).map_or(rest.len(), |at| size + at + 1)
        };
        let (chunk, tail) = rest.split_at(cut);
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

fn scan_chunk(chunk: &[u8], interner: &mut Interner) -> (u64, Vec<(u64, DefinitionOutcome)>) {
    let literal = context_finder();
    let mut definitions = Vec::new();
    let mut count = 0;
    // Most chunks hold no candidate at all: then only count their lines,
    // by their `\n`s alone where no `\r` may end one.
    let candidates = may_define(chunk, &literal);
    if !candidates && memchr::memchr(b'\r', chunk).is_none() {
        let ends = memchr::memchr_iter(b'\n', chunk).count() as u64;
        let unterminated = chunk.last().is_some_and(|&byte| byte != b'\n');
        return (ends + u64::from(unterminated), definitions);
    }
    for (line, _) in Lines::new(chunk) {
        if candidates
            && may_define(line, &literal)
            && let Some(outcome) = definition_of(line, interner)
        {
            definitions.push((count, outcome));
        }
        count += 1;
    }
    (count, definitions)
}

/// Which decoder paths a read uses, and its record limit.
#[derive(Debug, Clone, Copy)]
struct Paths {
    fast: bool,
    views: bool,
    max_record: usize,
}

/// Decodes the `lines` lines of `chunk`, the first of which is line `start`,
/// into `sink`.
fn decode_chunk(
    chunk: &[u8],
    (start, lines): (u64, u64),
    definitions: &[(u64, Result<(), String>)],
    registry: &Registry,
    interner: &mut Interner,
    paths: Paths,
    sink: &mut impl ChunkSink,
) -> Result<BatchCounts, (u64, LineError)> {
    sink.reserve(usize::try_from(lines).unwrap_or(0));
    let mut counts =
        BatchCounts { records: 0, compact_records: 0, definitions: 0, decoded: DecodeStats::default() };
    let mut scan_state = crate::view_rows::ScanState::default();
    let mut definitions = definitions.iter().peekable();
    for (line_number, (line, terminated)) in (start..).zip(Lines::new(chunk)) {
        if line.len() > paths.max_record {
            return Err((line_number, (ErrorKind::Limit, too_long(paths.max_record))));
        }
        if let Some((_, outcome)) = definitions.next_if(|(at, _)| *at == line_number) {
            match outcome {
                Ok(()) => {
                    counts.definitions += 1;
                    continue;
                }
                Err(reason) => return Err((line_number, (ErrorKind::Invalid, reason.clone()))),
            }
        }
        if paths.views
            && let Some((event, compact)) =
                crate::view_rows::scan(line, line_number, registry, interner, &mut scan_state)
        {
            sink.event(line_number, &event);
            counts.records += 1;
            counts.compact_records += u64::from(compact);
            counts.decoded.count(DecodePath::Fast);
            continue;
        }
        match decode_row(line, terminated, line_number, registry, interner, paths.fast) {
            Ok(None) => {}
            Ok(Some(Row::Record(record, compact, path))) => {
                sink.record(line_number, record);
                counts.records += 1;
                counts.compact_records += u64::from(compact);
                counts.decoded.count(path);
            }
            Ok(Some(Row::Definition(..))) => {
                // The scan finds every definition; see `may_define`.
                return Err((line_number, (ErrorKind::Invalid, "definition missed by the scan".to_owned())));
            }
            Err(error) => return Err((line_number, error)),
        }
    }
    Ok(counts)
}
