//! Event-timed windows of GPU work, and the correlation evidence they give.

use std::sync::Arc;

use cudarc::driver::CudaStream;
use serde_json::{Map, Value};
use tally_core::{
    ActivityDomain, ActivityRef, ClockKind, CollectionMode, CorrelationContext, CorrelationEvent, EntityRef,
    EventBody, NonEmptyString, Provenance, Span,
};

use crate::driver::call;
use crate::{Calibration, CudaDevice, CudaError, CudaEventClock, host_monotonic_ns};

/// The `source` written in the context of the events this crate makes.
pub const SOURCE: &str = "tally-cuda";

/// Who records: the identity every event of one producer shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Producer {
    /// The run.
    pub run_id: NonEmptyString,
    /// The capture session.
    pub session_id: NonEmptyString,
    /// This producer; activity IDs are scoped to it.
    pub producer_id: NonEmptyString,
    /// Distributed rank, when there is one.
    pub rank: Option<u64>,
}

impl Producer {
    /// Validates the three identifiers.
    pub fn new(
        run_id: impl Into<String>,
        session_id: impl Into<String>,
        producer_id: impl Into<String>,
    ) -> Result<Self, CudaError> {
        Ok(Self {
            run_id: NonEmptyString::for_field(run_id, "run_id")?,
            session_id: NonEmptyString::for_field(session_id, "session_id")?,
            producer_id: NonEmptyString::for_field(producer_id, "producer_id")?,
            rank: None,
        })
    }
}

/// How to describe one window's activity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowOptions {
    /// A name for the work, written in the activity's metadata as `label`.
    pub label: Option<String>,
    /// The iteration the work belongs to: the activity is then `linked`.
    pub iteration_ref: Option<EntityRef>,
    /// The activity kind; `cuda_event_window` when absent.
    pub activity_kind: Option<String>,
}

impl WindowOptions {
    /// Options with a label.
    pub fn labelled(label: impl Into<String>) -> Self {
        Self { label: Some(label.into()), ..Self::default() }
    }

    /// The same options, linked to `iteration`.
    pub fn in_iteration(mut self, iteration: EntityRef) -> Self {
        self.iteration_ref = Some(iteration);
        self
    }
}

/// One timed window: the closure's value, its device time (between the two
/// events) and its host time (from before the first event was recorded to
/// after the second completed), and the activity event for it.
#[derive(Debug, Clone)]
pub struct TimedWindow<T> {
    /// What the closure returned.
    pub value: T,
    /// Device time of the start event (from the clock's origin).
    pub device_start_ns: u64,
    /// Device time of the end event.
    pub device_end_ns: u64,
    /// Host monotonic time before the start event was recorded.
    pub host_start_ns: u64,
    /// Host monotonic time after the end event completed.
    pub host_end_ns: u64,
    /// The `infer.activity_ref` event, also kept by the recorder.
    pub activity: CorrelationEvent,
}

impl<T> TimedWindow<T> {
    /// Device time between the two events.
    pub fn device_duration_ns(&self) -> u64 {
        self.device_end_ns - self.device_start_ns
    }

    /// Host time around the window, launch and synchronization included.
    pub fn host_duration_ns(&self) -> u64 {
        self.host_end_ns.saturating_sub(self.host_start_ns)
    }
}

/// Times GPU work with CUDA events on one device clock and collects the
/// correlation evidence: an `infer.activity_ref` per window and an
/// `infer.clock_alignment` per calibration.
///
/// ```no_run
/// use tally_cuda::{CudaDevice, CudaRecorder, Producer, WindowOptions};
/// let device = CudaDevice::open(0)?;
/// let mut recorder = CudaRecorder::new(&device, Producer::new("run-1", "session-1", "worker-0")?)?;
/// recorder.calibrate(32)?;
/// let window = recorder.window(WindowOptions::labelled("decode"), |stream| {
///     // enqueue kernels on `stream` here
///     stream.synchronize()
/// })?;
/// println!("device {} ns, host {} ns", window.device_duration_ns(), window.host_duration_ns());
/// recorder.calibrate(32)?; // the alignment now covers the window
/// recorder.emit_clock_alignment()?;
/// let events = recorder.into_events();
/// # Ok::<(), tally_cuda::CudaError>(())
/// ```
#[derive(Debug)]
pub struct CudaRecorder {
    clock: CudaEventClock,
    context: Arc<CorrelationContext>,
    producer: Producer,
    calibration: Option<Calibration>,
    events: Vec<CorrelationEvent>,
    windows: u64,
    alignments: u64,
}

impl CudaRecorder {
    /// Starts a device clock on `device` and the context its events share
    /// (the device clock, `clock_kind` `device`, the device's UUID).
    pub fn new(device: &CudaDevice, producer: Producer) -> Result<Self, CudaError> {
        let version = crate::driver_version()?;
        let clock = CudaEventClock::start(device)?;
        let mut context = CorrelationContext::new(
            producer.run_id.clone(),
            producer.session_id.clone(),
            producer.producer_id.clone(),
            NonEmptyString::for_field(SOURCE, "source")?,
            clock.domain().clone(),
            ClockKind::Device,
            CollectionMode::Active,
            Provenance::Observed,
        );
        context.source_version =
            Some(NonEmptyString::for_field(env!("CARGO_PKG_VERSION"), "source_version")?);
        context.backend = Some(NonEmptyString::for_field("cuda", "backend")?);
        context.backend_version = Some(NonEmptyString::for_field(version.to_string(), "backend_version")?);
        context.host = Some(NonEmptyString::for_field(crate::host_name(), "host")?);
        context.pid = Some(u64::from(std::process::id()));
        context.device_uuid = Some(NonEmptyString::for_field(device.uuid(), "device_uuid")?);
        context.rank = producer.rank;
        Ok(Self {
            clock,
            context: Arc::new(context),
            producer,
            calibration: None,
            events: Vec::new(),
            windows: 0,
            alignments: 0,
        })
    }

    /// The device clock.
    pub fn clock(&self) -> &CudaEventClock {
        &self.clock
    }

    /// The context of every event this recorder makes.
    pub fn context(&self) -> &Arc<CorrelationContext> {
        &self.context
    }

    /// Runs `work`, which enqueues GPU work on the stream it is given,
    /// between two timing events; waits for the end event and records the
    /// window's `infer.activity_ref`.
    pub fn window<T>(
        &mut self,
        options: WindowOptions,
        work: impl FnOnce(&Arc<CudaStream>) -> T,
    ) -> Result<TimedWindow<T>, CudaError> {
        let device = self.clock.device().clone();
        let start = self.clock.new_event()?;
        let end = self.clock.new_event()?;
        let host_start_ns = host_monotonic_ns();
        call("cuEventRecord", || start.record(device.stream()))?;
        let value = work(device.stream());
        call("cuEventRecord", || end.record(device.stream()))?;
        call("cuEventSynchronize", || end.synchronize())?;
        let host_end_ns = host_monotonic_ns();
        let device_start_ns = self.clock.read(&start)?;
        let device_end_ns = self.clock.read(&end)?;
        if device_end_ns < device_start_ns {
            return Err(CudaError::Measurement(format!(
                "the window's end event ({device_end_ns} ns) precedes its start ({device_start_ns} ns)"
            )));
        }
        self.windows += 1;
        let activity =
            self.activity_event(&options, device_start_ns, device_end_ns, host_start_ns, host_end_ns)?;
        self.events.push(activity.clone());
        Ok(TimedWindow { value, device_start_ns, device_end_ns, host_start_ns, host_end_ns, activity })
    }

    fn activity_event(
        &self,
        options: &WindowOptions,
        device_start_ns: u64,
        device_end_ns: u64,
        host_start_ns: u64,
        host_end_ns: u64,
    ) -> Result<CorrelationEvent, CudaError> {
        let id = format!("cuda-window:{}:{}", self.clock.tag(), self.windows);
        let kind = options.activity_kind.clone().unwrap_or_else(|| "cuda_event_window".to_owned());
        let mut metadata = Map::new();
        if let Some(label) = &options.label {
            metadata.insert("label".into(), Value::from(label.clone()));
        }
        metadata.insert("timing".into(), Value::from("cuda_event_elapsed"));
        metadata.insert("device_duration_ns".into(), Value::from(device_end_ns - device_start_ns));
        metadata.insert("host_clock_domain".into(), Value::from(crate::host_clock_domain()));
        metadata.insert("host_start_ns".into(), Value::from(host_start_ns));
        metadata.insert("host_end_ns".into(), Value::from(host_end_ns));
        metadata.insert("host_duration_ns".into(), Value::from(host_end_ns.saturating_sub(host_start_ns)));
        let body = ActivityRef {
            activity_ref: EntityRef::from_parts(
                self.producer.producer_id.clone(),
                NonEmptyString::for_field(id.clone(), "id")?,
            ),
            activity_kind: NonEmptyString::for_field(kind, "activity_kind")?,
            activity_domain: ActivityDomain::Gpu,
            iteration_ref: options.iteration_ref.clone(),
            correlation_scope: None,
            trace_attachment_id: None,
            runtime_correlation_id: None,
            cuda_correlation_id: None,
            stream_id: None,
            graph_id: None,
            span: Span::new(Some(device_start_ns), Some(device_end_ns))?,
        };
        Ok(CorrelationEvent::new(
            self.context.clone(),
            NonEmptyString::for_field(id, "event_id")?,
            metadata.into(),
            EventBody::ActivityRef(body),
        )?)
    }

    /// Takes `samples` calibration samples (see [`CudaEventClock::calibrate`])
    /// and keeps the calibration over every sample so far.
    pub fn calibrate(&mut self, samples: usize) -> Result<&Calibration, CudaError> {
        let calibration = self.clock.calibrate(samples)?;
        Ok(self.calibration.insert(calibration))
    }

    /// The latest calibration.
    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }

    /// Records the `infer.clock_alignment` of the latest calibration
    /// (calibrating with the origin alone when none was taken).
    pub fn emit_clock_alignment(&mut self) -> Result<CorrelationEvent, CudaError> {
        let calibration = match &self.calibration {
            Some(calibration) => calibration.clone(),
            None => self.clock.calibration()?,
        };
        self.alignments += 1;
        let id = format!("cuda-clock-alignment:{}:{}", self.clock.tag(), self.alignments);
        let event = calibration.alignment_event(self.context.clone(), id)?;
        self.events.push(event.clone());
        Ok(event)
    }

    /// The events recorded so far, in order.
    pub fn events(&self) -> &[CorrelationEvent] {
        &self.events
    }

    /// Gives the events back.
    pub fn into_events(self) -> Vec<CorrelationEvent> {
        self.events
    }
}
