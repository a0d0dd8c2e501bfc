//! Per-rank correlation evidence without a GPU.
//!
//! # What the CPU stand-in evidence is
//!
//! On a machine without a GPU a rank still does real work (the MPI example
//! multiplies real matrices). [`CpuStandInRecorder`] times each window of
//! that work on the host's monotonic clock and records it as one
//! `infer.iteration` and one linked `infer.activity_ref`, so the whole
//! correlation and accounting path runs across ranks. It is honest about
//! what it is:
//!
//! - the clock is the rank's own, named `rank-N-cpu` (clock domain and
//!   `device_uuid` alike), nanoseconds since the recorder started, kind
//!   `monotonic`; clocks of different ranks are different domains, so the
//!   accounting keeps one row per rank and never adds them up;
//! - the context says `backend: "cpu"`;
//! - each activity's metadata says `"evidence": "cpu_stand_in"` with a
//!   sentence explaining that the window is CPU work timed on the host and
//!   recorded in the `gpu` activity domain only because GPU-time accounting
//!   counts that domain alone.
//!
//! Real GPU evidence comes from tally-cuda or an imported trace; this module
//! is for demonstrations and tests of the distributed path.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};
use tally_core::{
    ActivityDomain, ActivityRef, ClockKind, CollectionMode, CorrelationContext, CorrelationEvent, EntityRef,
    EventBody, InferenceRecord, Iteration, NonEmptyString, Provenance, Span, ValidationError,
};

/// The `source` of the stand-in evidence's context.
pub const STAND_IN_SOURCE: &str = "tally-distributed/cpu-stand-in";

/// The `evidence` value in each stand-in activity's metadata.
pub const STAND_IN_EVIDENCE: &str = "cpu_stand_in";

const STAND_IN_NOTE: &str = "No GPU: CPU work timed on the host monotonic clock, recorded in the gpu activity \
                             domain only so that GPU-time accounting runs; the clock is this rank's own.";

/// The clock (domain and device) name of `rank`'s stand-in evidence.
///
/// ```
/// assert_eq!(tally_distributed::stand_in_clock_name(2), "rank-2-cpu");
/// ```
pub fn stand_in_clock_name(rank: u64) -> String {
    format!("rank-{rank}-cpu")
}

/// Records CPU-timed windows of one rank's work as correlation evidence
/// (see the module docs for what it is and is not).
///
/// ```
/// use tally_distributed::CpuStandInRecorder;
/// let mut recorder = CpuStandInRecorder::new("run-1", 0, 2)?;
/// let sum = recorder.window("batch-0", || (0..1000u64).sum::<u64>())?;
/// assert_eq!(sum, 499_500);
/// assert_eq!(recorder.events().len(), 2); // an iteration and its activity
/// # Ok::<(), tally_core::ValidationError>(())
/// ```
#[derive(Debug)]
pub struct CpuStandInRecorder {
    context: Arc<CorrelationContext>,
    origin: Instant,
    events: Vec<CorrelationEvent>,
    windows: u64,
}

impl CpuStandInRecorder {
    /// A recorder for `rank` of `world_size` in `run_id`; its clock starts now.
    pub fn new(run_id: &str, rank: u64, world_size: u64) -> Result<Self, ValidationError> {
        let clock = stand_in_clock_name(rank);
        let producer = format!("rank-{rank}");
        let mut context = CorrelationContext::new(
            NonEmptyString::for_field(run_id, "run_id")?,
            NonEmptyString::for_field(producer.clone(), "session_id")?,
            NonEmptyString::for_field(producer, "producer_id")?,
            NonEmptyString::for_field(STAND_IN_SOURCE, "source")?,
            NonEmptyString::for_field(clock.clone(), "clock_domain")?,
            ClockKind::Monotonic,
            CollectionMode::Active,
            Provenance::Observed,
        );
        context.source_version =
            Some(NonEmptyString::for_field(env!("CARGO_PKG_VERSION"), "source_version")?);
        context.backend = Some(NonEmptyString::for_field("cpu", "backend")?);
        context.pid = Some(u64::from(std::process::id()));
        context.device_uuid = Some(NonEmptyString::for_field(clock, "device_uuid")?);
        context.rank = Some(rank);
        context.world_size = std::num::NonZeroU64::new(world_size);
        Ok(Self { context: Arc::new(context), origin: Instant::now(), events: Vec::new(), windows: 0 })
    }

    fn now_ns(&self) -> u64 {
        // 2^64 ns is 584 years after the recorder started.
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The context every event shares.
    pub fn context(&self) -> &Arc<CorrelationContext> {
        &self.context
    }

    /// Runs `work`, times it, and records one iteration and one activity
    /// linked to it (`label` goes into both metadata).
    pub fn window<T>(&mut self, label: &str, work: impl FnOnce() -> T) -> Result<T, ValidationError> {
        let start = self.now_ns();
        let value = work();
        let end = self.now_ns();
        let index = self.windows;
        self.windows += 1;
        let producer = self.context.producer_id.clone();
        let iteration_ref = EntityRef::from_parts(
            producer.clone(),
            NonEmptyString::for_field(format!("iteration-{index}"), "id")?,
        );
        let span = Span::new(Some(start), Some(end))?;
        let mut iteration_metadata = Map::new();
        iteration_metadata.insert("label".into(), Value::from(label));
        self.events.push(CorrelationEvent::new(
            self.context.clone(),
            NonEmptyString::for_field(format!("iteration-event-{index}"), "event_id")?,
            iteration_metadata.into(),
            EventBody::Iteration(Iteration { iteration_ref: iteration_ref.clone(), batch_ref: None, span }),
        )?);
        let mut metadata = Map::new();
        metadata.insert("label".into(), Value::from(label));
        metadata.insert("evidence".into(), Value::from(STAND_IN_EVIDENCE));
        metadata.insert("note".into(), Value::from(STAND_IN_NOTE));
        metadata.insert("timing".into(), Value::from("host_monotonic_since_recorder_start"));
        let activity = ActivityRef {
            activity_ref: EntityRef::from_parts(
                producer,
                NonEmptyString::for_field(format!("cpu-window-{index}"), "id")?,
            ),
            activity_kind: NonEmptyString::for_field("cpu_stand_in_window", "activity_kind")?,
            activity_domain: ActivityDomain::Gpu,
            iteration_ref: Some(iteration_ref),
            correlation_scope: None,
            trace_attachment_id: None,
            runtime_correlation_id: None,
            cuda_correlation_id: None,
            stream_id: Some(0),
            graph_id: None,
            span,
        };
        self.events.push(CorrelationEvent::new(
            self.context.clone(),
            NonEmptyString::for_field(format!("activity-event-{index}"), "event_id")?,
            metadata.into(),
            EventBody::ActivityRef(activity),
        )?);
        Ok(value)
    }

    /// The events so far, in order.
    pub fn events(&self) -> &[CorrelationEvent] {
        &self.events
    }

    /// The events as artifact records, ready for `tally_artifact::write_artifact`.
    pub fn into_records(self) -> Vec<InferenceRecord> {
        self.events.into_iter().map(InferenceRecord::Event).collect()
    }
}
