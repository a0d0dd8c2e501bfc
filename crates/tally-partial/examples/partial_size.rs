//! Measures partials of traces, one trace per partial: the partial's size
//! as a share of the trace's uncompressed size, and the time to encode and
//! decode it per megabyte of trace, beside the time to read the trace.
//!
//! ```text
//! cargo run --release -p tally-partial --example partial_size -- TRACE...
//! ```
//!
//! `encode` writes the partial's decoded chunks again (copying, columns,
//! postcard, zlib); `decode` reads the partial back, checking every frame;
//! `read` resolves the trace as `tally account` does. With `PARTIAL_OUT`
//! set to a directory, each partial is written there.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tally_partial::{Item, Partial, PartialReader, PartialWriter, ReadLimits};

/// The trace's bytes as read: a gzip trace's decompressed size.
fn uncompressed(path: &PathBuf) -> u64 {
    let bytes = std::fs::read(path).expect("the trace reads");
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut decoder = flate2::read::MultiGzDecoder::new(&bytes[..]);
        let mut sink = Vec::new();
        decoder.read_to_end(&mut sink).expect("the gzip decompresses");
        sink.len() as u64
    } else {
        bytes.len() as u64
    }
}

/// The least of a few runs of `run`.
fn fastest(mut run: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    println!(
        "{:<44} {:>10} {:>8} {:>7} {:>6} {:>9} {:>9} {:>9}",
        "trace", "bytes", "partial", "share", "events", "read ms/MB", "enc ms/MB", "dec ms/MB"
    );
    let (mut all_trace, mut all_partial) = (0u64, 0u64);
    for path in &paths {
        let size = uncompressed(path);
        let partial = Partial::of_paths(std::slice::from_ref(path)).expect("the partial is made");
        let bytes = partial.as_bytes().to_vec();
        if let Some(directory) = std::env::var_os("PARTIAL_OUT") {
            let name = path.file_name().map_or_else(Default::default, |name| name.to_os_string());
            std::fs::write(PathBuf::from(directory).join(name).with_extension("part"), &bytes)
                .expect("the partial is written");
        }
        let mut batches = Vec::new();
        let mut reader = PartialReader::new(&bytes[..], "partial", ReadLimits::default()).expect("a partial");
        while let Item::Batch(batch) = reader.next_item().expect("a frame") {
            batches.push(batch);
        }
        let read = fastest(|| {
            tally_ingest::resolve_paths(std::slice::from_ref(path)).expect("the trace resolves");
        });
        let encoded = fastest(|| {
            let mut writer = PartialWriter::new(Vec::new()).expect("into memory");
            for batch in &batches {
                writer.append(batch, |record| record).expect("into memory");
            }
            writer.finish(partial.sources().to_vec()).expect("into memory");
        });
        let decoded = fastest(|| {
            let back = Partial::from_bytes(&bytes, "back").expect("decodes");
            assert_eq!(back.events(), partial.events());
        });
        let megabytes = size as f64 / 1e6;
        let per = |time: Duration| time.as_secs_f64() * 1e3 / megabytes;
        println!(
            "{:<44} {:>10} {:>8} {:>6.2}% {:>6} {:>9.2} {:>9.3} {:>9.3}",
            path.file_name().map_or_else(String::new, |name| name.to_string_lossy().into_owned()),
            size,
            bytes.len(),
            100.0 * bytes.len() as f64 / size as f64,
            partial.events(),
            per(read),
            per(encoded),
            per(decoded),
        );
        all_trace += size;
        all_partial += bytes.len() as u64;
    }
    println!(
        "all: {all_partial} of {all_trace} bytes, {:.2}%",
        100.0 * all_partial as f64 / all_trace as f64
    );
}
