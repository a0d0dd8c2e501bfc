//! What an import keeps of a trace while reading it: compact rows of GPU
//! work, runtime calls and iteration spans, with names interned.
//!
//! Both readers (Kineto JSON, Nsight SQLite) fill a [`Collected`]; building
//! events from it is shared. A row is a few dozen bytes, so a trace's rows
//! take a small fraction of its JSON text.

use std::collections::BTreeMap;

use tally_utils::chunked::Chunked;
use tally_utils::intern::Interner;

use crate::record::ThreadId;

/// Sentinel for "not given" in the compact rows.
pub(crate) const NONE_U64: u64 = u64::MAX;
pub(crate) const NONE_U32: u32 = u32::MAX;

/// The kind of GPU work, as stormlog names it in `activity_kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
    /// A CUDA graph's launch recorded as a whole (Nsight's per-graph
    /// tracing): GPU work that is neither a copy nor a memset, so a
    /// `gpu_kernel`, marked in its metadata as spanning a whole graph.
    Graph,
}

impl GpuKind {
    pub(crate) fn activity_kind(self) -> &'static str {
        match self {
            GpuKind::Kernel | GpuKind::Graph => "gpu_kernel",
            GpuKind::Memcpy => "gpu_memcpy",
            GpuKind::Memset => "gpu_memset",
        }
    }
}

/// Runtime API or driver API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum RuntimeKind {
    Runtime,
    Driver,
}

impl RuntimeKind {
    pub(crate) fn activity_kind(self) -> &'static str {
        match self {
            RuntimeKind::Runtime => "cuda_runtime",
            RuntimeKind::Driver => "cuda_driver",
        }
    }
}

/// One kernel, copy or memset. Times are as the trace wrote them (before
/// its base time is added), in ns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuEvent {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// CUDA correlation ID; 0 when absent (CUPTI never uses 0).
    pub(crate) correlation: u64,
    pub(crate) stream: u64,
    /// CUDA graph ID; 0 when absent.
    pub(crate) graph_id: u64,
    /// Launching process where the format says (Nsight); a [`ThreadKey`].
    pub(crate) pid: u64,
    pub(crate) name: u32,
    pub(crate) device: u32,
    /// Nsight's device UUID, index into [`Collected::strings`].
    pub(crate) device_uuid: u32,
    /// Nsight's graph node, when the row came from a per-node graph capture.
    pub(crate) graph_node: bool,
    pub(crate) kind: GpuKind,
}

/// One runtime or driver API call on the host.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RuntimeRow {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) correlation: u64,
    pub(crate) pid: u64,
    pub(crate) tid: u64,
    pub(crate) name: u32,
    pub(crate) kind: RuntimeKind,
}

/// How far an iteration span reaches when linking launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum SpanScope {
    /// Any thread of the span's process (ProfilerStep, `--iteration-pattern`).
    Process,
    /// Only the span's own thread (stormlog's `stormlog.iteration/...`).
    Thread,
}

/// One host span that marks an iteration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpanRow {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) pid: u64,
    pub(crate) tid: u64,
    /// The range's name, interned.
    pub(crate) name: u32,
    pub(crate) scope: SpanScope,
}

/// Rows kept in blocks of 16384: growing never copies the rows nor doubles
/// the allocation, so the peak is the rows plus one block, not twice the
/// rows as a vector's growth would make it.
pub(crate) type Rows<T> = Chunked<T, BLOCK>;

const BLOCK: usize = 1 << 14;

/// Process and thread IDs as the trace writes them: numbers (almost always)
/// or strings (`"Spans"`). A number below 2^63 is its own key; anything else
/// is interned and keyed with the top bit set.
#[derive(Debug, Default)]
pub(crate) struct ThreadKeys {
    texts: Interner,
}

const TEXT_KEY: u64 = 1 << 63;

impl ThreadKeys {
    pub(crate) fn number(&mut self, value: u64) -> u64 {
        if value < TEXT_KEY { value } else { TEXT_KEY | u64::from(self.texts.intern(&value.to_string())) }
    }

    pub(crate) fn text(&mut self, value: &str) -> u64 {
        TEXT_KEY | u64::from(self.texts.intern(value))
    }

    /// The numeric ID behind a key, for a context's `pid`.
    pub(crate) fn as_number(key: u64) -> Option<u64> {
        (key < TEXT_KEY).then_some(key)
    }

    /// The ID behind a key, as the trace wrote it.
    pub(crate) fn id(&self, key: u64) -> ThreadId<'_> {
        match Self::as_number(key) {
            Some(number) => ThreadId::Number(number),
            None => match u32::try_from(key & !TEXT_KEY).ok().and_then(|id| self.texts.get(id)) {
                Some(text) => ThreadId::Text(text),
                None => ThreadId::Unknown,
            },
        }
    }
}

/// The metadata keys of a GPU row's labels ([`Collected::gpu_labels`]):
/// the XLA op, XLA module and framework op an XPlane profile names for a
/// kernel.
pub(crate) const LABEL_KEYS: [&str; 3] = ["hlo_op", "hlo_module", "tf_op"];

/// Everything an import keeps of one trace.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub(crate) names: Interner,
    pub(crate) strings: Interner,
    pub(crate) threads: ThreadKeys,
    pub(crate) gpu: Rows<GpuEvent>,
    pub(crate) runtime: Rows<RuntimeRow>,
    pub(crate) spans: Vec<SpanRow>,
    /// Events read from the trace, of any kind.
    pub(crate) events_read: u64,
    /// Events left out, by reason (`missing dur`, `negative dur`, ...).
    pub(crate) skipped: BTreeMap<String, u64>,
    /// Events recognised and deliberately not imported, by what they are.
    pub(crate) ignored: BTreeMap<String, u64>,
    /// Timestamps with digits below a nanosecond, rounded.
    pub(crate) rounded_timestamps: u64,
    /// Some timestamp or duration had a fraction of a microsecond: the
    /// trace's resolution is finer than its unit.
    pub(crate) sub_microsecond: bool,
    /// The first few messages about malformed events.
    pub(crate) examples: Vec<Example>,
    /// Notes for the summary (missing tables, unnamed devices, ...).
    pub(crate) notes: Vec<String>,
    /// Rows present in the source that no reader imports, by what they are.
    pub(crate) not_imported: BTreeMap<String, u64>,
    /// Labels of GPU rows, written into each row's activity metadata: by
    /// row index, an index into [`Collected::label_sets`] or `NONE_U32`;
    /// rows past its end have none (so it stays empty where no row has a
    /// label). Four bytes a row, in blocks like the rows: an XLA profile
    /// labels nearly every kernel, with few distinct labels. Only XPlane
    /// fills it (its profiles are read whole, never split, so
    /// [`Collected::absorb`] does not carry it).
    pub(crate) gpu_labels: Rows<u32>,
    /// The distinct labels of GPU rows: names interned in `names`, or
    /// `NONE_U32`, under [`LABEL_KEYS`].
    pub(crate) label_sets: Vec<[u32; 3]>,
}

/// How many malformed-event messages a summary keeps.
const EXAMPLES: usize = 5;

/// A message about a malformed or skipped event. Kineto's name the event
/// by its index in `traceEvents`, kept apart from the text so that a part
/// of the array read on its own thread (which does not know how many
/// events came before it) can be renumbered when it is merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Example {
    pub(crate) event: Option<u64>,
    pub(crate) text: String,
}

impl std::fmt::Display for Example {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.event {
            Some(index) => write!(f, "traceEvents[{index}]{}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

impl Collected {
    pub(crate) fn skip(&mut self, reason: &str, example: impl FnOnce() -> String) {
        self.skip_example(reason, || Example { event: None, text: example() });
    }

    /// [`Collected::skip`] of the Kineto event at `index`; `detail` follows
    /// `traceEvents[index]` in the message.
    pub(crate) fn skip_event(&mut self, reason: &str, index: u64, detail: impl FnOnce() -> String) {
        self.skip_example(reason, || Example { event: Some(index), text: detail() });
    }

    fn skip_example(&mut self, reason: &str, example: impl FnOnce() -> Example) {
        *self.skipped.entry(reason.to_owned()).or_default() += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(example());
        }
    }

    /// Appends what was read of a later part of the same trace, whose
    /// first event is event `events_before` of the whole: the rows, counts
    /// and messages are what one reading of both parts gives, names and
    /// thread keys interned in the same order.
    pub(crate) fn absorb(&mut self, later: Collected, events_before: u64) {
        let names: Vec<u32> = later.names.iter().map(|name| self.names.intern(name)).collect();
        let strings: Vec<u32> = later.strings.iter().map(|text| self.strings.intern(text)).collect();
        let threads: Vec<u64> = later.threads.texts.iter().map(|text| self.threads.text(text)).collect();
        let name = |id: u32| names.get(id as usize).copied().unwrap_or(id);
        let string = |id: u32| strings.get(id as usize).copied().unwrap_or(id);
        let thread = |key: u64| match ThreadKeys::as_number(key) {
            Some(_) => key,
            None => {
                usize::try_from(key & !TEXT_KEY).ok().and_then(|id| threads.get(id)).copied().unwrap_or(key)
            }
        };
        for row in later.gpu {
            self.gpu.push(GpuEvent {
                name: name(row.name),
                device_uuid: string(row.device_uuid),
                pid: if row.pid == NONE_U64 { row.pid } else { thread(row.pid) },
                ..row
            });
        }
        for row in later.runtime {
            self.runtime.push(RuntimeRow {
                name: name(row.name),
                pid: thread(row.pid),
                tid: thread(row.tid),
                ..row
            });
        }
        for row in later.spans {
            self.spans.push(SpanRow {
                name: name(row.name),
                pid: thread(row.pid),
                tid: thread(row.tid),
                ..row
            });
        }
        self.events_read += later.events_read;
        for (reason, count) in later.skipped {
            *self.skipped.entry(reason).or_default() += count;
        }
        for (what, count) in later.ignored {
            *self.ignored.entry(what).or_default() += count;
        }
        for (what, count) in later.not_imported {
            *self.not_imported.entry(what).or_default() += count;
        }
        self.rounded_timestamps += later.rounded_timestamps;
        self.sub_microsecond |= later.sub_microsecond;
        for example in later.examples {
            if self.examples.len() >= EXAMPLES {
                break;
            }
            let event = example.event.map(|index| index + events_before);
            self.examples.push(Example { event, ..example });
        }
        self.notes.extend(later.notes);
    }

    pub(crate) fn ignore(&mut self, what: &str) {
        *self.ignored.entry(what.to_owned()).or_default() += 1;
    }

    /// The labels of GPU row `row`, if it has any.
    pub(crate) fn labels_of(&self, row: usize) -> Option<&[u32; 3]> {
        let set = if row < self.gpu_labels.len() { self.gpu_labels[row] } else { NONE_U32 };
        self.label_sets.get(set as usize)
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id).unwrap_or("")
    }
}
