//! Writing: a [`PreparedBatch`] taken apart into the wire columns; refuses a
//! batch whose keys would not come out the same on reading.

use super::*;

/// Builds the columns from a batch.
struct Writer<'a> {
    batch: &'a PreparedBatch,
    strings: Vec<String>,
    string_index: FastHashMap<&'a str, u64>,
    /// The index of a string of the batch by its place: an interning
    /// batch's equal strings are one place, found without hashing or
    /// comparing their text (kernel names are long).
    place_index: FastHashMap<(usize, usize), u64>,
    /// The last event ID's stem and its index: most events share the one
    /// before's.
    last_stem: Option<(&'a str, u64)>,
    refs: Vec<(u64, u64)>,
    ref_index: FastHashMap<(u64, u64), u64>,
}

impl<'a> Writer<'a> {
    fn string(&mut self, text: &'a str) -> u64 {
        let next = self.strings.len() as u64;
        *self.string_index.entry(text).or_insert_with(|| {
            self.strings.push(text.to_owned());
            next
        })
    }

    fn str(&mut self, value: Str) -> u64 {
        if let Some(&index) = self.place_index.get(&(value.start, value.len)) {
            return index;
        }
        let batch = self.batch;
        let index = self.string(batch.get(value));
        self.place_index.insert((value.start, value.len), index);
        index
    }

    fn stem(&mut self, stem: &'a str) -> u64 {
        match self.last_stem {
            Some((last, index)) if last == stem => index,
            _ => {
                let index = self.string(stem);
                self.last_stem = Some((stem, index));
                index
            }
        }
    }

    fn reference(&mut self, value: RefStr) -> u64 {
        let pair = (self.str(value.producer), self.str(value.id));
        let next = self.refs.len() as u64;
        *self.ref_index.entry(pair).or_insert_with(|| {
            self.refs.push(pair);
            next
        })
    }

    fn optional(&mut self, value: Option<RefStr>) -> Optional {
        value.map_or(0, |value| 1 + self.reference(value))
    }

    fn other(&mut self, body: &PreparedBody) -> WireOther {
        match *body {
            PreparedBody::Request { request, attempt } => {
                WireOther::Request { request: self.reference(request), attempt: self.optional(attempt) }
            }
            PreparedBody::Iteration { iteration, span } => WireOther::Iteration {
                iteration: self.reference(iteration),
                start_ns: span.start_ns(),
                end_ns: span.end_ns(),
            },
            PreparedBody::Stage { stage, request, iteration } => WireOther::Stage {
                stage: self.reference(stage),
                request: self.optional(request),
                iteration: self.optional(iteration),
            },
            PreparedBody::Membership { request, attempt, iteration, role } => WireOther::Membership {
                request: self.reference(request),
                attempt: self.optional(attempt),
                iteration: self.reference(iteration),
                role: self.str(role),
            },
            PreparedBody::Alignment { from, to, offset_ns, uncertainty_ns, validity } => {
                WireOther::Alignment {
                    from: self.str(from),
                    to: self.str(to),
                    offset_ns,
                    uncertainty_ns,
                    start_ns: validity.start_ns(),
                    end_ns: validity.end_ns(),
                }
            }
            // The caller gives the other kinds their own columns.
            PreparedBody::Activity(_) | PreparedBody::Untabled => unreachable!("not an other body"),
        }
    }
}

/// A context's members, as [`CorrelationContext::to_json`] spells them.
fn write_context<'a>(writer: &mut Writer<'a>, json: &'a Value) -> Result<Vec<(u64, WireValue)>, String> {
    let Value::Object(members) = json else {
        return Err("a context is not a JSON object".into());
    };
    let mut written = Vec::with_capacity(members.len());
    for (name, value) in members {
        let value = match value {
            Value::Null => WireValue::Null,
            Value::String(text) => WireValue::Text(writer.string(text)),
            Value::Number(number) if number.is_u64() => WireValue::Count(number.as_u64().unwrap_or_default()),
            _ => return Err(format!("context member {name} is neither text, a count nor null")),
        };
        written.push((writer.string(name), value));
    }
    Ok(written)
}

fn write_batch(batch: &PreparedBatch) -> Result<WireBatch, String> {
    let contexts: Vec<Value> = batch.contexts.iter().map(|prepared| prepared.context.to_json()).collect();
    let mut writer = Writer {
        batch,
        strings: Vec::new(),
        string_index: FastHashMap::default(),
        place_index: FastHashMap::default(),
        last_stem: None,
        refs: Vec::new(),
        ref_index: FastHashMap::default(),
    };
    let contexts =
        contexts.iter().map(|json| write_context(&mut writer, json)).collect::<Result<Vec<_>, String>>()?;
    let count = batch.events.len();
    let mut events = WireEvents {
        tags: Vec::with_capacity(count),
        records: Vec::with_capacity(count),
        contexts: Vec::with_capacity(count),
        fingerprints: Vec::with_capacity(count * 8),
        id_stems: Vec::with_capacity(count),
        id_numbers: Vec::with_capacity(count),
        others: Vec::new(),
        activities: WireActivities {
            flags: Vec::with_capacity(count),
            domains: Vec::with_capacity(count),
            kinds: Vec::with_capacity(count),
            iterations: Vec::with_capacity(count),
            scopes: Vec::with_capacity(count),
            names: Vec::with_capacity(count),
            keys: Vec::new(),
            references: Vec::new(),
            cuda_correlation_ids: Vec::with_capacity(count),
            stream_ids: Vec::with_capacity(count),
            span_starts: Vec::with_capacity(count),
            span_lengths: Vec::with_capacity(count),
            listed: Vec::new(),
        },
    };
    let mut lasts = Lasts::default();
    for (number, event) in batch.events.iter().enumerate() {
        let context = &batch.contexts[event.context as usize];
        let id = batch.get(event.event_id);
        // Keys are not stored but computed again on reading: one that
        // would come out otherwise cannot be written.
        if context.event_key(id) != event.key {
            return Err(format!("prepared event {number}: its key is not that of its context and ID"));
        }
        events.records.push(delta(&mut lasts.record, event.record as u64));
        events.contexts.push(event.context);
        events.fingerprints.extend_from_slice(&event.fingerprint.to_le_bytes());
        let (stem, trailing) = split_number(id);
        events.id_stems.push(writer.stem(stem));
        events.id_numbers.push(trailing.map_or(0, |trailing| {
            // Both below 10^18: neither the difference nor its zigzag
            // overflows.
            let difference = trailing as i64 - lasts.number;
            lasts.number = trailing as i64;
            1 + zigzag(difference)
        }));
        match &event.body {
            PreparedBody::Untabled => events.tags.push(TAG_UNTABLED),
            PreparedBody::Activity(activity) => {
                events.tags.push(TAG_ACTIVITY);
                let producer = &*context.context.producer_id;
                write_activity(&mut writer, &mut events.activities, &mut lasts, activity, producer, id)
                    .map_err(|rule| format!("prepared event {number}: {rule}"))?;
            }
            body => {
                events.tags.push(TAG_OTHER);
                let other = writer.other(body);
                events.others.push(other);
            }
        }
    }
    Ok(WireBatch {
        labels: batch.labels,
        strings: writer.strings,
        refs: writer.refs,
        contexts,
        interval_starts: {
            let mut last = 0;
            batch.intervals.iter().map(|interval| delta(&mut last, interval.start_ns())).collect()
        },
        interval_lengths: batch
            .intervals
            .iter()
            .map(|interval| interval.end_ns() - interval.start_ns())
            .collect(),
        events,
    })
}

fn write_activity<'a>(
    writer: &mut Writer<'a>,
    columns: &mut WireActivities,
    lasts: &mut Lasts,
    activity: &PreparedActivity,
    producer: &str,
    id: &str,
) -> Result<(), String> {
    let batch = writer.batch;
    let mut flags = 0;
    let form = match activity.reference {
        Some(reference) => {
            let view = batch.get_ref(reference);
            if reference_key(view) != activity.key {
                return Err("its activity key is not that of its reference".into());
            }
            if view.producer_id() == producer && view.id() == id {
                REF_EVENT
            } else {
                columns.references.push(writer.reference(reference));
                REF_STORED
            }
        }
        None => match RefView::new(producer, id) {
            Some(derived) if reference_key(derived) == activity.key => REF_DERIVED,
            _ => {
                columns.keys.extend_from_slice(&activity.key.to_le_bytes());
                REF_KEY_STORED
            }
        },
    };
    flags |= form << REF_SHIFT;
    let busy = match activity.busy {
        Busy::Unknown => BUSY_UNKNOWN,
        Busy::Span(start, end) => {
            columns.span_starts.push(delta(&mut lasts.span_end, start));
            lasts.span_end = end;
            columns.span_lengths.push(end - start);
            BUSY_SPAN
        }
        Busy::Listed(first, count) => {
            columns.listed.extend([first as u64, count as u64]);
            BUSY_LISTED
        }
    };
    flags |= busy << BUSY_SHIFT;
    if let Some(correlation) = activity.cuda_correlation_id {
        flags |= HAS_CUDA_CORRELATION;
        columns.cuda_correlation_ids.push(delta(&mut lasts.cuda_correlation_id, correlation));
    }
    if let Some(stream) = activity.stream_id {
        flags |= HAS_STREAM;
        columns.stream_ids.push(stream);
    }
    columns.flags.push(flags);
    // Every domain is in ALL, which has four.
    let domain = ActivityDomain::ALL.iter().position(|known| *known == activity.domain).unwrap_or(0);
    columns.domains.push(domain as u8);
    columns.kinds.push(writer.str(activity.kind));
    let iteration = writer.optional(activity.iteration);
    columns.iterations.push(iteration);
    let scope = writer.optional(activity.scope);
    columns.scopes.push(scope);
    let name = activity.name.map_or(0, |name| 1 + writer.str(name));
    columns.names.push(name);
    Ok(())
}

impl Serialize for PreparedBatch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        write_batch(self).map_err(serde::ser::Error::custom)?.serialize(serializer)
    }
}
