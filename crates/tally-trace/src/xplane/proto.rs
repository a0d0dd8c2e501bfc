//! The messages of `xplane.proto` (package `tensorflow.profiler`, vendored in
//! `proto/xplane.proto`), declared by hand for prost so that no protoc runs
//! at build time; the test below checks every field against the vendored
//! file.
//!
//! The reader never decodes an [`XSpace`], [`XPlane`] or [`XLine`] whole (a
//! profile's planes can be gigabytes): it walks them with its own
//! wire-format reader and decodes only the small messages ([`XEvent`],
//! [`XStat`], [`XStatMetadata`]) with prost. The containers are declared
//! so that tests and tools can write profiles.

use std::collections::HashMap;

/// A container of parallel planes, one profiling session.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpace {
    /// The planes: one per device, host, or derived view.
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    /// Errors of the profiler.
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    /// Warnings of the profiler.
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    /// The hosts the planes come from.
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

/// Parallel timelines of one source (`/device:GPU:0`, `/host:CPU`, ...).
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlane {
    /// The plane's ID.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// The plane's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Its timelines.
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    /// Event metadata by ID.
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    /// Stat metadata by ID.
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    /// The plane's own stats (device capabilities).
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

/// One timeline: a GPU stream, a host thread, or a derived view.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XLine {
    /// The line's ID (the stream or thread).
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// The line's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Where its events' offsets count from, in ns.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    /// Its events.
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
    /// How long it was profiled, in ps.
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    /// The trace viewer's row.
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    /// The trace viewer's name.
    #[prost(string, tag = "11")]
    pub display_name: String,
}

/// One event of a line.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XEvent {
    /// Its [`XEventMetadata`]'s ID.
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// Its start (or, aggregated, its count).
    #[prost(oneof = "XEventData", tags = "2, 5")]
    pub data: Option<XEventData>,
    /// Its duration in ps.
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    /// Its stats.
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

/// `XEvent.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum XEventData {
    /// Start, in ps after its line's `timestamp_ns`.
    #[prost(int64, tag = "2")]
    OffsetPs(i64),
    /// How many events an aggregated event stands for.
    #[prost(int64, tag = "5")]
    NumOccurrences(i64),
}

/// A named value of an event, event metadata or plane.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStat {
    /// Its [`XStatMetadata`]'s ID (which names it).
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// The value.
    #[prost(oneof = "XStatValue", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<XStatValue>,
}

/// `XStat.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum XStatValue {
    /// A double.
    #[prost(double, tag = "2")]
    DoubleValue(f64),
    /// An unsigned integer.
    #[prost(uint64, tag = "3")]
    Uint64Value(u64),
    /// A signed integer.
    #[prost(int64, tag = "4")]
    Int64Value(i64),
    /// A string.
    #[prost(string, tag = "5")]
    StrValue(String),
    /// Bytes.
    #[prost(bytes = "vec", tag = "6")]
    BytesValue(Vec<u8>),
    /// A string kept once: the name of the [`XStatMetadata`] with this ID.
    #[prost(uint64, tag = "7")]
    RefValue(u64),
}

/// What events with one metadata ID share.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XEventMetadata {
    /// Its key in the plane's map.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// The event's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Serialized extra metadata (an `XLA Modules` event's HloProto): the
    /// reader skips it unread.
    #[prost(bytes = "vec", tag = "3")]
    pub metadata: Vec<u8>,
    /// The trace viewer's name.
    #[prost(string, tag = "4")]
    pub display_name: String,
    /// Stats every such event has.
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    /// Children's metadata IDs.
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

/// What names a stat.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStatMetadata {
    /// Its key in the plane's map.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// The stat's name (or, for a `ref_value`, the string value).
    #[prost(string, tag = "2")]
    pub name: String,
    /// A description.
    #[prost(string, tag = "3")]
    pub description: String,
}

/// One entry of `XPlane.stat_metadata` as the wire holds it (a map entry
/// is a message of key 1 and value 2).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StatMetadataEntry {
    #[prost(int64, tag = "1")]
    pub(crate) key: i64,
    #[prost(message, optional, tag = "2")]
    pub(crate) value: Option<XStatMetadata>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use std::collections::BTreeMap;

    /// `message -> field -> (number, type)` of the vendored schema, read
    /// from its text: `[repeated] TYPE NAME = N;` and `map<K, V> NAME = N;`
    /// lines inside `message X { ... }` (oneofs included).
    fn schema() -> BTreeMap<String, BTreeMap<String, (u32, String)>> {
        let text = include_str!("../../proto/xplane.proto");
        let mut messages: BTreeMap<String, BTreeMap<String, (u32, String)>> = BTreeMap::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            let line = line.split("//").next().unwrap_or("").trim();
            if let Some(rest) = line.strip_prefix("message ") {
                let name = rest.trim_end_matches('{').trim().to_owned();
                messages.entry(name.clone()).or_default();
                current = Some(name);
                continue;
            }
            let Some(message) = &current else { continue };
            let Some((left, number)) = line.strip_suffix(';').and_then(|line| line.split_once('=')) else {
                continue;
            };
            let Ok(number) = number.trim().parse::<u32>() else { continue };
            let words: Vec<&str> = left.split_whitespace().collect();
            let (kind, name) = match words.as_slice() {
                ["repeated", kind, name] => (format!("repeated {kind}"), *name),
                [kind, name] => ((*kind).to_owned(), *name),
                // `map<int64, X> name`: the type holds a space.
                [key, value, name] if key.starts_with("map<") => (format!("{key} {value}"), *name),
                _ => panic!("unexpected field line {line:?}"),
            };
            let previous =
                messages.entry(message.clone()).or_default().insert(name.to_owned(), (number, kind));
            assert!(previous.is_none(), "{message}.{name} twice");
        }
        messages
    }

    /// The fields the structs above declare: (message, field, number, type
    /// as the .proto spells it). Kept beside the structs: a field added
    /// there without a line here fails `every_struct_field_is_listed`.
    const DECLARED: &[(&str, &str, u32, &str)] = &[
        ("XSpace", "planes", 1, "repeated XPlane"),
        ("XSpace", "errors", 2, "repeated string"),
        ("XSpace", "warnings", 3, "repeated string"),
        ("XSpace", "hostnames", 4, "repeated string"),
        ("XPlane", "id", 1, "int64"),
        ("XPlane", "name", 2, "string"),
        ("XPlane", "lines", 3, "repeated XLine"),
        ("XPlane", "event_metadata", 4, "map<int64, XEventMetadata>"),
        ("XPlane", "stat_metadata", 5, "map<int64, XStatMetadata>"),
        ("XPlane", "stats", 6, "repeated XStat"),
        ("XLine", "id", 1, "int64"),
        ("XLine", "name", 2, "string"),
        ("XLine", "timestamp_ns", 3, "int64"),
        ("XLine", "events", 4, "repeated XEvent"),
        ("XLine", "duration_ps", 9, "int64"),
        ("XLine", "display_id", 10, "int64"),
        ("XLine", "display_name", 11, "string"),
        ("XEvent", "metadata_id", 1, "int64"),
        ("XEvent", "offset_ps", 2, "int64"),
        ("XEvent", "duration_ps", 3, "int64"),
        ("XEvent", "stats", 4, "repeated XStat"),
        ("XEvent", "num_occurrences", 5, "int64"),
        ("XStat", "metadata_id", 1, "int64"),
        ("XStat", "double_value", 2, "double"),
        ("XStat", "uint64_value", 3, "uint64"),
        ("XStat", "int64_value", 4, "int64"),
        ("XStat", "str_value", 5, "string"),
        ("XStat", "bytes_value", 6, "bytes"),
        ("XStat", "ref_value", 7, "uint64"),
        ("XEventMetadata", "id", 1, "int64"),
        ("XEventMetadata", "name", 2, "string"),
        ("XEventMetadata", "metadata", 3, "bytes"),
        ("XEventMetadata", "display_name", 4, "string"),
        ("XEventMetadata", "stats", 5, "repeated XStat"),
        ("XEventMetadata", "child_id", 6, "repeated int64"),
        ("XStatMetadata", "id", 1, "int64"),
        ("XStatMetadata", "name", 2, "string"),
        ("XStatMetadata", "description", 3, "string"),
    ];

    #[test]
    fn declared_fields_match_the_vendored_schema() {
        let schema = schema();
        for &(message, field, number, kind) in DECLARED {
            let found = schema.get(message).and_then(|fields| fields.get(field));
            assert_eq!(found, Some(&(number, kind.to_owned())), "{message}.{field}");
        }
        // And the schema has no field the structs leave out (a new field
        // upstream shows here).
        let declared = DECLARED.len();
        let in_schema: usize = schema.values().map(BTreeMap::len).sum();
        assert_eq!(declared, in_schema, "fields in proto/xplane.proto but not declared");
    }

    /// Each struct's prost encoding puts each declared field under its
    /// number with its wire type: encode a message with every field set and
    /// read the keys back.
    #[test]
    fn every_struct_field_is_listed() {
        use prost::Message;

        use super::*;
        let stat = |value| XStat { metadata_id: 7, value: Some(value) };
        let event = XEvent {
            metadata_id: 1,
            data: Some(XEventData::OffsetPs(2)),
            duration_ps: 3,
            stats: vec![stat(XStatValue::RefValue(1))],
        };
        let aggregated = XEvent { data: Some(XEventData::NumOccurrences(5)), ..event.clone() };
        let event_metadata = XEventMetadata {
            id: 1,
            name: "n".into(),
            metadata: vec![1],
            display_name: "d".into(),
            stats: vec![stat(XStatValue::Int64Value(1))],
            child_id: vec![2],
        };
        let stat_metadata = XStatMetadata { id: 1, name: "n".into(), description: "d".into() };
        let line = XLine {
            id: 1,
            name: "n".into(),
            timestamp_ns: 1,
            events: vec![event.clone()],
            duration_ps: 1,
            display_id: 1,
            display_name: "d".into(),
        };
        let plane = XPlane {
            id: 1,
            name: "p".into(),
            lines: vec![line.clone()],
            event_metadata: HashMap::from([(1, event_metadata.clone())]),
            stat_metadata: HashMap::from([(1, stat_metadata.clone())]),
            stats: vec![stat(XStatValue::DoubleValue(1.0))],
        };
        let space = XSpace {
            planes: vec![plane.clone()],
            errors: vec!["e".into()],
            warnings: vec!["w".into()],
            hostnames: vec!["h".into()],
        };
        let stats = [
            XStatValue::DoubleValue(1.0),
            XStatValue::Uint64Value(1),
            XStatValue::Int64Value(1),
            XStatValue::StrValue("s".into()),
            XStatValue::BytesValue(vec![1]),
            XStatValue::RefValue(1),
        ]
        .map(|value| stat(value).encode_to_vec());
        let encoded: Vec<(&str, Vec<u8>)> = vec![
            ("XSpace", space.encode_to_vec()),
            ("XPlane", plane.encode_to_vec()),
            ("XLine", line.encode_to_vec()),
            ("XEvent", event.encode_to_vec()),
            ("XEvent", aggregated.encode_to_vec()),
            ("XEventMetadata", event_metadata.encode_to_vec()),
            ("XStatMetadata", stat_metadata.encode_to_vec()),
        ]
        .into_iter()
        .chain(stats.into_iter().map(|bytes| ("XStat", bytes)))
        .collect();
        // proto3 packs repeated scalars: one length-delimited field.
        let wire_type = |kind: &str| match kind {
            "double" => 1,
            "int64" | "uint64" => 0,
            _ => 2,
        };
        let mut seen = std::collections::BTreeSet::new();
        for (message, bytes) in encoded {
            let mut at = 0;
            while at < bytes.len() {
                let (key, next) = varint(&bytes, at);
                let (number, wire) = ((key >> 3) as u32, (key & 7) as u8);
                let declared = DECLARED.iter().find(|entry| entry.0 == message && entry.2 == number);
                let Some(&(_, field, _, kind)) = declared else {
                    panic!("{message} encodes field {number}, which DECLARED does not list");
                };
                assert_eq!(wire, wire_type(kind), "{message}.{field}");
                seen.insert((message, field));
                at = match wire {
                    0 => varint(&bytes, next).1,
                    1 => next + 8,
                    _ => {
                        let (length, start) = varint(&bytes, next);
                        start + length as usize
                    }
                };
            }
        }
        assert_eq!(seen.len(), DECLARED.len(), "a declared field the structs never encode");
    }

    fn varint(bytes: &[u8], mut at: usize) -> (u64, usize) {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = bytes[at];
            at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                break;
            }
        }
        (value, at)
    }
}
