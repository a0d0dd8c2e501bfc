//! The streaming reader of Kineto (PyTorch profiler) Chrome-trace JSON.
//!
//! The top-level object is walked key by key. `traceEvents` is visited one
//! element at a time: each element is deserialized from the read buffer
//! into a [`RawEvent`] that borrows its strings and keeps `ts` and `dur` as
//! their JSON text, and only the compact rows of [`Collected`] outlive it.
//! The few header keys the import needs are kept; every other value
//! (`INFO` logs, unknown keys) is skipped without being built.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::collect::{Collected, GpuEvent, GpuKind, NONE_U32, NONE_U64, RuntimeKind, RuntimeRow, SpanRow};
use crate::decimal::{self, DecimalError};
use crate::json_stream::{Element, JsonStream, Parsed, StreamError, parse_one};
use crate::ranges::SpanMatcher;

mod info;
mod scan;
mod split;

pub(crate) use info::kineto_info;
pub(crate) use split::{SPLIT_MIN_BYTES, read_kineto_split};

/// What [`read_events`] does when its stream stops at its pause offset, an
/// element's start (`collected` holds the events before it, `index` of
/// them): the number of events from there to the end of the array when
/// they were read elsewhere and merged (the stream then stands after the
/// array's `]`), or `None` to read them here.
type Resume<'a, R> =
    dyn FnMut(&mut JsonStream<R>, &mut Collected, u64) -> Result<Option<u64>, KinetoError> + 'a;

/// The top-level values of a Kineto trace the import uses.
#[derive(Debug, Default)]
pub(crate) struct KinetoHeader {
    /// `baseTimeNanoseconds`, exact.
    pub(crate) base_ns: Option<u64>,
    /// Small header values kept as JSON, by key.
    pub(crate) values: Map<String, Value>,
    /// The document had a `traceEvents` array (or was one).
    pub(crate) saw_events: bool,
}

/// Header keys kept as JSON; `baseTimeNanoseconds` is read from its text.
const KEPT_KEYS: [&str; 11] = [
    "schemaVersion",
    "distributedInfo",
    "deviceProperties",
    "host_name",
    "trace_id",
    "traceName",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "roctracer_version",
    "vllm_version",
];

/// Why the document is not a trace, as opposed to not being JSON.
#[derive(Debug)]
pub(crate) enum KinetoError {
    Stream(StreamError),
    NotTrace(String),
    Header(String),
}

impl From<StreamError> for KinetoError {
    fn from(error: StreamError) -> Self {
        KinetoError::Stream(error)
    }
}

/// Reads a whole trace document into `collected`.
pub(crate) fn read_kineto<R: Read>(
    source: R,
    collected: &mut Collected,
    spans: &SpanMatcher,
    max_event_bytes: usize,
) -> Result<KinetoHeader, KinetoError> {
    read_stream(JsonStream::new(source).with_max_value(max_event_bytes), collected, spans, &mut |_, _, _| {
        Ok(None)
    })
}

fn read_stream<R: Read>(
    mut stream: JsonStream<R>,
    collected: &mut Collected,
    spans: &SpanMatcher,
    resume: &mut Resume<'_, R>,
) -> Result<KinetoHeader, KinetoError> {
    let mut header = KinetoHeader::default();
    match stream.peek()? {
        Some(b'{') => {
            stream.advance();
            read_object(&mut stream, collected, spans, &mut header, resume)?;
        }
        // Chrome's JSON Array Format: the document is the event list.
        Some(b'[') => {
            stream.advance();
            read_events(&mut stream, collected, spans, resume)?;
            header.saw_events = true;
        }
        Some(_) => return Err(KinetoError::NotTrace("the document is not a JSON object".into())),
        None => return Err(KinetoError::NotTrace("the file is empty".into())),
    }
    // A document without events is no trace, whatever follows it (an
    // artifact's first line, say): that is the more useful thing to say.
    if !header.saw_events {
        return Err(KinetoError::NotTrace("no traceEvents array".into()));
    }
    if stream.peek()?.is_some() {
        return Err(stream.syntax("data after the end of the trace").into());
    }
    Ok(header)
}

fn read_object<R: Read>(
    stream: &mut JsonStream<R>,
    collected: &mut Collected,
    spans: &SpanMatcher,
    header: &mut KinetoHeader,
    resume: &mut Resume<'_, R>,
) -> Result<(), KinetoError> {
    if stream.peek()? == Some(b'}') {
        stream.advance();
        return Ok(());
    }
    loop {
        let key = match stream.peek()? {
            Some(b'"') => match stream.owned::<String>()? {
                Parsed::Value(key, _) => key,
                Parsed::Mismatch(message, _) => return Err(stream.syntax(message).into()),
            },
            Some(_) => return Err(stream.syntax("expected a key").into()),
            None => return Err(StreamError::Eof { offset: stream.offset() }.into()),
        };
        match stream.peek()? {
            Some(b':') => stream.advance(),
            Some(_) => return Err(stream.syntax("expected ':' after a key").into()),
            None => return Err(StreamError::Eof { offset: stream.offset() }.into()),
        }
        if stream.peek()?.is_none() {
            return Err(StreamError::Eof { offset: stream.offset() }.into());
        }
        read_member(stream, &key, collected, spans, header, resume)?;
        match stream.peek()? {
            Some(b',') => stream.advance(),
            Some(b'}') => {
                stream.advance();
                return Ok(());
            }
            Some(_) => return Err(stream.syntax("expected ',' or '}' after a value").into()),
            None => return Err(StreamError::Eof { offset: stream.offset() }.into()),
        }
    }
}

fn read_member<R: Read>(
    stream: &mut JsonStream<R>,
    key: &str,
    collected: &mut Collected,
    spans: &SpanMatcher,
    header: &mut KinetoHeader,
    resume: &mut Resume<'_, R>,
) -> Result<(), KinetoError> {
    match key {
        "traceEvents" => {
            if stream.peek()? != Some(b'[') {
                return Err(KinetoError::NotTrace("traceEvents is not an array".into()));
            }
            stream.advance();
            if header.saw_events {
                // A second `traceEvents`: Python's json keeps the last value
                // of a repeated key (and so stormlog reads only that one).
                *collected = Collected::default();
            }
            read_events(stream, collected, spans, resume)?;
            header.saw_events = true;
        }
        "baseTimeNanoseconds" => match stream.owned::<Box<RawValue>>()? {
            // Last key wins here too, a `null` included.
            Parsed::Value(raw, _) if raw.get() == "null" => header.base_ns = None,
            Parsed::Value(raw, _) => match decimal::nanos_text(raw.get()) {
                Ok(nanos) => header.base_ns = Some(nanos.value),
                Err(error) => {
                    return Err(KinetoError::Header(format!(
                        "baseTimeNanoseconds {} is {error}",
                        tally_core::shown(raw.get())
                    )));
                }
            },
            Parsed::Mismatch(message, _) => return Err(KinetoError::Header(message)),
        },
        _ if KEPT_KEYS.contains(&key) => {
            if let Parsed::Value(value, _) = stream.owned::<Value>()? {
                header.values.insert(key.to_owned(), value);
            }
        }
        _ => stream.skip()?,
    }
    Ok(())
}

/// Reads the elements of an array after its `[` through its `]`; returns
/// how many there were.
fn read_events<R: Read>(
    stream: &mut JsonStream<R>,
    collected: &mut Collected,
    spans: &SpanMatcher,
    resume: &mut Resume<'_, R>,
) -> Result<u64, KinetoError> {
    if stream.peek()? == Some(b']') {
        stream.advance();
        return Ok(0);
    }
    let mut index: u64 = 0;
    let mut layout = scan::Layout::default();
    loop {
        match stream.peek_element()? {
            Element::Byte => {}
            Element::End => return Err(StreamError::Eof { offset: stream.offset() }.into()),
            Element::Paused => {
                match resume(stream, collected, index)? {
                    Some(rest) => return Ok(index + rest),
                    None => stream.unpause(),
                }
                continue;
            }
        }
        let parsed = stream.value(|slice| {
            if let Some((event, used)) = scan::scan_event(slice, &mut layout) {
                add_event(collected, spans, &event, index);
                return Ok(Parsed::Value((), used));
            }
            parse_event(collected, spans, slice, index)
        })?;
        if let Parsed::Mismatch(message, _) = parsed {
            collected.events_read += 1;
            collected.skip_event("malformed event", index, || format!(": {message}"));
        }
        index += 1;
        match stream.peek()? {
            Some(b',') => stream.advance(),
            Some(b']') => {
                stream.advance();
                return Ok(index);
            }
            Some(_) => return Err(stream.syntax("expected ',' or ']' after an event").into()),
            None => return Err(StreamError::Eof { offset: stream.offset() }.into()),
        }
    }
}

/// The serde path: every event the fast scanner leaves alone.
fn parse_event(
    collected: &mut Collected,
    spans: &SpanMatcher,
    slice: &[u8],
    index: u64,
) -> Result<Parsed<()>, serde_json::Error> {
    match parse_one::<RawEvent<'_>>(slice)? {
        Parsed::Value(event, used) => {
            add_event(collected, spans, &event, index);
            Ok(Parsed::Value((), used))
        }
        Parsed::Mismatch(message, used) => Ok(Parsed::Mismatch(message, used)),
    }
}

/// What a category makes of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    Gpu(GpuKind),
    Runtime(RuntimeKind),
    GpuAnnotation,
    Other,
}

/// Categories are matched in any capitalisation: PyTorch before 1.9 wrote
/// `Kernel`, `Memcpy`, `Memset` and `Runtime`.
fn category(cat: &str) -> Category {
    const TABLE: [(&str, Category); 9] = [
        ("kernel", Category::Gpu(GpuKind::Kernel)),
        ("gpu_memcpy", Category::Gpu(GpuKind::Memcpy)),
        ("memcpy", Category::Gpu(GpuKind::Memcpy)),
        ("gpu_memset", Category::Gpu(GpuKind::Memset)),
        ("memset", Category::Gpu(GpuKind::Memset)),
        ("cuda_runtime", Category::Runtime(RuntimeKind::Runtime)),
        ("runtime", Category::Runtime(RuntimeKind::Runtime)),
        ("cuda_driver", Category::Runtime(RuntimeKind::Driver)),
        ("gpu_user_annotation", Category::GpuAnnotation),
    ];
    for (name, value) in TABLE {
        if cat.eq_ignore_ascii_case(name) {
            return value;
        }
    }
    if cat.eq_ignore_ascii_case("driver") { Category::Runtime(RuntimeKind::Driver) } else { Category::Other }
}

fn add_event(collected: &mut Collected, spans: &SpanMatcher, event: &RawEvent<'_>, index: u64) {
    collected.events_read += 1;
    let category = event.cat.as_ref().map_or(Category::Other, |cat| category(cat.as_str()));
    let complete = event.ph.as_ref().is_some_and(|ph| ph.as_str() == "X");
    if !complete {
        if let Category::Gpu(_) = category {
            collected.ignore("GPU events not of phase X");
        }
        return;
    }
    let name = event.name.as_ref().map_or("", |name| name.as_str());
    match category {
        Category::Gpu(kind) => {
            let Some((start, end)) = times(collected, event, index, name) else {
                return;
            };
            let args = event.args.unwrap_or_default();
            let pid_device = match event.pid {
                Some(Id::Number(pid)) => Some(pid),
                _ => None,
            };
            // An ordinal of 2^32 - 1 would be the sentinel: no real device.
            let device = args.device.or(pid_device).and_then(|device| u32::try_from(device).ok());
            let name = collected.names.intern(name);
            collected.gpu.push(GpuEvent {
                start,
                end,
                correlation: args.correlation.unwrap_or(0),
                stream: args.stream.unwrap_or(NONE_U64),
                graph_id: args.graph_id.unwrap_or(0),
                pid: NONE_U64,
                name,
                device: device.unwrap_or(NONE_U32),
                device_uuid: NONE_U32,
                graph_node: false,
                kind,
            });
        }
        Category::Runtime(kind) => {
            let Some((pid, tid)) = thread(collected, event, index, name) else {
                return;
            };
            let Some((start, end)) = times(collected, event, index, name) else {
                return;
            };
            let args = event.args.unwrap_or_default();
            let name = collected.names.intern(name);
            collected.runtime.push(RuntimeRow {
                start,
                end,
                correlation: args.correlation.unwrap_or(0),
                pid,
                tid,
                name,
                kind,
            });
        }
        Category::GpuAnnotation => collected.ignore("gpu_user_annotation"),
        Category::Other => {
            let Some(scope) = spans.scope(name) else {
                return;
            };
            let Some((pid, tid)) = thread(collected, event, index, name) else {
                return;
            };
            let Some((start, end)) = times(collected, event, index, name) else {
                return;
            };
            let name = collected.names.intern(name);
            collected.spans.push(SpanRow { start, end, pid, tid, name, scope });
        }
    }
}

/// The event's start and end in ns, or a counted skip.
fn times(collected: &mut Collected, event: &RawEvent<'_>, index: u64, name: &str) -> Option<(u64, u64)> {
    let example = |what: &str| format!(" {:?}: {what}", tally_core::shown(name));
    let Some(ts) = event.ts.filter(|raw| *raw != "null") else {
        collected.skip_event("missing ts", index, || example("no ts"));
        return None;
    };
    let Some(dur) = event.dur.filter(|raw| *raw != "null") else {
        collected.skip_event("missing dur", index, || example("no dur"));
        return None;
    };
    let start = match decimal::micros_to_nanos(ts) {
        Ok(nanos) => nanos,
        Err(error) => {
            let reason = match error {
                DecimalError::Negative => "negative ts",
                DecimalError::OutOfRange => "ts out of range",
                DecimalError::NotANumber => "invalid ts",
            };
            collected.skip_event(reason, index, || example(&format!("ts {} is {error}", ts)));
            return None;
        }
    };
    let duration = match decimal::micros_to_nanos(dur) {
        Ok(nanos) => nanos,
        Err(error) => {
            let reason = match error {
                DecimalError::Negative => "negative dur",
                DecimalError::OutOfRange => "dur out of range",
                DecimalError::NotANumber => "invalid dur",
            };
            collected.skip_event(reason, index, || example(&format!("dur {} is {error}", dur)));
            return None;
        }
    };
    let Some(end) = start.value.checked_add(duration.value) else {
        collected.skip_event("ts out of range", index, || example("ts + dur is beyond 2^64 ns"));
        return None;
    };
    collected.rounded_timestamps += u64::from(start.rounded) + u64::from(duration.rounded);
    collected.sub_microsecond |= start.value % 1000 != 0 || duration.value % 1000 != 0;
    Some((start.value, end))
}

/// The event's process and thread keys, or a counted skip.
fn thread(collected: &mut Collected, event: &RawEvent<'_>, index: u64, name: &str) -> Option<(u64, u64)> {
    let mut key = |id: &Option<Id<'_>>| match id {
        Some(Id::Number(number)) => Some(collected.threads.number(*number)),
        Some(Id::Text(text)) => Some(collected.threads.text(text.as_str())),
        None => None,
    };
    match (key(&event.pid), key(&event.tid)) {
        (Some(pid), Some(tid)) => Some((pid, tid)),
        _ => {
            collected.skip_event("missing pid or tid", index, || {
                format!(" {:?}: no pid or tid", tally_core::shown(name))
            });
            None
        }
    }
}

/// One trace event, borrowing from the read buffer. Unknown keys are
/// skipped by the deserializer without being built; a repeated key keeps
/// its last value, as Python's json does (serde's derive would reject it).
#[derive(Default)]
struct RawEvent<'a> {
    ph: Option<Text<'a>>,
    cat: Option<Text<'a>>,
    name: Option<Text<'a>>,
    pid: Option<Id<'a>>,
    tid: Option<Id<'a>>,
    /// `ts` and `dur` as their JSON text.
    ts: Option<&'a str>,
    dur: Option<&'a str>,
    args: Option<Args>,
}

impl<'de: 'a, 'a> Deserialize<'de> for RawEvent<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EventVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for EventVisitor<'a> {
            type Value = RawEvent<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a trace event object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<RawEvent<'a>, M::Error> {
                let mut event = RawEvent::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "ph" => event.ph = map.next_value()?,
                        "cat" => event.cat = map.next_value()?,
                        "name" => event.name = map.next_value()?,
                        "pid" => event.pid = map.next_value()?,
                        "tid" => event.tid = map.next_value()?,
                        "ts" => event.ts = map.next_value::<Option<&RawValue>>()?.map(RawValue::get),
                        "dur" => event.dur = map.next_value::<Option<&RawValue>>()?.map(RawValue::get),
                        "args" => event.args = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(event)
            }
        }
        deserializer.deserialize_map(EventVisitor(std::marker::PhantomData))
    }
}

/// A string, borrowed unless it had escapes.
struct Text<'a>(Cow<'a, str>);

impl Text<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(value)))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(value.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

/// A `pid` or `tid`: a number, or a string such as `"Spans"`.
enum Id<'a> {
    Number(u64),
    Text(Text<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Id<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for IdVisitor<'a> {
            type Value = Id<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Id<'a>, E> {
                Ok(Id::Number(value))
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Id<'a>, E> {
                Ok(match u64::try_from(value) {
                    Ok(number) => Id::Number(number),
                    Err(_) => Id::Text(Text(Cow::Owned(value.to_string()))),
                })
            }
            fn visit_f64<E: de::Error>(self, value: f64) -> Result<Id<'a>, E> {
                Ok(Id::Text(Text(Cow::Owned(value.to_string()))))
            }
            fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Id<'a>, E> {
                Ok(Id::Text(Text(Cow::Borrowed(value))))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<Id<'a>, E> {
                Ok(Id::Text(Text(Cow::Owned(value.to_owned()))))
            }
        }
        deserializer.deserialize_any(IdVisitor(std::marker::PhantomData))
    }
}

/// The `args` the import reads; every other key is skipped.
#[derive(Deserialize, Default, Clone, Copy)]
struct Args {
    #[serde(default, deserialize_with = "lenient")]
    device: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    stream: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    correlation: Option<u64>,
    #[serde(default, rename = "graph id", deserialize_with = "lenient")]
    graph_id: Option<u64>,
}

/// An integer read as stormlog's `_optional_int` reads it: a non-negative
/// integer, an integral float or a decimal string; anything else (a
/// negative stream, `null`, an object) is absent rather than an error.
fn lenient<'de, D: de::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    struct Lenient;
    impl<'de> Visitor<'de> for Lenient {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any value")
        }
        fn visit_u64<E: de::Error>(self, value: u64) -> Result<Option<u64>, E> {
            Ok(Some(value))
        }
        fn visit_i64<E: de::Error>(self, value: i64) -> Result<Option<u64>, E> {
            Ok(u64::try_from(value).ok())
        }
        fn visit_f64<E: de::Error>(self, value: f64) -> Result<Option<u64>, E> {
            // Python's int() truncates toward zero; u64::MAX as f64 rounds up
            // to 2^64, so the bound is strict.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "range checked")]
            let converted =
                (0.0..18_446_744_073_709_551_616.0).contains(&value).then(|| value.trunc() as u64);
            Ok(converted)
        }
        fn visit_str<E: de::Error>(self, value: &str) -> Result<Option<u64>, E> {
            Ok(value.trim().parse().ok())
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Option<u64>, D::Error> {
            deserializer.deserialize_any(Lenient)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u64>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u64>, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    deserializer.deserialize_any(Lenient)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<(KinetoHeader, Collected), KinetoError> {
        let mut collected = Collected::default();
        let matcher = SpanMatcher::new(crate::ranges::default_pattern());
        let header =
            read_kineto(text.as_bytes(), &mut collected, &matcher, crate::json_stream::DEFAULT_MAX_VALUE)?;
        Ok((header, collected))
    }

    #[test]
    fn header_after_events_and_exact_times() {
        let text = r#"{"traceEvents": [
            {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4458676983543.183,
             "dur": 41.407, "args": {"device": 3, "stream": 7, "correlation": 12, "grid": [1, 2, 3]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11,
             "ts": 4458676983500, "dur": 5, "args": {"correlation": 12}},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 10, "tid": 11,
             "ts": 4458676983000, "dur": 1000.5},
            {"ph": "f", "cat": "ac2g", "id": 1}
          ], "INFO": ["log"], "baseTimeNanoseconds": 1711964646000000000}"#;
        let (header, collected) = read(text).unwrap();
        assert_eq!(header.base_ns, Some(1_711_964_646_000_000_000));
        assert_eq!(collected.events_read, 4);
        let kernel = collected.gpu[0];
        assert_eq!((kernel.start, kernel.end), (4_458_676_983_543_183, 4_458_676_983_584_590));
        assert_eq!((kernel.device, kernel.stream, kernel.correlation), (3, 7, 12));
        assert_eq!(collected.runtime[0].correlation, 12);
        assert_eq!(collected.spans[0].end - collected.spans[0].start, 1_000_500);
    }

    #[test]
    fn bad_events_are_counted_not_fatal() {
        let text = r#"{"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "no ts", "pid": 0, "tid": 7, "dur": 1},
            {"ph": "X", "cat": "kernel", "name": "no dur", "pid": 0, "tid": 7, "ts": 1},
            {"ph": "X", "cat": "kernel", "name": "neg", "pid": 0, "tid": 7, "ts": 1, "dur": -2},
            {"ph": "X", "cat": "kernel", "name": ["not", "a", "string"], "ts": 1, "dur": 1},
            7,
            {"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": 1, "dur": 2}
        ]}"#;
        let (_, collected) = read(text).unwrap();
        assert_eq!(collected.gpu.len(), 1);
        let skipped: Vec<(&str, u64)> = collected.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            skipped,
            vec![("malformed event", 2), ("missing dur", 1), ("missing ts", 1), ("negative dur", 1)]
        );
        assert_eq!(collected.events_read, 6);
    }

    #[test]
    fn documents_that_are_not_traces() {
        assert!(matches!(read("{}"), Err(KinetoError::NotTrace(_))));
        assert!(matches!(read(""), Err(KinetoError::NotTrace(_))));
        assert!(matches!(read("{\"traceEvents\": 5}"), Err(KinetoError::NotTrace(_))));
        assert!(matches!(read("{\"traceEvents\": [{}, "), Err(KinetoError::Stream(StreamError::Eof { .. }))));
        assert!(matches!(read("{\"traceEvents\": [}"), Err(KinetoError::Stream(StreamError::Syntax { .. }))));
        assert!(matches!(
            read("{\"traceEvents\": []} x"),
            Err(KinetoError::Stream(StreamError::Syntax { .. }))
        ));
        assert!(read("[]").is_ok());
    }

    /// Everything the reader keeps, for comparing two readings.
    fn rows(collected: &Collected) -> String {
        let gpu: Vec<_> = collected
            .gpu
            .iter()
            .map(|row| {
                (row.start, row.end, row.correlation, row.stream, row.device, collected.name(row.name))
            })
            .collect();
        let runtime: Vec<_> =
            collected.runtime.iter().map(|row| (row.start, row.end, row.pid, row.tid)).collect();
        let spans: Vec<_> =
            collected.spans.iter().map(|row| (row.start, row.end, collected.name(row.name))).collect();
        format!("{gpu:?} {runtime:?} {spans:?} {:?} {}", collected.skipped, collected.events_read)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Values cut anywhere by the end of the buffer are read as if whole.
        #[test]
        fn chunk_boundaries_do_not_change_the_reading(chunk in 1usize..48, seed in 0u64..1000) {
            let mut events = Vec::new();
            for index in 0..8 + seed % 8 {
                let ts = 1_682_725_898_236_567u64 + index * 13 + seed;
                events.push(format!(
                    r#"{{"ph":"X","cat":"{}","name":"né{index}","pid":{},"tid":"t{index}","ts":{ts}.{:03},"dur":{},"args":{{"correlation":{index},"device":{}}}}}"#,
                    ["kernel", "cuda_runtime", "user_annotation", "cpu_op"][(index % 4) as usize],
                    seed % 3,
                    index * 7 % 1000,
                    if index % 5 == 4 { "-1".to_owned() } else { format!("{}.5", index * seed) },
                    index % 2,
                ));
                if index % 3 == 0 {
                    events.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{index}","pid":0,"tid":0,"ts":{ts},"dur":100}}"#));
                }
            }
            let text = format!(r#"{{"a": [1, "x\"]"], "traceEvents": [{}], "baseTimeNanoseconds": 12}}"#, events.join(" ,
    "));
            let matcher = SpanMatcher::new(crate::ranges::default_pattern());
            let mut whole = Collected::default();
            let header = read_kineto(text.as_bytes(), &mut whole, &matcher, crate::json_stream::DEFAULT_MAX_VALUE).unwrap();
            let mut cut = Collected::default();
            let stream = JsonStream::with_chunk(crate::json_stream::Trickle(text.as_bytes()), chunk);
            let cut_header = read_stream(stream, &mut cut, &matcher, &mut |_, _, _| Ok(None)).unwrap();
            proptest::prop_assert_eq!(header.base_ns, Some(12));
            proptest::prop_assert_eq!(cut_header.base_ns, Some(12));
            proptest::prop_assert_eq!(rows(&whole), rows(&cut));
            proptest::prop_assert!(!whole.gpu.is_empty() && !whole.spans.is_empty());
        }
    }
}
