//! What reading an artifact costs at the least, measured on one file so a
//! benchmark can print how far `tally account` is from being parsing-bound:
//! reading it (from the page cache, `read` into one buffer as large as the
//! file, and `read` through one reused window as `tally account` reads),
//! finding its line ends (memchr), parsing every line as JSON into nothing
//! (`serde_json::IgnoredAny`) on one thread and on every core.
//!
//! The two reads differ by the first touch of every page of the large
//! buffer, which on a virtual machine can cost more than the copy itself;
//! the window's read is the floor under a streaming reader.
//!
//! ```text
//! cargo run --release -p tally-tests --example parse_limit -- FILE [--repeat N]
//! ```
//!
//! Prints one JSON object: the file's bytes and lines, and for each phase
//! the best of `--repeat` runs (default 3) in seconds.

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use serde::de::IgnoredAny;

/// The window `tally account` reads through (tally-ingest's
/// `WINDOW_BYTES`).
const WINDOW_BYTES: usize = 1 << 19;

fn best_of<T>(repeat: usize, mut run: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let started = Instant::now();
        let value = run();
        best = best.min(started.elapsed().as_secs_f64());
        last = Some(value);
    }
    // repeat.max(1) runs the closure at least once.
    (best, last.expect("at least one run"))
}

/// Every line parsed into nothing; the count of lines that are not JSON.
fn parse_lines(text: &[u8]) -> usize {
    text.split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .filter(|line| serde_json::from_slice::<IgnoredAny>(line).is_err())
        .count()
}

/// `text` cut into about `parts` pieces at line ends.
fn pieces(text: &[u8], parts: usize) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = text;
    let size = text.len() / parts.max(1) + 1;
    while !rest.is_empty() {
        let cut = if rest.len() <= size {
            rest.len()
        } else {
            memchr::memchr(b'\n', &rest[size..]).map_or(rest.len(), |at| size + at + 1)
        };
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let mut path = None;
    let mut repeat = 3usize;
    while let Some(arg) = args.next() {
        if arg == "--repeat" {
            repeat = args.next().and_then(|n| n.to_str()?.parse().ok()).unwrap_or(3);
        } else {
            path = Some(PathBuf::from(arg));
        }
    }
    let Some(path) = path else { anyhow::bail!("usage: parse_limit FILE [--repeat N]") };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);

    let (read_s, text) = best_of(repeat, || -> std::io::Result<Vec<u8>> {
        let mut file = std::fs::File::open(&path)?;
        let mut text = Vec::with_capacity(file.metadata()?.len() as usize + 1);
        file.read_to_end(&mut text)?;
        Ok(text)
    });
    let text = text?;
    let (window_s, window_bytes) = best_of(repeat, || -> std::io::Result<usize> {
        let mut file = std::fs::File::open(&path)?;
        let mut window = vec![0u8; WINDOW_BYTES];
        let mut bytes = 0;
        loop {
            match file.read(&mut window)? {
                0 => return Ok(bytes),
                read => bytes += read,
            }
        }
    });
    anyhow::ensure!(window_bytes? == text.len(), "the file changed while it was read");
    let (lines_s, lines) = best_of(repeat, || memchr::memchr_iter(b'\n', &text).count());
    let (parse_one_s, invalid) = best_of(repeat, || parse_lines(&text));
    let split = pieces(&text, cores * 8);
    let (parse_all_s, _) =
        best_of(repeat, || split.par_iter().map(|piece| parse_lines(piece)).sum::<usize>());
    let report = serde_json::json!({
        "bytes": text.len(),
        "lines": lines,
        "cores": cores,
        "invalid_lines": invalid,
        "read_seconds": read_s,
        "read_window_seconds": window_s,
        "line_ends_seconds": lines_s,
        "json_ignored_one_core_seconds": parse_one_s,
        "json_ignored_all_cores_seconds": parse_all_s,
    });
    println!("{report}");
    Ok(())
}
