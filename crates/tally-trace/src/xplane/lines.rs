//! The second pass over a plane: its lines, event by event, into rows.
//!
//! On a `/device:GPU:N` plane the lines named `Stream ...` hold the GPU's
//! kernels, copies and sets; the derived lines (`XLA Ops`, `XLA Modules`,
//! `TensorFlow Ops`, ...) hold what the profiler made of them, and their
//! events only label the kernels they cover. On `/host:CPU` every line is a
//! host thread: CUDA/HIP API calls with a `correlation_id` become runtime
//! rows, ranges matching the iteration pattern iteration spans.

use std::io::{Read, Seek};

use prost::Message;
use tally_utils::fast_hash::FastHashMap;

use super::event::{EventRef, StatRef, StatValue};
use super::plane::{Known, Plane};
use super::proto::{XEvent, XEventData};
use super::wire::{LEN, MAX_MESSAGE, MAX_NAME, VARINT, Wire, WireResult, XPlaneRule, fail};
use crate::collect::{Collected, GpuEvent, GpuKind, NONE_U32, NONE_U64, RuntimeKind, RuntimeRow, SpanRow};
use crate::ranges::SpanMatcher;

/// Which plane the lines belong to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PlaneKind {
    /// `/device:GPU:N`.
    Gpu { ordinal: u32 },
    /// `/host:CPU`.
    Host,
}

/// What a label of a kernel names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Label {
    HloOp,
    HloModule,
    TfOp,
}

impl Label {
    pub(crate) const ALL: [Label; 3] = [Label::HloOp, Label::HloModule, Label::TfOp];

    fn of_stat(known: Known) -> Option<Label> {
        match known {
            Known::HloOp => Some(Label::HloOp),
            Known::HloModule => Some(Label::HloModule),
            Known::TfOp => Some(Label::TfOp),
            _ => None,
        }
    }

    /// The label a derived line's events give (xplane_schema.cc's line names).
    fn of_line(name: &str) -> Option<Label> {
        match name {
            "XLA Ops" => Some(Label::HloOp),
            "XLA Modules" => Some(Label::HloModule),
            "TensorFlow Ops" | "Framework Ops" => Some(Label::TfOp),
            _ => None,
        }
    }
}

/// A kernel's labels: names interned in the import's names, `NONE_U32`
/// where unknown, by [`Label`] order (that of `collect::LABEL_KEYS`).
pub(crate) type Labels = [u32; 3];

/// What reading a plane's lines gathers besides rows.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    /// The label sets in `Collected::label_sets`, by their labels.
    sets: FastHashMap<Labels, u32>,
    /// Derived-line events of this plane: (label, start, end, name).
    pub(crate) derived: Vec<(Label, u64, u64, u32)>,
    /// Events of aggregated lines (`num_occurrences`), not timed.
    pub(crate) aggregated: u64,
    /// Lines whose timestamps were moved onto the epoch.
    pub(crate) relative_lines: u64,
}

impl Gathered {
    /// Gives GPU row `row` the labels `labels`, in `collected.gpu_labels`.
    pub(crate) fn label(&mut self, collected: &mut Collected, row: usize, labels: Labels) {
        let set = *self.sets.entry(labels).or_insert_with(|| {
            collected.label_sets.push(labels);
            // Fewer distinct sets than rows, whose indices are u32.
            (collected.label_sets.len() - 1) as u32
        });
        while collected.gpu_labels.len() <= row {
            collected.gpu_labels.push(NONE_U32);
        }
        collected.gpu_labels[row] = set;
    }
}

/// Reads one plane's lines.
pub(crate) struct Lines<'a> {
    pub(crate) plane: &'a mut Plane,
    pub(crate) kind: PlaneKind,
    /// The profile's start on the Unix epoch (Task Environment), in ns.
    pub(crate) epoch_start: Option<u64>,
    pub(crate) collected: &'a mut Collected,
    pub(crate) spans: &'a SpanMatcher,
    pub(crate) gathered: &'a mut Gathered,
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Stream { stream: u64 },
    Derived(Label),
    Host { tid: u64 },
    Skip,
}

impl Lines<'_> {
    /// Reads every line (field 3) of the plane between `start` and `stop`.
    pub(crate) fn read<R: Read + Seek>(
        &mut self,
        wire: &mut Wire<R>,
        start: u64,
        stop: u64,
    ) -> WireResult<()> {
        wire.seek(start)?;
        while wire.position() < stop {
            let key_offset = wire.position();
            let (field, wire_type) = wire.key(stop)?;
            if field == 3 {
                wire.expect("XPlane", 3, wire_type, LEN, key_offset)?;
                let end = wire.length(stop)?;
                self.line(wire, end)?;
                wire.seek(end)?;
            } else {
                wire.skip(wire_type, stop)?;
            }
        }
        Ok(())
    }

    fn line<R: Read + Seek>(&mut self, wire: &mut Wire<R>, stop: u64) -> WireResult<()> {
        let (mut id, mut name, mut timestamp_ns) = (0i64, String::new(), 0i64);
        let mut role: Option<(Role, i128)> = None;
        while wire.position() < stop {
            let key_offset = wire.position();
            let (field, wire_type) = wire.key(stop)?;
            if matches!(field, 1..=3) && role.is_some() {
                return fail(key_offset, XPlaneRule::LineHeaderAfterEvents(field));
            }
            match field {
                1 | 3 => {
                    wire.expect("XLine", field, wire_type, VARINT, key_offset)?;
                    let value = wire.varint(stop)? as i64;
                    if field == 1 { id = value } else { timestamp_ns = value }
                }
                2 => {
                    wire.expect("XLine", 2, wire_type, LEN, key_offset)?;
                    let end = wire.length(stop)?;
                    name = wire.string(end, "XLine.name", MAX_NAME)?;
                }
                4 => {
                    wire.expect("XLine", 4, wire_type, LEN, key_offset)?;
                    let end = wire.length(stop)?;
                    let (role, base_ns) = *role.get_or_insert_with(|| self.role(id, &name, timestamp_ns));
                    self.collected.events_read += 1;
                    if matches!(role, Role::Skip) {
                        wire.seek(end)?;
                    } else {
                        let offset = wire.position();
                        let bytes = wire.bytes(end, "XEvent", MAX_MESSAGE)?;
                        match EventRef::read(bytes) {
                            Some(event) => self.event(role, base_ns, &Head::of(&event), event.stats()),
                            // What is not plainly well formed is prost's to
                            // decode or refuse, as every event once was.
                            None => {
                                let event = XEvent::decode(bytes).or_else(|error| {
                                    let reason = error.to_string();
                                    fail(offset, XPlaneRule::Decode { message: "XEvent", reason })
                                })?;
                                let stats: Vec<StatRef<'_>> = event.stats.iter().map(StatRef::of).collect();
                                let head = Head {
                                    metadata_id: event.metadata_id,
                                    data: event.data.clone(),
                                    duration_ps: event.duration_ps,
                                };
                                self.event(role, base_ns, &head, &stats);
                            }
                        }
                    }
                }
                _ => wire.skip(wire_type, stop)?,
            }
        }
        Ok(())
    }

    /// What a line's events are, and where its offsets count from (ns on
    /// the Unix epoch where the profile says where that is).
    fn role(&mut self, id: i64, name: &str, timestamp_ns: i64) -> (Role, i128) {
        // The profiler subtracts the profile's start from every line's
        // timestamp (TSL's NormalizeTimestamps) and records the start in the
        // Task Environment plane: a line below half that start is such a
        // relative one and is moved back onto the epoch; one at or above it
        // was never moved.
        let mut base = i128::from(timestamp_ns);
        if let Some(start) = self.epoch_start
            && timestamp_ns >= 0
            && (timestamp_ns as u64) < start / 2
        {
            base += i128::from(start);
            self.gathered.relative_lines += 1;
        }
        let role = match self.kind {
            PlaneKind::Gpu { .. } if name.starts_with("Stream") => {
                let stream = u64::try_from(id).ok().or_else(|| stream_of_name(name)).unwrap_or(NONE_U64);
                Role::Stream { stream }
            }
            PlaneKind::Gpu { .. } => match Label::of_line(name) {
                Some(label) => Role::Derived(label),
                None => Role::Skip,
            },
            PlaneKind::Host => Role::Host { tid: self.collected.threads.number(id as u64) },
        };
        (role, base)
    }

    fn event(&mut self, role: Role, base_ns: i128, event: &Head, stats: &[StatRef<'_>]) {
        let offset_ps = match event.data {
            Some(XEventData::OffsetPs(offset)) => offset,
            Some(XEventData::NumOccurrences(_)) => {
                self.gathered.aggregated += 1;
                return;
            }
            None => 0,
        };
        let Some((start, end)) = self.times(base_ns, offset_ps, event.duration_ps) else {
            return;
        };
        match role {
            Role::Stream { stream } => self.gpu(stream, start, end, event.metadata_id, stats),
            Role::Derived(label) => {
                let name = self.name(event.metadata_id);
                self.gathered.derived.push((label, start, end, name));
            }
            Role::Host { tid } => self.host(tid, start, end, event.metadata_id, stats),
            Role::Skip => {}
        }
    }

    /// An event's start and end in ns: `line.timestamp_ns * 1000 +
    /// offset_ps` and that plus `duration_ps`, in ps, each floored to ns
    /// (exact whenever the ps are whole ns).
    fn times(&mut self, base_ns: i128, offset_ps: i64, duration_ps: i64) -> Option<(u64, u64)> {
        if duration_ps < 0 {
            self.collected.skip("negative dur", || format!("an event of duration {duration_ps} ps"));
            return None;
        }
        let start_ps = base_ns * 1000 + i128::from(offset_ps);
        let end_ps = start_ps + i128::from(duration_ps);
        if start_ps % 1000 != 0 || end_ps % 1000 != 0 {
            self.collected.rounded_timestamps += 1;
        }
        match (u64::try_from(start_ps.div_euclid(1000)), u64::try_from(end_ps.div_euclid(1000))) {
            (Ok(start), Ok(end)) => Some((start, end)),
            _ => {
                self.collected
                    .skip("negative ts", || format!("an event at {start_ps} ps, outside 0..2^64 ns"));
                None
            }
        }
    }

    /// The interned name of event metadata `id`.
    fn name(&mut self, id: i64) -> u32 {
        match self.plane.events.get_mut(&id) {
            Some(meta) => {
                if meta.interned == NONE_U32 {
                    meta.interned = self.collected.names.intern(&meta.name);
                }
                meta.interned
            }
            None => self.collected.names.intern(""),
        }
    }

    fn gpu(&mut self, stream: u64, start: u64, end: u64, metadata_id: i64, stats: &[StatRef<'_>]) {
        let plane = &*self.plane;
        let meta = plane.events.get(&metadata_id);
        let stats =
            stats.iter().copied().chain(meta.into_iter().flat_map(|meta| meta.stats.iter().map(StatRef::of)));
        let (mut kind, mut memory, mut correlation, mut graph, mut exec) = (None, false, 0u64, 0u64, 0u64);
        let mut labels: Labels = [NONE_U32; 3];
        // A label given by reference (XLA's usual way) is interned once per
        // stat metadata, after this loop; one given as text at once.
        let mut label_refs: [Option<i64>; 3] = [None; 3];
        for stat in stats {
            let Some(known) = plane.known_id(stat.metadata_id) else { continue };
            let positive = || stat.integer().and_then(|value| u64::try_from(value).ok()).unwrap_or(0);
            match known {
                Known::KernelDetails => kind = kind.or(Some(GpuKind::Kernel)),
                Known::MemcpyDetails => kind = kind.or(Some(GpuKind::Memcpy)),
                Known::MemsetDetails => kind = kind.or(Some(GpuKind::Memset)),
                Known::MemoryEvent => memory = true,
                Known::Correlation if correlation == 0 => correlation = positive(),
                Known::GraphId if graph == 0 => graph = positive(),
                Known::GraphExecId if exec == 0 => exec = positive(),
                other => {
                    if let Some(label) = Label::of_stat(other)
                        && labels[label as usize] == NONE_U32
                        && label_refs[label as usize].is_none()
                    {
                        match stat.value {
                            StatValue::Ref(id) => {
                                label_refs[label as usize] = i64::try_from(id).ok();
                            }
                            StatValue::Str(text) if !text.is_empty() => {
                                labels[label as usize] = self.collected.names.intern(text);
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        let name_text = meta.map_or("", |meta| &meta.name);
        if memory && kind.is_none() {
            self.collected.ignore("xplane memory event");
            return;
        }
        let kind = kind.unwrap_or_else(|| kind_of_name(name_text));
        for (slot, id) in labels.iter_mut().zip(label_refs) {
            if let Some(meta) = id.and_then(|id| self.plane.stats.get_mut(&id))
                && !meta.name.is_empty()
            {
                if meta.interned == NONE_U32 {
                    meta.interned = self.collected.names.intern(&meta.name);
                }
                *slot = meta.interned;
            }
        }
        let ordinal = match self.kind {
            PlaneKind::Gpu { ordinal } => ordinal,
            PlaneKind::Host => NONE_U32,
        };
        let name = self.name(metadata_id);
        // Build numbers GPU rows with u32, as every reader's.
        let row = self.collected.gpu.len();
        if labels.iter().any(|&label| label != NONE_U32) && u32::try_from(row).is_ok() {
            self.gathered.label(self.collected, row, labels);
        }
        self.collected.gpu.push(GpuEvent {
            start,
            end,
            correlation,
            stream,
            graph_id: if graph != 0 { graph } else { exec },
            pid: NONE_U64,
            name,
            device: ordinal,
            device_uuid: NONE_U32,
            graph_node: false,
            kind,
        });
    }

    fn host(&mut self, tid: u64, start: u64, end: u64, metadata_id: i64, stats: &[StatRef<'_>]) {
        let plane = &*self.plane;
        let name_text = plane.events.get(&metadata_id).map_or("", |meta| &meta.name);
        let pid = self.collected.threads.number(plane.id as u64);
        if let Some(kind) = api_kind(name_text) {
            let correlation = stats
                .iter()
                .find(|stat| plane.known_id(stat.metadata_id) == Some(Known::Correlation))
                .and_then(StatRef::integer)
                .and_then(|value| u64::try_from(value).ok())
                .unwrap_or(0);
            if correlation != 0 {
                let name = self.name(metadata_id);
                self.collected.runtime.push(RuntimeRow { start, end, correlation, pid, tid, name, kind });
                return;
            }
        }
        if let Some(scope) = self.spans.scope(name_text) {
            let name = self.name(metadata_id);
            self.collected.spans.push(SpanRow { start, end, pid, tid, name, scope });
        }
    }
}

/// An event's fields other than its stats.
struct Head {
    metadata_id: i64,
    data: Option<XEventData>,
    duration_ps: i64,
}

impl Head {
    fn of(event: &EventRef<'_>) -> Self {
        Self { metadata_id: event.metadata_id, data: event.data.clone(), duration_ps: event.duration_ps }
    }
}

/// A CUDA or HIP API call's kind by its name: the driver API (`cu*`,
/// `hipModule*`, `hipExtModule*`) or the runtime API (`cuda*`, `hip*`).
pub(crate) fn api_kind(name: &str) -> Option<RuntimeKind> {
    let api = |prefix: &str| {
        name.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
    };
    if api("hipModule") || api("hipExtModule") || (api("cu") && !name.starts_with("cuda")) {
        Some(RuntimeKind::Driver)
    } else if api("cuda") || api("hip") {
        Some(RuntimeKind::Runtime)
    } else {
        None
    }
}

/// The kind of a stream-line event without a details stat, by its name
/// (`MemcpyH2D`, `Memset`, ...).
fn kind_of_name(name: &str) -> GpuKind {
    let lower = name.to_ascii_lowercase();
    if lower.contains("memcpy") {
        GpuKind::Memcpy
    } else if lower.contains("memset") {
        GpuKind::Memset
    } else {
        GpuKind::Kernel
    }
}

/// `N` of a line named `Stream #N(...)`.
fn stream_of_name(name: &str) -> Option<u64> {
    let digits: String = name.split_once('#')?.1.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use super::*;

    #[test]
    fn api_names_split_into_driver_and_runtime() {
        assert_eq!(api_kind("cuLaunchKernel"), Some(RuntimeKind::Driver));
        assert_eq!(api_kind("cuGraphLaunch"), Some(RuntimeKind::Driver));
        assert_eq!(api_kind("hipModuleLaunchKernel"), Some(RuntimeKind::Driver));
        assert_eq!(api_kind("hipExtModuleLaunchKernel"), Some(RuntimeKind::Driver));
        assert_eq!(api_kind("cudaLaunchKernel"), Some(RuntimeKind::Runtime));
        assert_eq!(api_kind("cudaGraphLaunch"), Some(RuntimeKind::Runtime));
        assert_eq!(api_kind("hipMemsetAsync"), Some(RuntimeKind::Runtime));
        assert_eq!(api_kind("customCall"), None);
        assert_eq!(api_kind("cuda"), None);
        assert_eq!(api_kind("hipify"), None);
    }

    #[test]
    fn stream_lines_and_names() {
        assert_eq!(stream_of_name("Stream #7(MemcpyH2D)"), Some(7));
        assert_eq!(stream_of_name("Stream"), None);
        assert_eq!(kind_of_name("MemcpyD2H"), GpuKind::Memcpy);
        assert_eq!(kind_of_name("Memset"), GpuKind::Memset);
        assert_eq!(kind_of_name("fusion_3"), GpuKind::Kernel);
    }
}
