//! One plain trace read on two threads: the second half of `traceEvents`
//! is read beside the first.
//!
//! A real trace is almost all `traceEvents`, and one thread scans it at
//! about half the speed serde_json parses JSON into nothing, while the
//! thread that resolves what the import builds waits for the first record.
//! So a second thread starts at a guess: the first `{` after a `,` past the
//! middle of the file. It reads elements from there to the end of their
//! array into rows of its own. The first thread reads from the start as
//! always, but no further than the guess; only when its own parse reaches
//! the guess where an element of `traceEvents` starts is the guess
//! confirmed, and the second thread's rows are appended to its own (names
//! re-interned, event indexes shifted) and reading goes on after the
//! array. Whenever the guess was wrong (it was inside a string, or past the
//! array) or the second thread failed (invalid JSON, an event too large, an
//! I/O error), its work is dropped and the first thread reads on from the
//! guess itself: errors, their offsets and every count are exactly those of
//! one reading, because everything kept was either read by the first thread
//! or read from an element start it confirmed, by the same code.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{KinetoError, KinetoHeader, Resume, read_events, read_stream};
use crate::collect::Collected;
use crate::json_stream::{CHUNK, JsonStream, StreamError};
use crate::parallel::Stoppable;
use crate::ranges::SpanMatcher;

/// Plain traces smaller than this are read on one thread: a second one
/// would not pay for itself.
pub(crate) const SPLIT_MIN_BYTES: u64 = 16 << 20;

/// How far past the middle the guess is looked for.
const GUESS_WINDOW: usize = 1 << 20;

/// Reads the plain trace that `open` opens (each call a new handle at its
/// start; `size` bytes long) into `collected` on two threads, with the
/// result of [`super::read_kineto`]; both threads read [`CHUNK`] bytes at a
/// time.
pub(crate) fn read_kineto_split<R, F>(
    open: &F,
    size: u64,
    collected: &mut Collected,
    spans: &SpanMatcher,
    max_event_bytes: usize,
) -> Result<KinetoHeader, KinetoError>
where
    R: Read + Seek + Send,
    F: Fn() -> io::Result<R> + Sync,
{
    read_split_at(open, size / 2, collected, spans, max_event_bytes, CHUNK)
}

/// [`read_kineto_split`] with the guess looked for from `from`, reading
/// `chunk` bytes at a time.
fn read_split_at<R, F>(
    open: &F,
    from: u64,
    collected: &mut Collected,
    spans: &SpanMatcher,
    max_event_bytes: usize,
    chunk: usize,
) -> Result<KinetoHeader, KinetoError>
where
    R: Read + Seek + Send,
    F: Fn() -> io::Result<R> + Sync,
{
    let first = open().map_err(StreamError::Io)?;
    let mut stream = JsonStream::with_chunk(first, chunk).with_max_value(max_event_bytes);
    let Some(guess) = find_guess(open, from).map_err(StreamError::Io)? else {
        return read_stream(stream, collected, spans, &mut |_, _, _| Ok(None));
    };
    stream.pause_at(guess);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut later = Some(scope.spawn(|| read_rest(open, guess, spans, max_event_bytes, chunk, &stop)));
        let mut resume = |stream: &mut JsonStream<R>, collected: &mut Collected, before: u64| {
            let Some(later) = later.take() else {
                return Ok(None);
            };
            let rest = match later.join() {
                Ok(rest) => rest,
                // A panic on the second thread is a bug; it stays one.
                Err(panic) => std::panic::resume_unwind(panic),
            };
            let Some(rest) = rest else {
                return Ok(None);
            };
            collected.absorb(rest.collected, before);
            stream.resume_at(rest.end)?;
            Ok(Some(rest.events))
        };
        let resume: &mut Resume<'_, R> = &mut resume;
        let header = read_stream(stream, collected, spans, resume);
        // The second thread, if the guess was never reached, stops at its
        // next read.
        stop.store(true, Ordering::Relaxed);
        header
    })
}

/// The first `{` after a `,` (whitespace between) within
/// [`GUESS_WINDOW`] bytes from `from`, followed by whitespace and a `"`:
/// where an event of a Kineto trace most likely starts.
fn find_guess<R: Read + Seek, F: Fn() -> io::Result<R>>(open: &F, from: u64) -> io::Result<Option<u64>> {
    let mut source = open()?;
    source.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity(GUESS_WINDOW);
    source.take(GUESS_WINDOW as u64).read_to_end(&mut bytes)?;
    let blank = |byte: &u8| matches!(byte, b' ' | b'\n' | b'\r' | b'\t');
    let mut at = 0;
    while let Some(comma) = bytes[at..].iter().position(|&byte| byte == b',') {
        let after = at + comma + 1;
        let brace = after + bytes[after..].iter().take_while(|byte| blank(byte)).count();
        if bytes.get(brace) == Some(&b'{') {
            let key = brace + 1 + bytes[brace + 1..].iter().take_while(|byte| blank(byte)).count();
            if bytes.get(key) == Some(&b'"') {
                return Ok(Some(from + brace as u64));
            }
        }
        at = after;
    }
    Ok(None)
}

/// What the second thread read: the events from the guess to the end of
/// their array, how many, and the offset just after the array's `]`.
struct Rest {
    collected: Collected,
    events: u64,
    end: u64,
}

/// Reads the elements from `guess` through the `]` that ends their array;
/// `None` when that is not what the bytes there are (or reading failed):
/// the first thread then reads them itself and says what was wrong.
fn read_rest<R: Read + Seek, F: Fn() -> io::Result<R>>(
    open: &F,
    guess: u64,
    spans: &SpanMatcher,
    max_event_bytes: usize,
    chunk: usize,
    stop: &AtomicBool,
) -> Option<Rest> {
    let source = Stoppable { inner: open().ok()?, stop };
    let mut stream = JsonStream::with_chunk(source, chunk).with_max_value(max_event_bytes);
    stream.resume_at(guess).ok()?;
    let mut collected = Collected::default();
    let events = read_events(&mut stream, &mut collected, spans, &mut |_, _, _| Ok(None)).ok()?;
    Some(Rest { collected, events, end: stream.offset() })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use std::io::Cursor;

    use super::*;

    /// Everything a reading keeps and says, for comparing two readings.
    fn reading(result: Result<KinetoHeader, KinetoError>, collected: &Collected) -> String {
        let outcome = match result {
            Ok(header) => format!("ok {:?} {:?} {}", header.base_ns, header.values, header.saw_events),
            Err(KinetoError::Stream(StreamError::Io(error))) => format!("io {error}"),
            Err(error) => format!("{error:?}"),
        };
        let gpu: Vec<_> = collected
            .gpu
            .iter()
            .map(|row| (row.start, row.end, row.correlation, row.stream, row.device, row.name, row.kind))
            .collect();
        let runtime: Vec<_> =
            collected.runtime.iter().map(|row| (row.start, row.end, row.pid, row.tid, row.name)).collect();
        let spans: Vec<_> =
            collected.spans.iter().map(|row| (row.start, row.end, row.pid, row.tid, row.name)).collect();
        let names: Vec<_> = (0..).map_while(|id| collected.names.get(id)).collect();
        let examples: Vec<String> = collected.examples.iter().map(ToString::to_string).collect();
        format!(
            "{outcome}\n{gpu:?}\n{runtime:?}\n{spans:?}\n{names:?}\n{:?} {:?} {examples:?} {} {} {}",
            collected.skipped,
            collected.ignored,
            collected.events_read,
            collected.rounded_timestamps,
            collected.sub_microsecond,
        )
    }

    fn serial(text: &[u8], chunk: usize) -> String {
        let mut collected = Collected::default();
        let matcher = SpanMatcher::new(crate::ranges::default_pattern());
        let stream = JsonStream::with_chunk(text, chunk).with_max_value(4096);
        let result = read_stream(stream, &mut collected, &matcher, &mut |_, _, _| Ok(None));
        reading(result, &collected)
    }

    fn split(text: &[u8], from: u64, chunk: usize) -> String {
        let mut collected = Collected::default();
        let matcher = SpanMatcher::new(crate::ranges::default_pattern());
        let open = || Ok(Cursor::new(text));
        let result = read_split_at(&open, from, &mut collected, &matcher, 4096, chunk);
        reading(result, &collected)
    }

    /// A trace of `count` events of every kind the reader keeps or counts,
    /// some of them malformed, with strings that hold what a guess looks
    /// for, and header values before and after the events.
    fn trace(count: u64, seed: u64, tail: &str) -> String {
        let mut events = Vec::new();
        for index in 0..count {
            let ts = 1_682_725_898_236_567u64 + index * 13 + seed;
            let event = match (index + seed) % 9 {
                0 => format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {ts}.5, "dur": 3, "args": {{"device": {}, "stream": 7, "correlation": {index}}}}}"#,
                    index % 3,
                    index % 2
                ),
                1 => format!(
                    r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": "p{}", "tid": {}, "ts": {ts}, "dur": 2, "args": {{"correlation": {index}}}}}"#,
                    index % 2,
                    index % 4
                ),
                2 => format!(
                    r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{index}", "pid": 1, "tid": 1, "ts": {ts}, "dur": 100}}"#
                ),
                3 => format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "no dur {index}", "pid": 0, "tid": 7, "ts": {ts}}}"#
                ),
                4 => format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": "a, {{\"b\": 1}}, {{ \"c\"", "pid": 1, "tid": 2, "ts": {ts}, "dur": 1}}"#
                ),
                5 => "7".to_owned(),
                6 => {
                    format!(r#"{{"ph": "f", "cat": "ac2g", "id": {index}, "pid": 1, "tid": 2, "ts": {ts}}}"#)
                }
                7 => format!(
                    r#"{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 9, "ts": {ts}, "dur": -1}}"#
                ),
                _ => format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": "op{index}", "pid": 1, "tid": 2, "ts": {ts}, "dur": 4, "args": {{"x": [1, {{"y": ", {{ \"z"}}]}}}}"#
                ),
            };
            events.push(event);
        }
        format!(
            "{{\"schemaVersion\": 1, \"traceEvents\": [\n  {}\n  ], \"baseTimeNanoseconds\": {seed}{tail}}}",
            events.join(",\n  ")
        )
    }

    #[test]
    fn a_guess_at_an_event_is_confirmed_and_merged() {
        let text = trace(400, 3, "");
        let middle = text.len() as u64 / 2;
        let guess = find_guess(&|| Ok(Cursor::new(text.as_bytes())), middle).unwrap().unwrap();
        let mut stream = JsonStream::with_chunk(text.as_bytes(), 64);
        stream.pause_at(guess);
        let mut reached = None;
        let matcher = SpanMatcher::new(crate::ranges::default_pattern());
        let mut collected = Collected::default();
        read_stream(stream, &mut collected, &matcher, &mut |_, _, index| {
            reached = Some(index);
            Ok(None)
        })
        .unwrap();
        assert!(reached.is_some_and(|index| index > 100), "the first thread reached the guess at an event");
        assert_eq!(split(text.as_bytes(), middle, 1 << 12), serial(text.as_bytes(), 1 << 12));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Wherever the guess is looked for (inside strings, in the header,
        /// past the events), and however the buffers are cut, a split
        /// reading is one reading: rows, names, counts, messages, errors.
        #[test]
        fn any_guess_reads_as_one_reading(
            count in 0u64..40,
            seed in 0u64..1000,
            from_permille in 0u64..1001,
            chunk in 1usize..300,
            tail in proptest::sample::select(vec!["", ", \"traceName\": \"x, {\\\"y\\\"\"", ", \"traceEvents\": [{\"ph\": \"X\"}]", ", \"x\": [1, {\"a\": 2}]", "x", ", \"big\": \"", ", \"late\": [1,  {\"q\": 1}"]),
        ) {
            let text = trace(count, seed, tail);
            let from = text.len() as u64 * from_permille / 1000;
            proptest::prop_assert_eq!(split(text.as_bytes(), from, chunk), serial(text.as_bytes(), chunk));
        }

        /// Cut anywhere (a truncated file), the split reading fails as the
        /// serial one does, at the same offset, with the same rows before.
        #[test]
        fn truncated_traces_fail_alike(count in 1u64..30, seed in 0u64..1000, cut_permille in 0u64..1000, from_permille in 0u64..1001) {
            let text = trace(count, seed, "");
            let cut = &text.as_bytes()[..text.len() * cut_permille as usize / 1000];
            let from = cut.len() as u64 * from_permille / 1000;
            proptest::prop_assert_eq!(split(cut, from, 128), serial(cut, 128));
        }
    }
}
