//! An `XEvent` read in place: its fields and stats borrowed from the
//! reader's buffer, with no allocation, where prost would allocate the
//! stats' vector and every string value (a kernel's `kernel_details`, its
//! `hlo_op`, ...) of every event only to drop them.
//!
//! The in-place reading takes only what is plainly well formed: every
//! known field with its declared wire type, unknown fields of the four
//! plain wire types, valid UTF-8 strings, at most [`MAX_INLINE_STATS`]
//! stats. Anything else (a group, a wrong wire type, a truncation, an
//! overlong varint, bad UTF-8, more stats) is handed to prost, which either
//! decodes it as it always did or refuses it with its own message: the
//! rows and errors are those of a prost decoding in every case.

use super::proto::{XEventData, XStat, XStatValue};

/// Stats an event may have to be read in place; XLA writes under ten.
pub(crate) const MAX_INLINE_STATS: usize = 16;

/// A stat's value, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum StatValue<'a> {
    None,
    Double,
    Uint(u64),
    Int(i64),
    Str(&'a str),
    Bytes,
    Ref(u64),
}

/// A stat: its metadata ID and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StatRef<'a> {
    pub(crate) metadata_id: i64,
    pub(crate) value: StatValue<'a>,
}

impl<'a> StatRef<'a> {
    /// A prost-decoded stat (an event metadata's, or a whole decoded
    /// event's), borrowed.
    pub(crate) fn of(stat: &'a XStat) -> Self {
        let value = match &stat.value {
            None => StatValue::None,
            Some(XStatValue::DoubleValue(_)) => StatValue::Double,
            Some(XStatValue::Uint64Value(value)) => StatValue::Uint(*value),
            Some(XStatValue::Int64Value(value)) => StatValue::Int(*value),
            Some(XStatValue::StrValue(text)) => StatValue::Str(text),
            Some(XStatValue::BytesValue(_)) => StatValue::Bytes,
            Some(XStatValue::RefValue(id)) => StatValue::Ref(*id),
        };
        Self { metadata_id: stat.metadata_id, value }
    }

    /// The value as an integer, where it is one.
    pub(crate) fn integer(&self) -> Option<i128> {
        match self.value {
            StatValue::Uint(value) => Some(i128::from(value)),
            StatValue::Int(value) => Some(i128::from(value)),
            _ => None,
        }
    }
}

/// An event's fields, its stats borrowed.
pub(crate) struct EventRef<'a> {
    pub(crate) metadata_id: i64,
    pub(crate) data: Option<XEventData>,
    pub(crate) duration_ps: i64,
    stats: [StatRef<'a>; MAX_INLINE_STATS],
    stat_count: usize,
}

impl<'a> EventRef<'a> {
    pub(crate) fn stats(&self) -> &[StatRef<'a>] {
        &self.stats[..self.stat_count]
    }

    fn empty() -> Self {
        const NONE: StatRef<'static> = StatRef { metadata_id: 0, value: StatValue::None };
        Self { metadata_id: 0, data: None, duration_ps: 0, stats: [NONE; MAX_INLINE_STATS], stat_count: 0 }
    }

    fn push(&mut self, stat: StatRef<'a>) -> Option<()> {
        *self.stats.get_mut(self.stat_count)? = stat;
        self.stat_count += 1;
        Some(())
    }

    /// The event in `bytes`, read in place, or `None` where prost must
    /// decide (see the module's documentation).
    pub(crate) fn read(bytes: &'a [u8]) -> Option<Self> {
        let mut event = Self::empty();
        let mut at = 0;
        while at < bytes.len() {
            let (field, wire) = key(bytes, &mut at)?;
            match (field, wire) {
                (1, VARINT) => event.metadata_id = varint(bytes, &mut at)? as i64,
                (2, VARINT) => event.data = Some(XEventData::OffsetPs(varint(bytes, &mut at)? as i64)),
                (5, VARINT) => event.data = Some(XEventData::NumOccurrences(varint(bytes, &mut at)? as i64)),
                (3, VARINT) => event.duration_ps = varint(bytes, &mut at)? as i64,
                (4, LEN) => {
                    let stat = stat(delimited(bytes, &mut at)?)?;
                    event.push(stat)?;
                }
                (1..=5, _) => return None,
                _ => skip(bytes, &mut at, wire)?,
            }
        }
        Some(event)
    }
}

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// An `XStat`, read in place.
fn stat(bytes: &[u8]) -> Option<StatRef<'_>> {
    let mut stat = StatRef { metadata_id: 0, value: StatValue::None };
    let mut at = 0;
    while at < bytes.len() {
        let (field, wire) = key(bytes, &mut at)?;
        stat.value = match (field, wire) {
            (1, VARINT) => {
                stat.metadata_id = varint(bytes, &mut at)? as i64;
                continue;
            }
            (2, I64) => {
                skip(bytes, &mut at, I64)?;
                StatValue::Double
            }
            (3, VARINT) => StatValue::Uint(varint(bytes, &mut at)?),
            (4, VARINT) => StatValue::Int(varint(bytes, &mut at)? as i64),
            (5, LEN) => StatValue::Str(simdutf8::basic::from_utf8(delimited(bytes, &mut at)?).ok()?),
            (6, LEN) => {
                delimited(bytes, &mut at)?;
                StatValue::Bytes
            }
            (7, VARINT) => StatValue::Ref(varint(bytes, &mut at)?),
            (1..=7, _) => return None,
            _ => {
                skip(bytes, &mut at, wire)?;
                continue;
            }
        };
    }
    Some(stat)
}

/// A varint of at most ten bytes whose value fits 64 bits.
fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for index in 0..10 {
        let byte = *bytes.get(*at + index)?;
        if index == 9 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte < 0x80 {
            *at += index + 1;
            return Some(value);
        }
    }
    None
}

/// A key within 32 bits (as prost takes them), of a field number above 0
/// and a plain wire type (no groups).
fn key(bytes: &[u8], at: &mut usize) -> Option<(u32, u8)> {
    let key = u32::try_from(varint(bytes, at)?).ok()?;
    let field = Some(key >> 3).filter(|&field| field > 0)?;
    let wire = (key & 7) as u8;
    matches!(wire, VARINT | I64 | LEN | I32).then_some((field, wire))
}

/// A length-delimited field's bytes.
fn delimited<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let length = usize::try_from(varint(bytes, at)?).ok()?;
    let end = at.checked_add(length).filter(|&end| end <= bytes.len())?;
    let slice = &bytes[*at..end];
    *at = end;
    Some(slice)
}

fn skip(bytes: &[u8], at: &mut usize, wire: u8) -> Option<()> {
    let width = match wire {
        VARINT => return varint(bytes, at).map(drop),
        LEN => return delimited(bytes, at).map(drop),
        I64 => 8,
        _ => 4,
    };
    let end = at.checked_add(width).filter(|&end| end <= bytes.len())?;
    *at = end;
    Some(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use proptest::prelude::*;
    use prost::Message;

    use super::*;
    use crate::xplane::proto::XEvent;

    fn views(event: &XEvent) -> (i64, Option<XEventData>, i64, Vec<StatRef<'_>>) {
        (
            event.metadata_id,
            event.data.clone(),
            event.duration_ps,
            event.stats.iter().map(StatRef::of).collect(),
        )
    }

    /// What `bytes` read in place as, if anything, is what prost decodes
    /// from them: prost must accept whatever reads in place.
    fn reads_as_prost_or_not_at_all(bytes: &[u8]) -> Result<(), TestCaseError> {
        if let Some(view) = EventRef::read(bytes) {
            let decoded = XEvent::decode(bytes);
            prop_assert!(decoded.is_ok(), "{:?}", decoded);
            let decoded = decoded.unwrap();
            let (id, data, duration, stats) = views(&decoded);
            prop_assert_eq!(
                (view.metadata_id, view.data.clone(), view.duration_ps, view.stats().to_vec()),
                (id, data, duration, stats)
            );
        }
        Ok(())
    }

    fn value() -> impl Strategy<Value = Option<XStatValue>> {
        prop_oneof![
            Just(None),
            any::<f64>().prop_map(|value| Some(XStatValue::DoubleValue(value))),
            any::<u64>().prop_map(|value| Some(XStatValue::Uint64Value(value))),
            any::<i64>().prop_map(|value| Some(XStatValue::Int64Value(value))),
            ".{0,12}".prop_map(|text| Some(XStatValue::StrValue(text))),
            prop::collection::vec(any::<u8>(), 0..6).prop_map(|bytes| Some(XStatValue::BytesValue(bytes))),
            any::<u64>().prop_map(|value| Some(XStatValue::RefValue(value))),
        ]
    }

    fn event() -> impl Strategy<Value = XEvent> {
        let stat = (any::<i64>(), value()).prop_map(|(metadata_id, value)| XStat { metadata_id, value });
        let data = prop_oneof![
            Just(None),
            any::<i64>().prop_map(|value| Some(XEventData::OffsetPs(value))),
            any::<i64>().prop_map(|value| Some(XEventData::NumOccurrences(value))),
        ];
        (any::<i64>(), data, any::<i64>(), prop::collection::vec(stat, 0..20)).prop_map(
            |(metadata_id, data, duration_ps, stats)| XEvent { metadata_id, data, duration_ps, stats },
        )
    }

    proptest! {
        /// A well-formed event reads in place as prost decodes it (or, with
        /// more stats than fit, is left to prost).
        #[test]
        fn reads_as_prost_decodes(event in event()) {
            let bytes = event.encode_to_vec();
            let decoded = XEvent::decode(&bytes[..]).unwrap();
            match EventRef::read(&bytes) {
                Some(view) => {
                    let (id, data, duration, stats) = views(&decoded);
                    prop_assert_eq!(
                        (view.metadata_id, view.data.clone(), view.duration_ps, view.stats().to_vec()),
                        (id, data, duration, stats)
                    );
                }
                None => prop_assert!(event.stats.len() > MAX_INLINE_STATS),
            }
        }

        /// Any bytes: what reads in place is what prost decodes; what prost
        /// refuses never reads in place.
        #[test]
        fn never_reads_what_prost_refuses(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            reads_as_prost_or_not_at_all(&bytes)?;
        }
    }

    proptest! {
        /// A well-formed event with one byte changed: read in place only
        /// as prost decodes it.
        #[test]
        fn a_changed_byte_reads_as_prost_decodes_or_not_at_all(
            event in event(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut bytes = event.encode_to_vec();
            if !bytes.is_empty() {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            reads_as_prost_or_not_at_all(&bytes)?;
        }
    }

    #[test]
    fn fields_repeated_keep_the_last_and_unknown_ones_are_skipped() {
        // metadata_id 1 then 2, an unknown fixed32 field 9, a stat with an
        // int then a string value, and an unknown varint field 8 inside it.
        let mut bytes = vec![0x08, 1, 0x08, 2, 0x4d, 0, 0, 0, 0];
        let stat = [0x08, 7, 0x20, 5, 0x40, 1, 0x2a, 2, b'h', b'i'];
        bytes.extend([0x22, stat.len() as u8]);
        bytes.extend(stat);
        let view = EventRef::read(&bytes).unwrap();
        assert_eq!(view.metadata_id, 2);
        assert_eq!(view.stats(), &[StatRef { metadata_id: 7, value: StatValue::Str("hi") }]);
        assert_eq!(views(&XEvent::decode(&bytes[..]).unwrap()).3, view.stats().to_vec());
    }

    #[test]
    fn what_prost_must_judge_is_left_to_it() {
        // A group, a wrong wire type for duration_ps, a truncated length,
        // bad UTF-8 in a string stat.
        for bytes in [&[0x0b, 0x0c][..], &[0x1a, 0], &[0x22, 5, 0x08], &[0x22, 3, 0x2a, 1, 0xff]] {
            assert!(EventRef::read(bytes).is_none(), "{bytes:?}");
        }
    }
}
