//! Where tally's own answer to a generated case spends its time:
//! `tally conform`'s runner over the cases of seed 1, as the conform bench
//! runs them, with an implementation under test that times, on each case's
//! files, the phases of the account answer (opening the inputs, reading and
//! resolving them, the report) and each way of reading one file alone, then
//! answers as tally does. tally's whole answer is the runner's own timing,
//! the figure the bench prints.
//!
//! ```text
//! cargo run --release -p tally-tests --example answer_phases -- [CASES]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tally_artifact::{ArtifactReader, ReadOptions, RecordDecoder, decompressed, read_artifact, read_batches};
use tally_conformance::{Inputs, Kind, Options, check, tally_answer};
use tally_gpu_time::AccountingReport;
use tally_ingest::{RunOptions, Unwatched, open_inputs, resolve_inputs};

/// Time spent, summed over the cases or files.
#[derive(Debug, Default)]
struct Timings {
    files: u64,
    open: Duration,
    resolve: Duration,
    report: Duration,
    /// With `resolve_inputs`' window and chunk sizes.
    read_batches: Duration,
    read_artifact: Duration,
    artifact_reader: Duration,
    /// The file read whole into memory, then decoded line by line.
    whole: Duration,
}

impl Timings {
    fn time(&mut self, inputs: &Inputs) {
        let options = RunOptions {
            max_record_bytes: tally_artifact::DEFAULT_MAX_RECORD_BYTES,
            import: None,
            keep_labels: false,
            threads: 0,
            inline_small_inputs: true,
        };
        let started = Instant::now();
        if let Ok(opened) = open_inputs(&inputs.inputs, None) {
            let opened_at = Instant::now();
            let run = resolve_inputs(opened, &options, &mut Unwatched);
            let resolved_at = Instant::now();
            if let Ok(run) = run {
                std::hint::black_box(serde_json::to_value(AccountingReport::from_resolved(&run, false)).ok());
            }
            self.open += opened_at - started;
            self.resolve += resolved_at - opened_at;
            self.report += resolved_at.elapsed();
        }
        for path in &inputs.inputs {
            self.read_one(path);
        }
    }

    fn read_one(&mut self, path: &PathBuf) {
        self.files += 1;
        let ingest = ReadOptions { window_bytes: 1 << 19, chunk_bytes: 1 << 16, ..ReadOptions::default() };
        let started = Instant::now();
        if let Ok(file) = std::fs::File::open(path) {
            let _ = read_batches(file, "x", &ingest, |batch| {
                std::hint::black_box(batch);
                Ok(())
            });
        }
        let batches_at = Instant::now();
        std::hint::black_box(read_artifact(path).is_ok());
        let artifact_at = Instant::now();
        if let Ok(reader) = ArtifactReader::open(path) {
            reader.for_each(|item| {
                std::hint::black_box(item.is_ok());
            });
        }
        let reader_at = Instant::now();
        let mut decoder = RecordDecoder::new("x");
        if let Ok(file) = std::fs::File::open(path)
            && let Ok(mut stream) = decompressed(file)
        {
            let mut text = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stream, &mut text);
            for (number, line) in (1..).zip(text.split_inclusive(|byte| *byte == b'\n')) {
                std::hint::black_box(decoder.decode_line(line, number).is_ok());
            }
        }
        self.read_batches += batches_at - started;
        self.read_artifact += artifact_at - batches_at;
        self.artifact_reader += reader_at - artifact_at;
        self.whole += reader_at.elapsed();
    }
}

fn milliseconds(time: Duration, count: u64) -> f64 {
    time.as_secs_f64() * 1e3 / count.max(1) as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cases: u32 = std::env::args().nth(1).map_or(Ok(300), |arg| arg.parse())?;
    for kind in [Kind::Account, Kind::Shares, Kind::Align] {
        let mut timings = Timings::default();
        let mut probe = |inputs: &Inputs| {
            timings.time(inputs);
            tally_answer(inputs)
        };
        let options = Options { kinds: vec![kind], cases, seed: 1, ..Options::default() };
        let report = check(&mut probe, &options)?;
        let answer = Duration::from_secs_f64(report.kinds.iter().map(|kind| kind.tally_seconds).sum());
        let cases = u64::from(cases);
        println!(
            "{kind}: tally's answer {:.3} ms a case; open {:.3}, read and resolve {:.3}, report {:.3} ms a case",
            milliseconds(answer, cases),
            milliseconds(timings.open, cases),
            milliseconds(timings.resolve, cases),
            milliseconds(timings.report, cases),
        );
        println!(
            "  {} files, each read alone: read_batches (ingest's windows) {:.3} ms, read_artifact {:.3} ms, \
             ArtifactReader {:.3} ms, whole into memory and decoded line by line {:.3} ms",
            timings.files,
            milliseconds(timings.read_batches, timings.files),
            milliseconds(timings.read_artifact, timings.files),
            milliseconds(timings.artifact_reader, timings.files),
            milliseconds(timings.whole, timings.files),
        );
    }
    let spawns = 1000;
    let started = Instant::now();
    for _ in 0..spawns {
        std::thread::scope(|scope| {
            scope.spawn(|| std::hint::black_box(1));
        });
    }
    println!("a scoped thread spawned and joined: {:.3} ms", milliseconds(started.elapsed(), spawns));
    Ok(())
}
