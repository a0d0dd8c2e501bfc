//! The calibration arithmetic, which needs no GPU: brackets built around a
//! known true offset must give an alignment that contains it, and
//! tally-clock must translate through the emitted event exactly as
//! `Calibration::to_host_ns` says.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::sync::Arc;

use proptest::prelude::*;
use tally_core::{
    ClockKind, CollectionMode, CorrelationContext, EventBody, InferenceRecord, NonEmptyString, Provenance,
    parse_inference_record,
};
use tally_cuda::{Calibration, CalibrationSample, device_reading_error_ns};

const DEVICE: &str = "GPU-test/cuda_event_ns/host/boot/1.1";
const HOST: &str = "host/boot/monotonic_ns";

fn context() -> Arc<CorrelationContext> {
    let text = |value: &str| NonEmptyString::new(value).unwrap();
    let mut context = CorrelationContext::new(
        text("run"),
        text("session"),
        text("producer"),
        text(tally_cuda::SOURCE),
        text(DEVICE),
        ClockKind::Device,
        CollectionMode::Active,
        Provenance::Observed,
    );
    context.device_uuid = Some(text("GPU-test"));
    Arc::new(context)
}

/// One sample around a true offset: the device stamped at `device_ns`
/// (read back off by at most `error`), the host read `before` and `after`
/// around the true host time.
#[derive(Debug, Clone)]
struct Truth {
    device_ns: u64,
    lead: u64,
    lag: u64,
    error: u64,
    misread: i64,
}

fn truth() -> impl Strategy<Value = Truth> {
    (0u64..1_000_000_000_000, 0u64..100_000, 0u64..100_000, 0u64..2_000, -1000i64..=1000)
        .prop_map(|(device_ns, lead, lag, error, misread)| Truth { device_ns, lead, lag, error, misread })
}

fn sample(offset: i64, truth: &Truth) -> CalibrationSample {
    let host = i128::from(truth.device_ns) + i128::from(offset);
    // The reading is off by at most the stated error.
    let misread = i128::from(truth.misread).clamp(-i128::from(truth.error), i128::from(truth.error));
    let read = (i128::from(truth.device_ns) + misread).max(0);
    CalibrationSample {
        host_before_ns: u64::try_from(host - i128::from(truth.lead)).unwrap(),
        host_after_ns: u64::try_from(host + i128::from(truth.lag)).unwrap(),
        device_ns: u64::try_from(read).unwrap(),
        device_error_ns: truth.error,
    }
}

fn calibration(samples: Vec<CalibrationSample>) -> Calibration {
    Calibration::from_samples(NonEmptyString::new(DEVICE).unwrap(), "GPU-test".into(), HOST.into(), samples)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_alignment_contains_the_true_offset(
        offset in 1_000_000_000_000i64..4_000_000_000_000_000,
        truths in prop::collection::vec(truth(), 1..20),
    ) {
        let samples: Vec<_> = truths.iter().map(|truth| sample(offset, truth)).collect();
        let calibration = calibration(samples.clone());
        let low = i128::from(calibration.offset_ns()) - i128::from(calibration.uncertainty_ns());
        let high = i128::from(calibration.offset_ns()) + i128::from(calibration.uncertainty_ns());
        prop_assert!(low <= i128::from(offset) && i128::from(offset) <= high);
        // Half the tightest bracket, rounded up.
        let tightest = samples.iter().map(CalibrationSample::width_ns).min().unwrap();
        prop_assert_eq!(u128::from(calibration.uncertainty_ns()), tightest.div_ceil(2));
    }

    #[test]
    fn tally_clock_translates_through_the_event_as_the_calibration_says(
        offset in 1_000_000_000i64..4_000_000_000_000_000,
        truths in prop::collection::vec(truth(), 1..8),
        position in 0.0f64..1.0,
    ) {
        let calibration = calibration(truths.iter().map(|truth| sample(offset, truth)).collect());
        let event = calibration.alignment_event(context(), "alignment-1").unwrap();
        let (from, to) = calibration.validity().bounds().unwrap();
        // A timestamp inside the validity window, and the first one past it.
        let inside = from + ((to - 1 - from) as f64 * position) as u64;
        let aligned = tally_clock::align_timestamp(i128::from(inside), DEVICE, HOST, [&event]).unwrap();
        let (value, uncertainty) = calibration.to_host_ns(inside);
        prop_assert_eq!((aligned.value_ns, aligned.uncertainty_ns), (value, u128::from(uncertainty)));
        prop_assert!(tally_clock::align_timestamp(i128::from(to), DEVICE, HOST, [&event]).is_err());
        // The event survives the model's parser unchanged.
        let parsed = parse_inference_record(serde_json::Value::Object(event.to_record())).unwrap();
        let InferenceRecord::Event(parsed) = parsed else { panic!("not an event") };
        prop_assert_eq!(&parsed, &event);
        let EventBody::ClockAlignment(body) = parsed.body() else { panic!("not an alignment") };
        prop_assert_eq!(body.offset_ns, calibration.offset_ns());
    }

    #[test]
    fn the_reading_error_grows_with_the_reading(first in 0u64..1 << 50, second in 0u64..1 << 50) {
        let (small, large) = if first <= second { (first, second) } else { (second, first) };
        prop_assert!(device_reading_error_ns(small) <= device_reading_error_ns(large));
        prop_assert!(device_reading_error_ns(small) >= tally_cuda::EVENT_RESOLUTION_NS);
    }
}

#[test]
fn the_reading_error_matches_f32_spacing() {
    // f32 milliseconds at one minute (60_000 ms, exponent 15) are spaced
    // 2^-8 ms = 3906.25 ns apart: half of it, rounded up, plus the
    // resolution.
    assert_eq!(device_reading_error_ns(60_000_000_000), tally_cuda::EVENT_RESOLUTION_NS + 1954);
    assert_eq!(device_reading_error_ns(0), tally_cuda::EVENT_RESOLUTION_NS);
}

#[test]
fn an_empty_or_inverted_calibration_is_an_error() {
    let domain = NonEmptyString::new(DEVICE).unwrap();
    let empty = Calibration::from_samples(domain.clone(), "GPU".into(), HOST.into(), Vec::new());
    assert!(empty.unwrap_err().to_string().contains("at least one sample"));
    let inverted =
        CalibrationSample { host_before_ns: 10, host_after_ns: 5, device_ns: 0, device_error_ns: 0 };
    let error = Calibration::from_samples(domain, "GPU".into(), HOST.into(), vec![inverted]).unwrap_err();
    assert!(error.to_string().contains("out of order"), "{error}");
}

#[test]
fn the_validity_spans_the_samples() {
    let at = |device_ns| CalibrationSample {
        host_before_ns: 1_000_000 + device_ns,
        host_after_ns: 1_000_010 + device_ns,
        device_ns,
        device_error_ns: 0,
    };
    let calibration = calibration(vec![at(0), at(500), at(250)]);
    assert_eq!(calibration.validity().bounds(), Some((0, 501)));
    assert_eq!((calibration.offset_ns(), calibration.uncertainty_ns()), (1_000_005, 5));
    assert_eq!(calibration.spread_ns(), 0);
}
