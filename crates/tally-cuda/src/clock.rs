//! The device's event clock and its calibration against the host clock.
//!
//! CUDA exposes no absolute device timestamp through events, only the time
//! between two of them (`cuEventElapsedTime`). A [`CudaEventClock`] therefore
//! records an *origin* event when it starts: a device timestamp is the time
//! from the origin to an event, in nanoseconds. Each clock is its own clock
//! domain (named after the device, the host, the process and a counter),
//! and [`CudaEventClock::calibrate`] ties it to the host monotonic clock.
//!
//! # Calibration
//!
//! One sample records an event on the idle stream between two host reads:
//! `before` just ahead of `cuEventRecord`, `after` just behind the first
//! `cuEventQuery` that reports it complete. The device stamped the event
//! between the two, so `host = device + offset` with the offset in
//! `[before − device, after − device]`. The device reading itself is known
//! to within [`EVENT_RESOLUTION_NS`] plus the rounding of the `f32`
//! milliseconds the driver returns, and the bracket widens by that on each
//! side (not for the origin, whose device time is 0 by definition).
//!
//! Of all samples, the tightest bracket gives the alignment: the offset is
//! its middle and the uncertainty half its width, rounded up, as stormlog
//! writes bracket alignments (`offset = low + gap div 2`, `uncertainty =
//! gap − gap div 2`). The alignment is valid over the calibration's window
//! on the device clock: from the origin (the first sample) to just after the
//! last sample, so windows timed between two calibrations are covered once
//! the second has run.
//!
//! The offset is taken as constant over that window. Device and host clocks
//! drift apart by a few parts per million; [`Calibration::spread_ns`] (the
//! range of the samples' bracket middles) shows how far, and a long run
//! should start a new clock now and then.
//!
//! # Precision
//!
//! The driver returns elapsed time as `f32` milliseconds, whose rounding
//! grows with the distance from the origin: 61 ns at one second, 3.9 µs at a
//! minute. [`device_reading_error_ns`] gives the bound used; start a new
//! clock (a new origin) for long runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaEvent, sys};
use serde_json::{Map, Value, json};
use tally_core::{ClockAlignment, CorrelationContext, CorrelationEvent, EventBody, NonEmptyString, Span};

use crate::driver::call;
use crate::{CudaDevice, CudaError, host_monotonic_ns};

/// The resolution of CUDA event timestamps the CUDA documentation states
/// for `cuEventElapsedTime` ("around 0.5 microseconds").
pub const EVENT_RESOLUTION_NS: u64 = 500;

/// The `alignment_basis` written in an alignment's metadata.
pub const ALIGNMENT_BASIS: &str = "cuda_event_bracket_midpoint/1";

/// How long one sample waits for its event before giving up: an idle
/// stream completes an event in microseconds.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(5);

static NEXT_CLOCK: AtomicU64 = AtomicU64::new(1);

/// A CUDA device's clock, read through events: nanoseconds since an origin
/// event on one stream, calibrated to the host monotonic clock (not to be
/// confused with `tally_gpu_time::DeviceClock`, the key GPU time is kept
/// apart by).
#[derive(Debug)]
pub struct CudaEventClock {
    device: CudaDevice,
    origin: CudaEvent,
    domain: NonEmptyString,
    tag: String,
    samples: Vec<CalibrationSample>,
}

impl CudaEventClock {
    /// Starts a clock on `device`'s stream: waits for the stream to go idle
    /// and records the origin, which is also the first calibration sample.
    pub fn start(device: &CudaDevice) -> Result<Self, CudaError> {
        device.synchronize()?;
        let origin = timing_event(device)?;
        let (before, after) = record_bracketed(device, &origin)?;
        let sequence = NEXT_CLOCK.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}.{}", std::process::id(), sequence);
        let domain =
            format!("{}/cuda_event_ns/{}/{}/{}", device.uuid(), crate::host_name(), crate::boot_id(), tag);
        let origin_sample = CalibrationSample {
            host_before_ns: before,
            host_after_ns: after,
            device_ns: 0,
            device_error_ns: 0,
        };
        Ok(Self {
            device: device.clone(),
            origin,
            domain: NonEmptyString::for_field(domain, "clock_domain")?,
            tag,
            samples: vec![origin_sample],
        })
    }

    /// The clock's domain: `{device uuid}/cuda_event_ns/{host}/{boot}/{pid}.{n}`.
    pub fn domain(&self) -> &NonEmptyString {
        &self.domain
    }

    /// `{pid}.{n}`: unique among the clocks of one boot, for event IDs.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The device it runs on.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// An event created with timing enabled (cudarc's `None` flags disable
    /// timing, which would make every reading fail).
    pub fn new_event(&self) -> Result<CudaEvent, CudaError> {
        timing_event(&self.device)
    }

    /// The device time of a recorded timing event: nanoseconds from the
    /// origin. Waits for the event to complete.
    pub fn read(&self, event: &CudaEvent) -> Result<u64, CudaError> {
        let milliseconds = call("cuEventElapsedTime", || self.origin.elapsed_ms(event))?;
        milliseconds_to_ns(milliseconds)
    }

    /// Takes `samples` more calibration samples (the stream must not be
    /// fed meanwhile: each waits for it to go idle) and returns the
    /// calibration over every sample this clock has taken, the origin
    /// included.
    pub fn calibrate(&mut self, samples: usize) -> Result<Calibration, CudaError> {
        let event = self.new_event()?;
        for _ in 0..samples {
            self.device.synchronize()?;
            let (before, after) = record_bracketed(&self.device, &event)?;
            let device_ns = self.read(&event)?;
            self.samples.push(CalibrationSample {
                host_before_ns: before,
                host_after_ns: after,
                device_ns,
                device_error_ns: device_reading_error_ns(device_ns),
            });
        }
        self.calibration()
    }

    /// The calibration over the samples taken so far (at least the origin).
    pub fn calibration(&self) -> Result<Calibration, CudaError> {
        Calibration::from_samples(
            self.domain.clone(),
            self.device.uuid().to_owned(),
            crate::host_clock_domain(),
            self.samples.clone(),
        )
    }
}

fn timing_event(device: &CudaDevice) -> Result<CudaEvent, CudaError> {
    call("cuEventCreate", || device.context().new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)))
}

/// Records `event` on the device's stream between two host reads; the
/// second is taken right after the first query that finds it complete.
fn record_bracketed(device: &CudaDevice, event: &CudaEvent) -> Result<(u64, u64), CudaError> {
    let waited = Instant::now();
    let before = host_monotonic_ns();
    call("cuEventRecord", || event.record(device.stream()))?;
    loop {
        let complete = call("cuEventQuery", || event.try_is_complete())?;
        let after = host_monotonic_ns();
        if complete {
            return Ok((before, after));
        }
        if waited.elapsed() > SAMPLE_TIMEOUT {
            return Err(CudaError::Measurement(format!(
                "a calibration event did not complete within {} s: is the stream fed by another thread?",
                SAMPLE_TIMEOUT.as_secs()
            )));
        }
        std::hint::spin_loop();
    }
}

/// `cuEventElapsedTime`'s `f32` milliseconds as integer nanoseconds, the
/// one place a float enters: rounded to the nearest nanosecond.
pub(crate) fn milliseconds_to_ns(milliseconds: f32) -> Result<u64, CudaError> {
    if !milliseconds.is_finite() || milliseconds < 0.0 {
        return Err(CudaError::Measurement(format!(
            "an event lies before the clock's origin (elapsed {milliseconds} ms): \
             was it recorded on another stream?"
        )));
    }
    // f32 milliseconds below 2^24 ms (4.6 hours) convert exactly to f64;
    // the product is far below 2^64 ns.
    Ok((f64::from(milliseconds) * 1_000_000.0).round() as u64)
}

/// How far a device reading of `device_ns` can be from the truth:
/// [`EVENT_RESOLUTION_NS`] plus half the spacing of `f32` milliseconds at
/// that magnitude, rounded up.
///
/// ```
/// use tally_cuda::{device_reading_error_ns, EVENT_RESOLUTION_NS};
/// // At one second, f32 milliseconds are spaced 2^-14 ms (61 ns) apart.
/// assert_eq!(device_reading_error_ns(1_000_000_000), EVENT_RESOLUTION_NS + 31);
/// ```
pub fn device_reading_error_ns(device_ns: u64) -> u64 {
    // The spacing of f32 values around x is 2^(floor(log2 x) - 23).
    let milliseconds = device_ns as f64 / 1_000_000.0;
    let spacing_ns = if milliseconds < f64::from(f32::MIN_POSITIVE) {
        0.0
    } else {
        2f64.powi(milliseconds.log2().floor() as i32 - 23) * 1_000_000.0
    };
    EVENT_RESOLUTION_NS + (spacing_ns / 2.0).ceil() as u64
}

/// One calibration sample: an event the device stamped at `device_ns` while
/// the host clock read between `host_before_ns` and `host_after_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalibrationSample {
    /// Host monotonic time just before the event was recorded.
    pub host_before_ns: u64,
    /// Host monotonic time just after it was seen complete.
    pub host_after_ns: u64,
    /// Its device time (from the clock's origin).
    pub device_ns: u64,
    /// How far `device_ns` can be off (0 for the origin).
    pub device_error_ns: u64,
}

impl CalibrationSample {
    /// The interval `[low, high]` the offset `host − device` lies in.
    ///
    /// ```
    /// use tally_cuda::CalibrationSample;
    /// let sample = CalibrationSample { host_before_ns: 1_000, host_after_ns: 1_040, device_ns: 300, device_error_ns: 5 };
    /// assert_eq!(sample.offset_bounds(), (695, 745));
    /// ```
    pub fn offset_bounds(&self) -> (i128, i128) {
        let device = i128::from(self.device_ns);
        let error = i128::from(self.device_error_ns);
        (i128::from(self.host_before_ns) - device - error, i128::from(self.host_after_ns) - device + error)
    }

    /// The bracket's width in nanoseconds.
    pub fn width_ns(&self) -> u128 {
        let (low, high) = self.offset_bounds();
        (high - low).unsigned_abs()
    }
}

/// The offset between a device clock and the host monotonic clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calibration {
    device_domain: NonEmptyString,
    device_uuid: String,
    host_domain: String,
    samples: Vec<CalibrationSample>,
    best: usize,
    offset_ns: i64,
    uncertainty_ns: u64,
}

impl Calibration {
    /// The calibration these samples give; see the module docs.
    ///
    /// ```
    /// use tally_core::NonEmptyString;
    /// use tally_cuda::{Calibration, CalibrationSample};
    /// let samples = vec![
    ///     CalibrationSample { host_before_ns: 5_000, host_after_ns: 5_100, device_ns: 0, device_error_ns: 0 },
    ///     CalibrationSample { host_before_ns: 9_000, host_after_ns: 9_020, device_ns: 4_000, device_error_ns: 0 },
    /// ];
    /// let calibration = Calibration::from_samples(
    ///     NonEmptyString::new("gpu").unwrap(), "GPU-0".into(), "host".into(), samples,
    /// ).unwrap();
    /// // The second bracket, [5000, 5020], is the tightest.
    /// assert_eq!((calibration.offset_ns(), calibration.uncertainty_ns()), (5_010, 10));
    /// assert_eq!(calibration.validity().bounds(), Some((0, 4_001)));
    /// ```
    pub fn from_samples(
        device_domain: NonEmptyString,
        device_uuid: String,
        host_domain: String,
        samples: Vec<CalibrationSample>,
    ) -> Result<Self, CudaError> {
        let best = samples
            .iter()
            .enumerate()
            .min_by_key(|(index, sample)| (sample.width_ns(), *index))
            .map(|(index, _)| index)
            .ok_or_else(|| CudaError::Measurement("a calibration needs at least one sample".to_owned()))?;
        let (low, high) = samples[best].offset_bounds();
        if high < low {
            return Err(CudaError::Measurement(format!(
                "a calibration sample's host reads are out of order ({} after {})",
                samples[best].host_before_ns, samples[best].host_after_ns
            )));
        }
        let gap = high - low;
        let offset = low + gap / 2;
        let offset_ns = i64::try_from(offset)
            .map_err(|_| CudaError::Measurement(format!("clock offset {offset} ns exceeds 64 bits")))?;
        let uncertainty_ns = u64::try_from(gap - gap / 2)
            .map_err(|_| CudaError::Measurement(format!("clock bracket {gap} ns exceeds 64 bits")))?;
        Ok(Self { device_domain, device_uuid, host_domain, samples, best, offset_ns, uncertainty_ns })
    }

    /// `host = device + offset_ns`.
    pub fn offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// Half the tightest bracket, rounded up.
    pub fn uncertainty_ns(&self) -> u64 {
        self.uncertainty_ns
    }

    /// The sample that gave the offset.
    pub fn best_sample(&self) -> &CalibrationSample {
        &self.samples[self.best]
    }

    /// Every sample, in the order taken.
    pub fn samples(&self) -> &[CalibrationSample] {
        &self.samples
    }

    /// The device clock's domain (the alignment's `from`).
    pub fn device_domain(&self) -> &NonEmptyString {
        &self.device_domain
    }

    /// The host clock's domain (the alignment's `to`).
    pub fn host_domain(&self) -> &str {
        &self.host_domain
    }

    /// Where the alignment holds on the device clock: from the earliest
    /// sample (inclusive) to just after the latest (exclusive).
    pub fn validity(&self) -> Span {
        let first = self.samples.iter().map(|sample| sample.device_ns).min().unwrap_or(0);
        let last = self.samples.iter().map(|sample| sample.device_ns).max().unwrap_or(0);
        // first <= last, so the span is valid.
        Span::new(Some(first), Some(last.saturating_add(1))).unwrap_or(Span::UNKNOWN)
    }

    /// The range of the samples' bracket middles: how far the offset moved
    /// over the window (drift plus noise); 0 for one sample.
    pub fn spread_ns(&self) -> u64 {
        let middles = self.samples.iter().map(|sample| {
            let (low, high) = sample.offset_bounds();
            low + (high - low) / 2
        });
        let (min, max) = middles.fold((i128::MAX, i128::MIN), |(min, max), m| (min.min(m), max.max(m)));
        u64::try_from(max.saturating_sub(min)).unwrap_or(0)
    }

    /// The host time of a device timestamp: `(value, uncertainty)`, the
    /// same answer `tally_clock::align_timestamp` gives for the alignment
    /// event (the middle of the translated bracket).
    pub fn to_host_ns(&self, device_ns: u64) -> (i128, u64) {
        let low = i128::from(self.offset_ns) - i128::from(self.uncertainty_ns);
        let high = i128::from(self.offset_ns) + i128::from(self.uncertainty_ns);
        let half = (high - low + 1) / 2;
        (i128::from(device_ns) + high - half, u64::try_from(half).unwrap_or(u64::MAX))
    }

    /// The `infer.clock_alignment` event: from the device clock to the host
    /// monotonic clock, valid over [`Calibration::validity`]. `context`
    /// should be on the device clock (see [`crate::CudaRecorder`]).
    pub fn alignment_event(
        &self,
        context: Arc<CorrelationContext>,
        event_id: impl Into<String>,
    ) -> Result<CorrelationEvent, CudaError> {
        let best = self.best_sample();
        let mut metadata = Map::new();
        metadata.insert("alignment_basis".into(), Value::from(ALIGNMENT_BASIS));
        metadata.insert("device_uuid".into(), Value::from(self.device_uuid.clone()));
        metadata.insert("sample_count".into(), Value::from(self.samples.len()));
        metadata.insert("bracket_ns".into(), Value::from(best.width_ns() as u64));
        metadata.insert("spread_ns".into(), Value::from(self.spread_ns()));
        metadata.insert(
            "bracket".into(),
            json!({
                "host_before_ns": best.host_before_ns,
                "host_after_ns": best.host_after_ns,
                "device_ns": best.device_ns,
                "device_error_ns": best.device_error_ns,
            }),
        );
        let body = ClockAlignment {
            from_clock_domain: self.device_domain.clone(),
            to_clock_domain: NonEmptyString::for_field(self.host_domain.clone(), "to_clock_domain")?,
            offset_ns: self.offset_ns,
            uncertainty_ns: self.uncertainty_ns,
            validity: self.validity(),
        };
        Ok(CorrelationEvent::new(
            context,
            NonEmptyString::for_field(event_id, "event_id")?,
            metadata.into(),
            EventBody::ClockAlignment(body),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::milliseconds_to_ns;

    #[test]
    fn milliseconds_become_rounded_nanoseconds() {
        assert_eq!(milliseconds_to_ns(1.5).ok(), Some(1_500_000));
        assert_eq!(milliseconds_to_ns(0.0).ok(), Some(0));
        // 0.1 is not exact in f32 (0.100000001490116...): the nearest
        // nanosecond is still 100_000.
        assert_eq!(milliseconds_to_ns(0.1).ok(), Some(100_000));
    }

    #[test]
    fn impossible_readings_are_errors() {
        for reading in [-0.001f32, f32::NAN, f32::INFINITY] {
            let error = milliseconds_to_ns(reading).err().map(|error| error.to_string());
            assert!(error.is_some_and(|text| text.contains("before the clock's origin")), "{reading}");
        }
    }
}
