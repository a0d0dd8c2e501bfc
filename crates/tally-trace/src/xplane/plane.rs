//! The first pass over a plane: its ID and name, its event and stat
//! metadata maps and its own stats, read before its lines (which an XPlane
//! serializes first, as field 3, ahead of the maps, fields 4 and 5).

use std::io::{Read, Seek};

use tally_utils::fast_hash::FastHashMap;

use super::proto::{StatMetadataEntry, XStat, XStatValue};
use super::wire::{LEN, MAX_NAME, VARINT, Wire, WireResult, XPlaneRule, fail};
use crate::collect::NONE_U32;

/// The most entries a plane's event or stat metadata map may have.
pub(crate) const MAX_ENTRIES: u64 = 1 << 24;
/// The most stats a plane or an event metadata may carry.
const MAX_STATS: u64 = 1 << 16;

/// The stats tally reads, by their names in `xplane_schema.cc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    Correlation,
    KernelDetails,
    MemcpyDetails,
    MemsetDetails,
    /// `memalloc_details`, `MemFree_details`, `MemoryResidency_details`:
    /// allocator events on a stream line, not GPU work.
    MemoryEvent,
    HloOp,
    HloModule,
    TfOp,
    GraphId,
    GraphExecId,
    Vendor,
    DeviceType,
    ComputeMajor,
    ComputeMinor,
    CoreCount,
    MemorySize,
    MemoryBandwidth,
    ClockRate,
    ProfileStart,
    ProfileStop,
}

impl Known {
    fn of(name: &str) -> Option<Known> {
        Some(match name {
            "correlation_id" => Known::Correlation,
            "kernel_details" => Known::KernelDetails,
            "memcpy_details" => Known::MemcpyDetails,
            "Memset_details" | "memset_details" => Known::MemsetDetails,
            "memalloc_details" | "MemFree_details" | "MemoryResidency_details" => Known::MemoryEvent,
            "hlo_op" => Known::HloOp,
            "hlo_module" => Known::HloModule,
            "tf_op" => Known::TfOp,
            "cuda_graph_id" => Known::GraphId,
            "cuda_graph_exec_id" => Known::GraphExecId,
            "device_vendor" => Known::Vendor,
            "device_type_string" => Known::DeviceType,
            "compute_cap_major" => Known::ComputeMajor,
            "compute_cap_minor" => Known::ComputeMinor,
            "core_count" => Known::CoreCount,
            "memory_size" => Known::MemorySize,
            "memory_bandwidth" => Known::MemoryBandwidth,
            "clock_rate" => Known::ClockRate,
            "profile_start_time" => Known::ProfileStart,
            "profile_stop_time" => Known::ProfileStop,
            _ => return None,
        })
    }
}

/// One stat metadata: its name (a `ref_value`'s string) and what tally
/// makes of it.
pub(crate) struct StatMeta {
    pub(crate) name: Box<str>,
    pub(crate) known: Option<Known>,
    /// The name interned in the import's names, once used as a label.
    pub(crate) interned: u32,
}

/// One event metadata: the name, and the stats every such event has.
pub(crate) struct EventMeta {
    pub(crate) name: Box<str>,
    /// The name interned in the import's names, once used.
    pub(crate) interned: u32,
    pub(crate) stats: Vec<XStat>,
}

/// What the first pass keeps of a plane.
pub(crate) struct Plane {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) events: FastHashMap<i64, EventMeta>,
    pub(crate) stats: FastHashMap<i64, StatMeta>,
    /// The plane's own stats.
    pub(crate) own: Vec<XStat>,
    /// What the stats of metadata IDs `0..len` are, by ID: every event's
    /// stats are looked up, and XLA numbers stat metadata from 1.
    known_small: Vec<Option<Known>>,
}

/// The stat metadata IDs [`Plane::known_small`] covers at most: a byte an
/// ID.
const KNOWN_SMALL: i64 = 1 << 16;

/// A stat's value as an integer (signed or unsigned).
pub(crate) fn integer(stat: &XStat) -> Option<i128> {
    match stat.value {
        Some(XStatValue::Uint64Value(value)) => Some(i128::from(value)),
        Some(XStatValue::Int64Value(value)) => Some(i128::from(value)),
        _ => None,
    }
}

impl Plane {
    /// What a stat is, by its metadata.
    pub(crate) fn known(&self, stat: &XStat) -> Option<Known> {
        self.known_id(stat.metadata_id)
    }

    /// What the stat of metadata `id` is, if known.
    pub(crate) fn known_id(&self, id: i64) -> Option<Known> {
        match usize::try_from(id).ok().and_then(|index| self.known_small.get(index)) {
            Some(&known) => known,
            None => self.stats.get(&id).and_then(|meta| meta.known),
        }
    }

    /// A stat's value as text: a string, or the name a `ref_value` points to.
    pub(crate) fn text<'a>(&'a self, stat: &'a XStat) -> Option<&'a str> {
        match &stat.value {
            Some(XStatValue::StrValue(text)) => Some(text),
            Some(XStatValue::RefValue(id)) => {
                i64::try_from(*id).ok().and_then(|id| self.stats.get(&id)).map(|meta| &*meta.name)
            }
            _ => None,
        }
    }

    /// The plane's own stat `known`.
    pub(crate) fn own(&self, known: Known) -> Option<&XStat> {
        self.own.iter().find(|stat| self.known(stat) == Some(known))
    }

    /// Reads the plane's fields between `start` and `stop`, skipping its
    /// lines; `full` reads the maps and stats too. Without `full` only the
    /// ID and name are wanted, and reading stops at the first later field:
    /// protobuf writers put fields in number order, so a plane with many
    /// lines and metadata entries is not walked to find its name.
    pub(crate) fn read<R: Read + Seek>(
        wire: &mut Wire<R>,
        start: u64,
        stop: u64,
        full: bool,
    ) -> WireResult<Plane> {
        wire.seek(start)?;
        let mut plane = Plane {
            id: 0,
            name: String::new(),
            events: FastHashMap::default(),
            stats: FastHashMap::default(),
            own: Vec::new(),
            known_small: Vec::new(),
        };
        while wire.position() < stop {
            let key_offset = wire.position();
            let (field, wire_type) = wire.key(stop)?;
            if field > 2 && !full {
                break;
            }
            match (field, full) {
                (1, _) => {
                    wire.expect("XPlane", 1, wire_type, VARINT, key_offset)?;
                    plane.id = wire.varint(stop)? as i64;
                }
                (2, _) => {
                    wire.expect("XPlane", 2, wire_type, LEN, key_offset)?;
                    let end = wire.length(stop)?;
                    plane.name = wire.string(end, "XPlane.name", MAX_NAME)?;
                }
                (4, true) => {
                    wire.expect("XPlane", 4, wire_type, LEN, key_offset)?;
                    let end = wire.length(stop)?;
                    room(plane.events.len(), MAX_ENTRIES, "XPlane.event_metadata", key_offset)?;
                    let (key, meta) = event_entry(wire, end)?;
                    plane.events.insert(key, meta);
                }
                (5, true) => {
                    wire.expect("XPlane", 5, wire_type, LEN, key_offset)?;
                    let end = wire.length(stop)?;
                    room(plane.stats.len(), MAX_ENTRIES, "XPlane.stat_metadata", key_offset)?;
                    let entry: StatMetadataEntry = wire.message(end, "XPlane.stat_metadata entry")?;
                    let name = entry.value.map(|value| value.name).unwrap_or_default();
                    let known = Known::of(&name);
                    plane.stats.insert(
                        entry.key,
                        StatMeta { name: name.into_boxed_str(), known, interned: NONE_U32 },
                    );
                }
                (6, true) => {
                    wire.expect("XPlane", 6, wire_type, LEN, key_offset)?;
                    let end = wire.length(stop)?;
                    room(plane.own.len(), MAX_STATS, "XPlane.stats", key_offset)?;
                    plane.own.push(wire.message(end, "XStat")?);
                }
                (3..=6, _) => {
                    wire.expect("XPlane", field, wire_type, LEN, key_offset)?;
                    wire.skip(wire_type, stop)?;
                }
                _ => wire.skip(wire_type, stop)?,
            }
        }
        let below = plane.stats.keys().copied().filter(|&id| (0..KNOWN_SMALL).contains(&id)).max();
        if let Some(largest) = below {
            // Below KNOWN_SMALL, so within usize.
            let mut known_small = vec![None; largest as usize + 1];
            for (&id, meta) in plane.stats.iter().filter(|&(&id, _)| (0..=largest).contains(&id)) {
                known_small[id as usize] = meta.known;
            }
            plane.known_small = known_small;
        }
        Ok(plane)
    }
}

/// Refuses one more entry where `len` have been read and `limit` is the
/// most there may be, naming `what` and the entry's key offset.
fn room(len: usize, limit: u64, what: &'static str, key_offset: u64) -> WireResult<()> {
    if len as u64 >= limit {
        return fail(key_offset, XPlaneRule::TooMany { what, limit });
    }
    Ok(())
}

/// One `event_metadata` map entry, walked rather than decoded: its
/// `metadata` bytes (an HloProto, for XLA modules) can be megabytes and
/// are skipped unread.
fn event_entry<R: Read + Seek>(wire: &mut Wire<R>, stop: u64) -> WireResult<(i64, EventMeta)> {
    let mut key = 0i64;
    let mut meta = EventMeta { name: Box::from(""), interned: NONE_U32, stats: Vec::new() };
    let mut display = String::new();
    while wire.position() < stop {
        let key_offset = wire.position();
        let (field, wire_type) = wire.key(stop)?;
        match field {
            1 => {
                wire.expect("XPlane.event_metadata entry", 1, wire_type, VARINT, key_offset)?;
                key = wire.varint(stop)? as i64;
            }
            2 => {
                wire.expect("XPlane.event_metadata entry", 2, wire_type, LEN, key_offset)?;
                let end = wire.length(stop)?;
                while wire.position() < end {
                    let key_offset = wire.position();
                    let (field, wire_type) = wire.key(end)?;
                    match field {
                        2 | 4 => {
                            wire.expect("XEventMetadata", field, wire_type, LEN, key_offset)?;
                            let text_end = wire.length(end)?;
                            let text = wire.string(text_end, "XEventMetadata name", MAX_NAME)?;
                            if field == 2 { meta.name = text.into_boxed_str() } else { display = text }
                        }
                        5 => {
                            wire.expect("XEventMetadata", 5, wire_type, LEN, key_offset)?;
                            let stat_end = wire.length(end)?;
                            room(meta.stats.len(), MAX_STATS, "XEventMetadata.stats", key_offset)?;
                            let mut stat: XStat = wire.message(stat_end, "XStat")?;
                            // Bytes are never read from an event's stats.
                            if let Some(XStatValue::BytesValue(bytes)) = &mut stat.value {
                                *bytes = Vec::new();
                            }
                            meta.stats.push(stat);
                        }
                        // child_id is a repeated int64: packed or not.
                        1 | 6 => {
                            let packed = field == 6 && wire_type == LEN;
                            let expected = if packed { LEN } else { VARINT };
                            wire.expect("XEventMetadata", field, wire_type, expected, key_offset)?;
                            wire.skip(wire_type, end)?;
                        }
                        3 => {
                            wire.expect("XEventMetadata", 3, wire_type, LEN, key_offset)?;
                            wire.skip(wire_type, end)?;
                        }
                        _ => wire.skip(wire_type, end)?,
                    }
                }
            }
            _ => wire.skip(wire_type, stop)?,
        }
    }
    if meta.name.is_empty() && !display.is_empty() {
        meta.name = display.into_boxed_str();
    }
    Ok((key, meta))
}
