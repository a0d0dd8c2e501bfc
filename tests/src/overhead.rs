//! The paired-overhead method: what [`ResourceProfiler::measure_call`]
//! adds to a real call, measured on a machine that other work shares.
//!
//! A call is run bare and inside `measure_call` back to back, many times.
//! Load from other processes comes and goes over milliseconds, so it hits
//! both calls of a pair alike; the median of the per-pair differences
//! cancels it where comparing two separate medians (or totals) would not.
//! Pairs alternate which call runs first, so a drift within a pair favours
//! neither. The overhead is that median difference over the median bare
//! call ([`PairedSummary::relative_overhead`]); running the same pairs with
//! a disabled profiler gives the noise floor of the comparison.
//!
//! The `onnx_overhead` and `torch_overhead` examples beside it (behind
//! `cargo xtask bench onnx` and `cargo xtask bench torch`) use it, after
//! [`calibrate_batch`] has sized their model's batch to a target call time:
//! both take [`PairedOptions`], time the same MLP shape ([`MLP_WIDTH`],
//! [`MLP_LAYERS`]) in [`paired_rounds`] and measure [`empty_call_ns`].
//!
//! ```
//! use tally_tests::overhead::{PairedTimings, time_ns};
//! let mut timings = PairedTimings::default();
//! for _ in 0..100 {
//!     timings.pair(|measured| -> Result<u64, std::convert::Infallible> {
//!         let work = if measured { 2_000 } else { 1_000 };
//!         Ok(time_ns(|| (0..work).map(std::hint::black_box).sum::<u64>()).1)
//!     })?;
//! }
//! let summary = timings.summary().expect("100 pairs were recorded");
//! assert_eq!(summary.pairs, 100);
//! assert!(summary.bare_total_ns > 0);
//! # Ok::<(), std::convert::Infallible>(())
//! ```
//!
//! [`ResourceProfiler::measure_call`]: tally_profile::ResourceProfiler::measure_call

use std::time::Instant;

use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};

/// The width of the MLP the adapter benchmarks time: each layer a
/// `MLP_WIDTH` square matrix product, a bias and a ReLU.
pub const MLP_WIDTH: u64 = 512;
/// The layers of that MLP.
pub const MLP_LAYERS: usize = 4;

/// The options of the adapter benchmarks:
/// `--calls N --rounds N --target-us N --threads N --disabled`.
#[derive(Debug, Clone)]
pub struct PairedOptions {
    /// Pairs per round.
    pub calls: usize,
    /// Rounds, each with a profiler of its own.
    pub rounds: usize,
    /// The call time the batch is calibrated to.
    pub target_ns: u64,
    /// Intra-op threads of the framework.
    pub threads: u64,
    /// Measure with a disabled profiler: the noise floor of the comparison.
    pub disabled: bool,
}

impl PairedOptions {
    /// Parses the program's arguments. A flag these options do not name
    /// goes with its value to `other`, which returns whether it took it;
    /// `--threads` above `max_threads` is too many.
    pub fn parse(max_threads: u64, mut other: impl FnMut(&str, &str) -> bool) -> Result<Self, String> {
        let mut options = Self { calls: 200, rounds: 10, target_ns: 1_000_000, threads: 1, disabled: false };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--disabled" {
                options.disabled = true;
                continue;
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = || value.parse::<u64>().map_err(|_| format!("{flag}: '{value}' is not a number"));
            match flag.as_str() {
                "--calls" => options.calls = number()? as usize,
                "--rounds" => options.rounds = number()? as usize,
                "--target-us" => options.target_ns = number()? * 1_000,
                "--threads" => {
                    options.threads = Some(number()?)
                        .filter(|&threads| threads <= max_threads)
                        .ok_or("--threads: too many")?
                }
                flag if other(flag, &value) => {}
                flag => return Err(format!("unknown option {flag}")),
            }
        }
        Ok(options)
    }
}

/// The paired rounds of an adapter benchmark: `options.rounds` rounds of
/// `options.calls` pairs, each round with a profiler of its own (over
/// `adapter()`, enabled unless `--disabled`). `time(None)` runs the bare
/// call and `time(Some(profiler))` the measured one, each returning its
/// time in ns. After each round `check(recorded, expected)` is handed the
/// calls the round's profile recorded and the calls it should have.
pub fn paired_rounds<A: ResourceProfileAdapter + 'static, E>(
    options: &PairedOptions,
    adapter: impl Fn() -> Box<A>,
    mut time: impl FnMut(Option<&mut ResourceProfiler>) -> Result<u64, E>,
    mut check: impl FnMut(usize, usize) -> Result<(), E>,
) -> Result<PairedTimings, E> {
    let mut timings = PairedTimings::with_capacity(options.calls * options.rounds);
    for _ in 0..options.rounds {
        let config = ProfilerConfig { enabled: !options.disabled, ..ProfilerConfig::default() };
        let mut profiler = ResourceProfiler::new(config).with_adapter(adapter());
        for _ in 0..options.calls {
            timings.pair(|measured| time(measured.then_some(&mut profiler)))?;
        }
        let profile = profiler.finish(false);
        let expected = if options.disabled { 0 } else { options.calls };
        check(profile.inference.batch_sizes.len(), expected)?;
    }
    Ok(timings)
}

/// Runs an adapter benchmark's `run`; on an error prints `{name}: {error}`
/// and exits with status 1.
pub fn exit_on_error(name: &str, run: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>) {
    if let Err(error) = run() {
        eprintln!("{name}: {error}");
        std::process::exit(1);
    }
}

/// The profiler's own cost per call (ns), measured around `calls` empty
/// calls of `samples` samples with the default configuration: stable where
/// the paired difference is within the machine's noise.
pub fn empty_call_ns(adapter: Box<dyn ResourceProfileAdapter>, samples: u64, calls: u32) -> f64 {
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(adapter);
    let start = Instant::now();
    for _ in 0..calls {
        profiler.measure_call(|| (), CallSpec::new(samples, "batch"));
    }
    start.elapsed().as_nanos() as f64 / f64::from(calls)
}

/// Bare and measured call times (ns), recorded in pairs.
#[derive(Debug, Clone, Default)]
pub struct PairedTimings {
    bare_ns: Vec<u64>,
    measured_ns: Vec<u64>,
}

impl PairedTimings {
    /// Room for `pairs` pairs without reallocating while timing.
    pub fn with_capacity(pairs: usize) -> Self {
        Self { bare_ns: Vec::with_capacity(pairs), measured_ns: Vec::with_capacity(pairs) }
    }

    /// Runs one pair: `run(false)` makes the bare call and `run(true)` the
    /// measured one, each returning its wall time in ns. Even pairs (counted
    /// from the first ever recorded) run the bare call first, odd pairs the
    /// measured one. On an error nothing of the pair is kept.
    pub fn pair<E>(&mut self, mut run: impl FnMut(bool) -> Result<u64, E>) -> Result<(), E> {
        let (bare, measured) = if self.bare_ns.len().is_multiple_of(2) {
            let bare = run(false)?;
            (bare, run(true)?)
        } else {
            let measured = run(true)?;
            (run(false)?, measured)
        };
        self.bare_ns.push(bare);
        self.measured_ns.push(measured);
        Ok(())
    }

    /// Pairs recorded.
    pub fn len(&self) -> usize {
        self.bare_ns.len()
    }

    /// Whether no pair is recorded.
    pub fn is_empty(&self) -> bool {
        self.bare_ns.is_empty()
    }

    /// The bare call times, in the order run.
    pub fn bare_ns(&self) -> &[u64] {
        &self.bare_ns
    }

    /// The measured call times, in the order run; `measured_ns()[i]` is
    /// the partner of `bare_ns()[i]`.
    pub fn measured_ns(&self) -> &[u64] {
        &self.measured_ns
    }

    /// The statistics of the pairs, `None` when there are none.
    pub fn summary(&self) -> Option<PairedSummary> {
        let differences: Vec<i64> = self
            .measured_ns
            .iter()
            .zip(&self.bare_ns)
            .map(|(&measured, &bare)| clamp_i64(i128::from(measured) - i128::from(bare)))
            .collect();
        Some(PairedSummary {
            pairs: self.len(),
            bare_median_ns: median_ns(&self.bare_ns)?,
            measured_median_ns: median_ns(&self.measured_ns)?,
            paired_difference_median_ns: median_difference_ns(&differences)?,
            bare_total_ns: self.bare_ns.iter().map(|&ns| u128::from(ns)).sum(),
            measured_total_ns: self.measured_ns.iter().map(|&ns| u128::from(ns)).sum(),
        })
    }
}

/// What [`PairedTimings::summary`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairedSummary {
    /// Pairs it summarizes.
    pub pairs: usize,
    /// The median bare call.
    pub bare_median_ns: u64,
    /// The median measured call.
    pub measured_median_ns: u64,
    /// The median over pairs of measured minus bare: the profiler's cost
    /// per call with the machine's slower noise cancelled (negative when
    /// that cost is below the noise).
    pub paired_difference_median_ns: i64,
    /// Every bare call together.
    pub bare_total_ns: u128,
    /// Every measured call together.
    pub measured_total_ns: u128,
}

impl PairedSummary {
    /// The overhead as a fraction of a call: the median paired difference
    /// over the median bare call (`0.01` is 1%); infinite or NaN when the
    /// median bare call took no time.
    pub fn relative_overhead(&self) -> f64 {
        self.paired_difference_median_ns as f64 / self.bare_median_ns as f64
    }
}

/// The median of `values`: the middle one, or the mean of the two middle
/// ones (rounded down) for an even count; `None` when empty.
///
/// ```
/// use tally_tests::overhead::median_ns;
/// assert_eq!(median_ns(&[5, 1, 3]), Some(3));
/// assert_eq!(median_ns(&[4, 1, 2, 8]), Some(3));
/// assert_eq!(median_ns(&[]), None);
/// ```
pub fn median_ns(values: &[u64]) -> Option<u64> {
    median_by(values, u64::midpoint)
}

/// [`median_ns`] of signed differences; the mean of the two middle ones is
/// rounded toward zero.
fn median_difference_ns(values: &[i64]) -> Option<i64> {
    median_by(values, |low, high| clamp_i64((i128::from(low) + i128::from(high)) / 2))
}

/// The middle value of `values`, or `mean` of the two middle ones.
fn median_by<T: Ord + Copy>(values: &[T], mean: impl FnOnce(T, T) -> T) -> Option<T> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        len if len % 2 == 1 => Some(sorted[middle]),
        _ => Some(mean(sorted[middle - 1], sorted[middle])),
    }
}

/// A difference of two u64 times fits i64 unless a call took over 292
/// years; saturate rather than wrap in that case.
fn clamp_i64(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX })
}

/// Runs `f` and returns its result and its wall time in ns (saturating at
/// `u64::MAX`, 584 years).
pub fn time_ns<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let started = Instant::now();
    let value = f();
    (value, u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// Calls per calibration step; their median is the step's call time.
const CALIBRATION_CALLS: usize = 15;
/// Calibration steps at most: each rescales the batch by the measured time.
const CALIBRATION_STEPS: usize = 4;

/// The batch at which one call takes about `target_ns`, between 1 and
/// `max_batch`: starting from `batch`, up to four times the median of 15
/// calls (`call(batch)` runs one and returns its time in ns) rescales the
/// batch in proportion, stopping early when it no longer changes. A call
/// time of 0 counts as 1 ns.
pub fn calibrate_batch<E>(
    mut batch: u64,
    target_ns: u64,
    max_batch: u64,
    mut call: impl FnMut(u64) -> Result<u64, E>,
) -> Result<u64, E> {
    let max_batch = max_batch.max(1);
    batch = batch.clamp(1, max_batch);
    for _ in 0..CALIBRATION_STEPS {
        let mut times = Vec::with_capacity(CALIBRATION_CALLS);
        for _ in 0..CALIBRATION_CALLS {
            times.push(call(batch)?);
        }
        // CALIBRATION_CALLS > 0, so the median exists; 1 ns is the floor.
        let call_ns = u128::from(median_ns(&times).unwrap_or(1).max(1));
        let wanted = (u128::from(batch) * u128::from(target_ns) + call_ns / 2) / call_ns;
        let scaled = u64::try_from(wanted).unwrap_or(u64::MAX).clamp(1, max_batch);
        if scaled == batch {
            break;
        }
        batch = scaled;
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;

    #[test]
    fn pairs_alternate_which_call_runs_first() {
        let mut timings = PairedTimings::default();
        let mut order = Vec::new();
        for _ in 0..4 {
            timings
                .pair(|measured| -> Result<u64, Infallible> {
                    order.push(measured);
                    Ok(if measured { 10 } else { 7 })
                })
                .unwrap();
        }
        assert_eq!(order, [false, true, true, false, false, true, true, false]);
        assert_eq!(timings.bare_ns(), [7; 4]);
        assert_eq!(timings.measured_ns(), [10; 4]);
    }

    #[test]
    fn a_failed_pair_is_not_kept() {
        let mut timings = PairedTimings::default();
        let failed = timings.pair(|measured| if measured { Err("measured failed") } else { Ok(1) });
        assert_eq!(failed, Err("measured failed"));
        assert!(timings.is_empty());
        assert_eq!(timings.summary(), None);
    }

    #[test]
    fn the_paired_median_ignores_load_that_hits_both_calls() {
        // Every third pair is slowed by 1 ms of "load" on both calls: the
        // medians of the separate series move, the paired one does not.
        let mut timings = PairedTimings::with_capacity(9);
        for index in 0..9u64 {
            let load = if index % 3 == 0 { 1_000_000 } else { 0 };
            timings
                .pair(|measured| -> Result<u64, Infallible> {
                    Ok(1_000_000 + load + if measured { 5_000 + index } else { 0 })
                })
                .unwrap();
        }
        let summary = timings.summary().expect("nine pairs were recorded");
        assert_eq!(summary.pairs, 9);
        assert_eq!(summary.paired_difference_median_ns, 5_004);
        assert_eq!(summary.bare_median_ns, 1_000_000);
        assert_eq!(summary.bare_total_ns, 9 * 1_000_000 + 3 * 1_000_000);
        assert_eq!(summary.measured_total_ns, summary.bare_total_ns + 9 * 5_000 + (0..9).sum::<u128>());
        assert!((summary.relative_overhead() - 0.005_004).abs() < 1e-12);
    }

    #[test]
    fn even_medians_round_down_and_signed_ones_toward_zero() {
        assert_eq!(median_ns(&[u64::MAX, u64::MAX - 1]), Some(u64::MAX - 1));
        assert_eq!(median_ns(&[2, 1]), Some(1));
        assert_eq!(median_difference_ns(&[-3, 0]), Some(-1));
        assert_eq!(median_difference_ns(&[i64::MIN, i64::MIN]), Some(i64::MIN));
        assert_eq!(median_difference_ns(&[]), None);
    }

    #[test]
    fn calibration_scales_the_batch_to_the_target() {
        // A call costs 1 µs per sample plus 10 µs: 1 ms needs a batch of 990.
        let mut seen = Vec::new();
        let batch = calibrate_batch(8, 1_000_000, 8192, |batch| -> Result<u64, Infallible> {
            seen.push(batch);
            Ok(10_000 + batch * 1_000)
        })
        .unwrap();
        assert!((980..=1000).contains(&batch), "batch {batch}");
        assert_eq!(seen.len() % CALIBRATION_CALLS, 0);
        assert!(seen.len() <= CALIBRATION_STEPS * CALIBRATION_CALLS);
    }

    #[test]
    fn calibration_stays_within_bounds_and_passes_errors_on() {
        let free = calibrate_batch(8, 1_000_000, 64, |_| -> Result<u64, Infallible> { Ok(0) }).unwrap();
        assert_eq!(free, 64);
        let slow = calibrate_batch(8, 1, 64, |_| -> Result<u64, Infallible> { Ok(u64::MAX) }).unwrap();
        assert_eq!(slow, 1);
        let mut calls = 0;
        let failed = calibrate_batch(8, 1_000, 64, |_| {
            calls += 1;
            if calls == 3 { Err("no") } else { Ok(1) }
        });
        assert_eq!(failed, Err("no"));
        assert_eq!(calls, 3);
    }
}
