//! The record limit: a line longer than `max_record_bytes` is an
//! `ErrorKind::Limit` error at its line, whichever reader meets it and
//! wherever the line falls against the reader's windows; endless input
//! without line ends stops at the limit instead of taking the memory.

use std::io::Read;

use tally_artifact::{ArtifactError, ArtifactReader, ErrorKind, ReadOptions, read_batches};

const ROW: &str = r#"{"event_type": "infer.session", "schema_version": 1}"#;

fn artifact(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// A valid v1 row padded to `length` bytes with spaces (JSON allows them).
fn padded(length: usize) -> String {
    format!("{ROW}{}", " ".repeat(length.saturating_sub(ROW.len())))
}

fn batches(text: &[u8], window_bytes: usize, limit: usize) -> Result<u64, ArtifactError> {
    let options = ReadOptions {
        window_bytes,
        chunk_bytes: window_bytes,
        max_record_bytes: limit,
        ..ReadOptions::default()
    };
    let mut records = 0;
    read_batches(text, "t.jsonl", &options, |batch| {
        records += batch.records.len() as u64;
        Ok(())
    })?;
    Ok(records)
}

fn sequential(text: &[u8], limit: usize) -> Result<u64, ArtifactError> {
    let mut records = 0;
    for item in ArtifactReader::new(text, "t.jsonl").with_max_record_bytes(limit) {
        item?;
        records += 1;
    }
    Ok(records)
}

#[test]
fn a_line_past_the_limit_is_rejected_at_its_line_by_every_reader() {
    let limit = 200;
    let text = artifact(&[padded(100), padded(200), padded(201), padded(50)]);
    for window in [16, 64, 150, 250, 1 << 20] {
        let error = batches(text.as_bytes(), window, limit).expect_err("line 3 is too long");
        assert_eq!((error.kind(), error.line()), (ErrorKind::Limit, Some(3)), "window {window}: {error}");
        assert!(error.reason().contains("record limit of 200 bytes"), "{error}");
    }
    let error = sequential(text.as_bytes(), limit).expect_err("line 3 is too long");
    assert_eq!((error.kind(), error.line()), (ErrorKind::Limit, Some(3)), "{error}");
    // A line exactly at the limit passes.
    let fits = artifact(&[padded(200), padded(200)]);
    assert_eq!(batches(fits.as_bytes(), 64, limit).expect("fits"), 2);
    assert_eq!(sequential(fits.as_bytes(), limit).expect("fits"), 2);
}

#[test]
fn a_last_line_without_terminator_past_the_limit_is_rejected() {
    let text = format!("{}\n{}", padded(40), padded(500));
    let error = batches(text.as_bytes(), 1 << 20, 300).expect_err("too long");
    assert_eq!((error.kind(), error.line()), (ErrorKind::Limit, Some(2)));
    let error = sequential(text.as_bytes(), 300).expect_err("too long");
    assert_eq!((error.kind(), error.line()), (ErrorKind::Limit, Some(2)));
}

#[test]
fn lone_carriage_returns_still_end_lines_near_the_limit() {
    // stormlog reads a bare `\r` as a line end: a file of such lines longer
    // than the limit in all is fine, line by line.
    let text: String = (0..20).map(|_| format!("{}\r", padded(90))).collect();
    assert_eq!(sequential(text.as_bytes(), 100).expect("every line fits"), 20);
    assert_eq!(batches(text.as_bytes(), 64, 100).expect("every line fits"), 20);
}

/// Zeros for ever, counting what was read: `/dev/zero` in a test.
struct Endless {
    read: u64,
}

impl Read for Endless {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        buffer.fill(0);
        self.read += buffer.len() as u64;
        // A safety net for the test itself: a reader without a bound would
        // otherwise run until the machine's memory is gone.
        if self.read > 1 << 30 {
            return Err(std::io::Error::other("the test's endless input read 1 GiB: no bound"));
        }
        Ok(buffer.len())
    }
}

#[test]
fn endless_input_without_line_ends_stops_at_the_limit() {
    let limit = 4 << 20;
    let options = ReadOptions { window_bytes: 1 << 16, max_record_bytes: limit, ..ReadOptions::default() };
    let error =
        read_batches(Endless { read: 0 }, "/dev/zero", &options, |_| Ok(())).expect_err("no line end");
    assert_eq!((error.kind(), error.line()), (ErrorKind::Limit, Some(1)), "{error}");
    assert_eq!(
        error.to_string(),
        format!("/dev/zero: line 1: the line is longer than the record limit of {limit} bytes")
    );
    let mut endless = Endless { read: 0 };
    let error = ArtifactReader::new(std::io::BufReader::new(&mut endless), "/dev/zero")
        .with_max_record_bytes(limit)
        .next()
        .expect("an item")
        .expect_err("no line end");
    assert_eq!((error.kind(), error.line()), (ErrorKind::Limit, Some(1)), "{error}");
    // It read about the limit, not the gigabyte the safety net allows.
    assert!(endless.read < 3 * limit as u64, "read {} bytes for a limit of {limit}", endless.read);
}

#[test]
fn one_huge_line_is_read_whole_below_the_limit() {
    // 8 MB on one line through 4 KiB windows: the window grows with the
    // line, so this is a handful of copies, not two thousand.
    let text = artifact(&[padded(8 << 20), padded(10)]);
    assert_eq!(batches(text.as_bytes(), 4096, 16 << 20).expect("fits the limit"), 2);
}
