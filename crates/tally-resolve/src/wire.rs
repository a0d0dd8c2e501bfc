//! A [`PreparedBatch`] as plain data for any serde format: what a partial
//! result (`tally-partial`) carries between machines. Reading one back
//! checks every offset, index and span against the rest of the batch, so a
//! damaged or hostile batch is refused with the rule it broke instead of
//! panicking in the resolver.
//!
//! Contexts travel as their JSON text (few per batch; their own serde form
//! is a JSON object, which binary formats without `deserialize_any` cannot
//! read) and are validated as an artifact's are.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tally_core::{ActivityDomain, CorrelationContext, Interval, Span};

use crate::prepare::{Busy, PreparedActivity, PreparedBatch, PreparedBody, PreparedEvent, RefStr, Str};

#[derive(Serialize, Deserialize)]
struct WireStr(u64, u64);

#[derive(Serialize, Deserialize)]
struct WireRef(WireStr, WireStr);

#[derive(Serialize, Deserialize)]
struct WireSpan(Option<u64>, Option<u64>);

#[derive(Serialize, Deserialize)]
enum WireBusy {
    Unknown,
    Span(u64, u64),
    Listed(u64, u64),
}

#[derive(Serialize, Deserialize)]
struct WireActivity {
    key: u128,
    reference: Option<WireRef>,
    kind: WireStr,
    domain: ActivityDomain,
    iteration: Option<WireRef>,
    scope: Option<WireRef>,
    name: Option<WireStr>,
    cuda_correlation_id: Option<u64>,
    stream_id: Option<u64>,
    busy: WireBusy,
}

#[derive(Serialize, Deserialize)]
enum WireBody {
    Request { request: WireRef, attempt: Option<WireRef> },
    Iteration { iteration: WireRef, span: WireSpan },
    Stage { stage: WireRef, request: Option<WireRef>, iteration: Option<WireRef> },
    Membership { request: WireRef, attempt: Option<WireRef>, iteration: WireRef, role: WireStr },
    Activity(Box<WireActivity>),
    Alignment { from: WireStr, to: WireStr, offset_ns: i64, uncertainty_ns: u64, validity: WireSpan },
    Untabled,
}

#[derive(Serialize, Deserialize)]
struct WireEvent {
    record: u64,
    context: u32,
    key: u128,
    fingerprint: u64,
    event_id: WireStr,
    body: WireBody,
}

#[derive(Serialize, Deserialize)]
struct WireBatch {
    labels: bool,
    text: String,
    contexts: Vec<String>,
    intervals: Vec<(u64, u64)>,
    events: Vec<WireEvent>,
}

fn out_str(value: Str) -> WireStr {
    WireStr(value.start as u64, value.len as u64)
}

fn out_ref(value: RefStr) -> WireRef {
    WireRef(out_str(value.producer), out_str(value.id))
}

fn out_span(value: Span) -> WireSpan {
    WireSpan(value.start_ns(), value.end_ns())
}

fn out_body(body: &PreparedBody) -> WireBody {
    match *body {
        PreparedBody::Request { request, attempt } => {
            WireBody::Request { request: out_ref(request), attempt: attempt.map(out_ref) }
        }
        PreparedBody::Iteration { iteration, span } => {
            WireBody::Iteration { iteration: out_ref(iteration), span: out_span(span) }
        }
        PreparedBody::Stage { stage, request, iteration } => WireBody::Stage {
            stage: out_ref(stage),
            request: request.map(out_ref),
            iteration: iteration.map(out_ref),
        },
        PreparedBody::Membership { request, attempt, iteration, role } => WireBody::Membership {
            request: out_ref(request),
            attempt: attempt.map(out_ref),
            iteration: out_ref(iteration),
            role: out_str(role),
        },
        PreparedBody::Activity(activity) => WireBody::Activity(Box::new(WireActivity {
            key: activity.key,
            reference: activity.reference.map(out_ref),
            kind: out_str(activity.kind),
            domain: activity.domain,
            iteration: activity.iteration.map(out_ref),
            scope: activity.scope.map(out_ref),
            name: activity.name.map(out_str),
            cuda_correlation_id: activity.cuda_correlation_id,
            stream_id: activity.stream_id,
            busy: match activity.busy {
                Busy::Unknown => WireBusy::Unknown,
                Busy::Span(start, end) => WireBusy::Span(start, end),
                Busy::Listed(first, count) => WireBusy::Listed(first as u64, count as u64),
            },
        })),
        PreparedBody::Alignment { from, to, offset_ns, uncertainty_ns, validity } => WireBody::Alignment {
            from: out_str(from),
            to: out_str(to),
            offset_ns,
            uncertainty_ns,
            validity: out_span(validity),
        },
        PreparedBody::Untabled => WireBody::Untabled,
    }
}

impl Serialize for PreparedBatch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = WireBatch {
            labels: self.labels,
            text: self.text.clone(),
            contexts: self.contexts.iter().map(|prepared| prepared.context.to_json().to_string()).collect(),
            intervals: self
                .intervals
                .iter()
                .map(|interval| (interval.start_ns(), interval.end_ns()))
                .collect(),
            events: self
                .events
                .iter()
                .map(|event| WireEvent {
                    record: event.record as u64,
                    context: event.context,
                    key: event.key,
                    fingerprint: event.fingerprint,
                    event_id: out_str(event.event_id),
                    body: out_body(&event.body),
                })
                .collect(),
        };
        wire.serialize(serializer)
    }
}

/// Reads a wire batch back, checking each part against the rest.
struct Checker<'a> {
    text: &'a str,
    contexts: usize,
    intervals: usize,
    /// The event being checked, for the message.
    event: usize,
}

impl Checker<'_> {
    fn fail(&self, rule: &str) -> String {
        format!("prepared event {}: {rule}", self.event)
    }

    fn str(&self, value: WireStr) -> Result<Str, String> {
        let (start, len) = (usize::try_from(value.0), usize::try_from(value.1));
        let (Ok(start), Ok(len)) = (start, len) else {
            return Err(self.fail("a string lies outside the batch's text"));
        };
        match start.checked_add(len) {
            Some(end)
                if end <= self.text.len()
                    && self.text.is_char_boundary(start)
                    && self.text.is_char_boundary(end) =>
            {
                Ok(Str { start, len })
            }
            _ => Err(self.fail("a string lies outside the batch's text or splits a character")),
        }
    }

    fn reference(&self, value: WireRef) -> Result<RefStr, String> {
        let (producer, id) = (self.str(value.0)?, self.str(value.1)?);
        // The resolver reads references back as views, whose parts are
        // non-empty.
        if producer.len == 0 || id.len == 0 {
            return Err(self.fail("a reference has an empty producer_id or id"));
        }
        Ok(RefStr { producer, id })
    }

    fn optional(&self, value: Option<WireRef>) -> Result<Option<RefStr>, String> {
        value.map(|value| self.reference(value)).transpose()
    }

    fn span(&self, value: WireSpan) -> Result<Span, String> {
        Span::new(value.0, value.1).map_err(|_| self.fail("a span ends before it starts"))
    }

    fn body(&self, body: WireBody) -> Result<PreparedBody, String> {
        Ok(match body {
            WireBody::Request { request, attempt } => {
                PreparedBody::Request { request: self.reference(request)?, attempt: self.optional(attempt)? }
            }
            WireBody::Iteration { iteration, span } => {
                PreparedBody::Iteration { iteration: self.reference(iteration)?, span: self.span(span)? }
            }
            WireBody::Stage { stage, request, iteration } => PreparedBody::Stage {
                stage: self.reference(stage)?,
                request: self.optional(request)?,
                iteration: self.optional(iteration)?,
            },
            WireBody::Membership { request, attempt, iteration, role } => PreparedBody::Membership {
                request: self.reference(request)?,
                attempt: self.optional(attempt)?,
                iteration: self.reference(iteration)?,
                role: self.str(role)?,
            },
            WireBody::Activity(activity) => {
                let activity = *activity;
                let busy = match activity.busy {
                    WireBusy::Unknown => Busy::Unknown,
                    WireBusy::Span(start, end) if start <= end => Busy::Span(start, end),
                    WireBusy::Span(..) => return Err(self.fail("an activity's span ends before it starts")),
                    WireBusy::Listed(first, count) => {
                        let fits = first.checked_add(count).is_some_and(|end| end <= self.intervals as u64);
                        if !fits {
                            return Err(
                                self.fail("an activity's intervals lie outside the batch's intervals")
                            );
                        }
                        Busy::Listed(first as usize, count as usize)
                    }
                };
                PreparedBody::Activity(PreparedActivity {
                    key: activity.key,
                    reference: self.optional(activity.reference)?,
                    kind: self.str(activity.kind)?,
                    domain: activity.domain,
                    iteration: self.optional(activity.iteration)?,
                    scope: self.optional(activity.scope)?,
                    name: activity.name.map(|name| self.str(name)).transpose()?,
                    cuda_correlation_id: activity.cuda_correlation_id,
                    stream_id: activity.stream_id,
                    busy,
                })
            }
            WireBody::Alignment { from, to, offset_ns, uncertainty_ns, validity } => {
                PreparedBody::Alignment {
                    from: self.str(from)?,
                    to: self.str(to)?,
                    offset_ns,
                    uncertainty_ns,
                    validity: self.span(validity)?,
                }
            }
            WireBody::Untabled => PreparedBody::Untabled,
        })
    }
}

impl TryFrom<WireBatch> for PreparedBatch {
    type Error = String;

    fn try_from(wire: WireBatch) -> Result<Self, String> {
        let mut batch = PreparedBatch::with_capacity(0);
        batch.labels = wire.labels;
        for (number, text) in wire.contexts.iter().enumerate() {
            let json: serde_json::Value =
                serde_json::from_str(text).map_err(|error| format!("context {number}: {error}"))?;
            let context =
                CorrelationContext::from_json(json).map_err(|error| format!("context {number}: {error}"))?;
            batch.add_context(Arc::new(context));
        }
        for (number, &(start, end)) in wire.intervals.iter().enumerate() {
            let interval = Interval::new(start, end)
                .ok_or_else(|| format!("interval {number}: it ends before it starts"))?;
            batch.intervals.push(interval);
        }
        let mut checker = Checker {
            text: &wire.text,
            contexts: batch.contexts.len(),
            intervals: batch.intervals.len(),
            event: 0,
        };
        batch.events.reserve_exact(wire.events.len());
        for (number, event) in wire.events.into_iter().enumerate() {
            checker.event = number;
            if event.context as usize >= checker.contexts {
                return Err(checker.fail("its context is not in the batch"));
            }
            let record =
                usize::try_from(event.record).map_err(|_| checker.fail("its position is too large"))?;
            batch.events.push(PreparedEvent {
                record,
                context: event.context,
                key: event.key,
                fingerprint: event.fingerprint,
                event_id: checker.str(event.event_id)?,
                body: checker.body(event.body)?,
            });
        }
        batch.text = wire.text;
        Ok(batch)
    }
}

impl<'de> Deserialize<'de> for PreparedBatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireBatch::deserialize(deserializer)?;
        PreparedBatch::try_from(wire).map_err(serde::de::Error::custom)
    }
}
