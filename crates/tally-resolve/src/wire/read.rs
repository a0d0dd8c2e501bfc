//! Reading: the wire columns put back together into a [`PreparedBatch`],
//! every index, span and count checked against the rest of the batch.

use super::*;

/// A column read value by value; running short is the batch's fault.
struct Column<T> {
    name: &'static str,
    values: std::vec::IntoIter<T>,
}

impl<T> Column<T> {
    fn new(name: &'static str, values: Vec<T>) -> Self {
        Self { name, values: values.into_iter() }
    }

    fn next(&mut self) -> Result<T, String> {
        self.values.next().ok_or_else(|| format!("the {} column ends before it", self.name))
    }

    /// Checks that every value was read.
    fn end(self) -> Result<(), String> {
        match self.values.len() {
            0 => Ok(()),
            left => Err(format!("the {} column has {left} values no event reads", self.name)),
        }
    }
}

/// The activity columns, read.
struct ActivityColumns {
    flags: Column<u8>,
    domains: Column<u8>,
    kinds: Column<u64>,
    iterations: Column<u64>,
    scopes: Column<u64>,
    names: Column<u64>,
    keys: std::vec::IntoIter<u8>,
    references: Column<u64>,
    cuda_correlation_ids: Column<u64>,
    stream_ids: Column<u64>,
    span_starts: Column<u64>,
    span_lengths: Column<u64>,
    listed: Column<u64>,
}

impl ActivityColumns {
    fn new(wire: WireActivities) -> Self {
        Self {
            flags: Column::new("activity flags", wire.flags),
            domains: Column::new("activity domain", wire.domains),
            kinds: Column::new("activity kind", wire.kinds),
            iterations: Column::new("activity iteration", wire.iterations),
            scopes: Column::new("activity scope", wire.scopes),
            names: Column::new("activity name", wire.names),
            keys: wire.keys.into_iter(),
            references: Column::new("activity reference", wire.references),
            cuda_correlation_ids: Column::new("CUDA correlation ID", wire.cuda_correlation_ids),
            stream_ids: Column::new("stream ID", wire.stream_ids),
            span_starts: Column::new("span start", wire.span_starts),
            span_lengths: Column::new("span length", wire.span_lengths),
            listed: Column::new("listed intervals", wire.listed),
        }
    }

    fn end(self) -> Result<(), String> {
        self.flags.end()?;
        self.domains.end()?;
        self.kinds.end()?;
        self.iterations.end()?;
        self.scopes.end()?;
        self.names.end()?;
        if self.keys.len() != 0 {
            return Err(format!("the activity key column has {} bytes no event reads", self.keys.len()));
        }
        self.references.end()?;
        self.cuda_correlation_ids.end()?;
        self.stream_ids.end()?;
        self.span_starts.end()?;
        self.span_lengths.end()?;
        self.listed.end()
    }
}

/// Reads a wire batch back, checking each part against the rest.
struct Reader {
    /// Each string of the table, in the batch's text.
    strings: Vec<Str>,
    refs: Vec<RefStr>,
    intervals: usize,
}

impl Reader {
    fn str(&self, index: u64) -> Result<Str, String> {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.strings.get(index).copied())
            .ok_or_else(|| format!("string {index} is not in the batch's {}", self.strings.len()))
    }

    fn reference(&self, index: u64) -> Result<RefStr, String> {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.refs.get(index).copied())
            .ok_or_else(|| format!("reference {index} is not in the batch's {}", self.refs.len()))
    }

    fn optional(&self, value: Optional) -> Result<Option<RefStr>, String> {
        value.checked_sub(1).map(|index| self.reference(index)).transpose()
    }

    fn optional_str(&self, value: Optional) -> Result<Option<Str>, String> {
        value.checked_sub(1).map(|index| self.str(index)).transpose()
    }

    fn other(&self, other: WireOther) -> Result<PreparedBody, String> {
        let span = |start: Option<u64>, end: Option<u64>| {
            Span::new(start, end).map_err(|_| "a span ends before it starts".to_owned())
        };
        Ok(match other {
            WireOther::Request { request, attempt } => {
                PreparedBody::Request { request: self.reference(request)?, attempt: self.optional(attempt)? }
            }
            WireOther::Iteration { iteration, start_ns, end_ns } => PreparedBody::Iteration {
                iteration: self.reference(iteration)?,
                span: span(start_ns, end_ns)?,
            },
            WireOther::Stage { stage, request, iteration } => PreparedBody::Stage {
                stage: self.reference(stage)?,
                request: self.optional(request)?,
                iteration: self.optional(iteration)?,
            },
            WireOther::Membership { request, attempt, iteration, role } => PreparedBody::Membership {
                request: self.reference(request)?,
                attempt: self.optional(attempt)?,
                iteration: self.reference(iteration)?,
                role: self.str(role)?,
            },
            WireOther::Alignment { from, to, offset_ns, uncertainty_ns, start_ns, end_ns } => {
                PreparedBody::Alignment {
                    from: self.str(from)?,
                    to: self.str(to)?,
                    offset_ns,
                    uncertainty_ns,
                    validity: span(start_ns, end_ns)?,
                }
            }
        })
    }
}

impl TryFrom<WireBatch> for PreparedBatch {
    type Error = String;

    fn try_from(wire: WireBatch) -> Result<Self, String> {
        let mut batch = PreparedBatch::with_capacity(0);
        batch.labels = wire.labels;
        // Equal contexts are one context of the batch.
        let mut contexts = Vec::with_capacity(wire.contexts.len());
        let mut known: FastHashMap<Arc<CorrelationContext>, u32> = FastHashMap::default();
        for (number, members) in wire.contexts.into_iter().enumerate() {
            let fail = |rule: &str| format!("context {number}: {rule}");
            let text = |index: u64| {
                usize::try_from(index).ok().and_then(|index| wire.strings.get(index)).ok_or_else(|| {
                    fail(&format!("string {index} is not in the batch's {}", wire.strings.len()))
                })
            };
            let mut json = serde_json::Map::with_capacity(members.len());
            for (name, value) in members {
                let value = match value {
                    WireValue::Null => Value::Null,
                    WireValue::Text(index) => Value::from(text(index)?.as_str()),
                    WireValue::Count(count) => Value::from(count),
                };
                let name = text(name)?;
                if json.insert(name.clone(), value).is_some() {
                    return Err(fail(&format!("{name} is given twice")));
                }
            }
            let context = CorrelationContext::from_json(Value::Object(json))
                .map_err(|error| fail(&error.to_string()))?;
            let context = Arc::new(context);
            let index = match known.get(&context) {
                Some(&index) => index,
                None => {
                    let index = batch.push_context(Arc::clone(&context));
                    known.insert(context, index);
                    index
                }
            };
            contexts.push(index);
        }
        if wire.interval_starts.len() != wire.interval_lengths.len() {
            return Err("the interval columns differ in length".into());
        }
        let mut last = 0;
        for (number, (&start, &length)) in wire.interval_starts.iter().zip(&wire.interval_lengths).enumerate()
        {
            let start = undelta(&mut last, start);
            let interval = start
                .checked_add(length)
                .and_then(|end| Interval::new(start, end))
                .ok_or_else(|| format!("interval {number}: it ends past the largest time"))?;
            batch.intervals.push(interval);
        }
        batch.text.reserve(wire.strings.iter().map(String::len).sum());
        let strings: Vec<Str> = wire.strings.iter().map(|text| batch.push_text(text)).collect();
        let mut refs = Vec::with_capacity(wire.refs.len());
        for (number, &(producer, id)) in wire.refs.iter().enumerate() {
            let part = |index: u64| {
                usize::try_from(index)
                    .ok()
                    .and_then(|index| strings.get(index).copied())
                    .filter(|part| part.len > 0)
                    .ok_or_else(|| {
                        format!("reference {number}: a part is not a non-empty string of the batch")
                    })
            };
            refs.push(RefStr { producer: part(producer)?, id: part(id)? });
        }
        let reader = Reader { strings, refs, intervals: batch.intervals.len() };
        let events = wire.events;
        let count = events.tags.len();
        if count > MAX_EVENTS {
            return Err(format!("{count} events, over the {MAX_EVENTS} a batch may hold"));
        }
        let lengths =
            [events.records.len(), events.contexts.len(), events.id_stems.len(), events.id_numbers.len()];
        if lengths.iter().any(|&length| length != count) || events.fingerprints.len() != count * 8 {
            return Err(format!("the event columns differ in length from the {count} events"));
        }
        batch.events.reserve_exact(count);
        let mut records = events.records.into_iter();
        let mut wire_contexts = events.contexts.into_iter();
        let mut fingerprints = events.fingerprints.chunks_exact(8);
        let mut stems = events.id_stems.into_iter();
        let mut numbers = events.id_numbers.into_iter();
        let mut others = Column::new("other events", events.others);
        let mut activities = ActivityColumns::new(events.activities);
        // Each context's producer, in the text once it is needed.
        let mut producers: Vec<Option<Str>> = vec![None; batch.contexts.len()];
        let mut lasts = Lasts::default();
        for (number, tag) in events.tags.into_iter().enumerate() {
            let fail = |rule: String| format!("prepared event {number}: {rule}");
            // The columns were checked to hold `count` values each.
            let (Some(record), Some(context), Some(fingerprint), Some(stem), Some(trailing)) =
                (records.next(), wire_contexts.next(), fingerprints.next(), stems.next(), numbers.next())
            else {
                unreachable!("the event columns hold one value per event")
            };
            let record = usize::try_from(undelta(&mut lasts.record, record))
                .map_err(|_| fail("its position is too large".into()))?;
            let context = *usize::try_from(context)
                .ok()
                .and_then(|context| contexts.get(context))
                .ok_or_else(|| fail("its context is not in the batch".into()))?;
            let mut bytes = [0; 8];
            bytes.copy_from_slice(fingerprint);
            let stem = reader.str(stem).map_err(fail)?;
            let event_id = match trailing.checked_sub(1) {
                None => stem,
                Some(difference) => {
                    if stem.len > MAX_STEM {
                        return Err(fail(format!("an ID's stem is over {MAX_STEM} bytes")));
                    }
                    let trailing = lasts
                        .number
                        .checked_add(unzigzag(difference))
                        .filter(|trailing| (0..NUMBER_LIMIT as i64).contains(trailing))
                        .ok_or_else(|| fail("its ID's number is out of range".into()))?;
                    lasts.number = trailing;
                    let start = batch.text.len();
                    batch.text.extend_from_within(stem.start..stem.start + stem.len);
                    batch.text.push_str(Decimal::new(trailing as u64).as_str());
                    Str { start, len: batch.text.len() - start }
                }
            };
            let prepared = &batch.contexts[context as usize];
            let key = prepared.event_key(batch.get(event_id));
            let body = match tag {
                TAG_UNTABLED => PreparedBody::Untabled,
                TAG_OTHER => reader.other(others.next().map_err(fail)?).map_err(fail)?,
                TAG_ACTIVITY => {
                    let producer = match producers[context as usize] {
                        Some(producer) => producer,
                        None => {
                            let text = Arc::clone(&batch.contexts[context as usize].context);
                            let producer = batch.push_text(&text.producer_id);
                            producers[context as usize] = Some(producer);
                            producer
                        }
                    };
                    let activity =
                        read_activity(&reader, &mut activities, &mut lasts, &batch, producer, event_id)
                            .map_err(fail)?;
                    PreparedBody::Activity(activity)
                }
                other => return Err(fail(format!("unknown kind {other}"))),
            };
            batch.events.push(PreparedEvent {
                record,
                context,
                key,
                fingerprint: u64::from_le_bytes(bytes),
                event_id,
                body,
            });
        }
        others.end()?;
        activities.end()?;
        Ok(batch)
    }
}

fn read_activity(
    reader: &Reader,
    columns: &mut ActivityColumns,
    lasts: &mut Lasts,
    batch: &PreparedBatch,
    producer: Str,
    event_id: Str,
) -> Result<PreparedActivity, String> {
    let flags = columns.flags.next()?;
    if flags & !FLAGS_KNOWN != 0 {
        return Err(format!("unknown activity flags {flags:#x}"));
    }
    let domain = columns.domains.next()?;
    let domain = *ActivityDomain::ALL
        .get(usize::from(domain))
        .ok_or_else(|| format!("activity domain {domain} is not one of {}", ActivityDomain::ALL.len()))?;
    let key_of = |reference: RefStr| {
        RefView::new(batch.get(reference.producer), batch.get(reference.id))
            .map(reference_key)
            .ok_or_else(|| "an activity reference has an empty producer_id or id".to_owned())
    };
    let own = RefStr { producer, id: event_id };
    let (reference, key) = match (flags >> REF_SHIFT) & 0b11 {
        REF_DERIVED => (None, key_of(own)?),
        REF_KEY_STORED => {
            let mut bytes = [0; 16];
            for byte in &mut bytes {
                *byte = columns.keys.next().ok_or("the activity key column ends before it")?;
            }
            (None, u128::from_le_bytes(bytes))
        }
        REF_EVENT => (Some(own), key_of(own)?),
        _ => {
            let reference = reader.reference(columns.references.next()?)?;
            (Some(reference), key_of(reference)?)
        }
    };
    let busy = match (flags >> BUSY_SHIFT) & 0b11 {
        BUSY_UNKNOWN => Busy::Unknown,
        BUSY_SPAN => {
            let start = undelta(&mut lasts.span_end, columns.span_starts.next()?);
            let end = start
                .checked_add(columns.span_lengths.next()?)
                .ok_or("an activity's span ends past the largest time")?;
            lasts.span_end = end;
            Busy::Span(start, end)
        }
        BUSY_LISTED => {
            let (first, count) = (columns.listed.next()?, columns.listed.next()?);
            let fits = first.checked_add(count).is_some_and(|end| end <= reader.intervals as u64);
            if !fits {
                return Err("an activity's intervals lie outside the batch's intervals".into());
            }
            Busy::Listed(first as usize, count as usize)
        }
        other => return Err(format!("unknown busy form {other}")),
    };
    let cuda_correlation_id = (flags & HAS_CUDA_CORRELATION != 0)
        .then(|| {
            columns.cuda_correlation_ids.next().map(|value| undelta(&mut lasts.cuda_correlation_id, value))
        })
        .transpose()?;
    let stream_id = (flags & HAS_STREAM != 0).then(|| columns.stream_ids.next()).transpose()?;
    Ok(PreparedActivity {
        key,
        reference,
        kind: reader.str(columns.kinds.next()?)?,
        domain,
        iteration: reader.optional(columns.iterations.next()?)?,
        scope: reader.optional(columns.scopes.next()?)?,
        name: reader.optional_str(columns.names.next()?)?,
        cuda_correlation_id,
        stream_id,
        busy,
    })
}

impl<'de> Deserialize<'de> for PreparedBatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireBatch::deserialize(deserializer)?;
        PreparedBatch::try_from(wire).map_err(serde::de::Error::custom)
    }
}
