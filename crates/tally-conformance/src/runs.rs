//! proptest strategies for whole runs of correlation evidence: requests,
//! attempts, iterations, memberships, stages, GPU activities and clock
//! alignments whose references collide on purpose (known, unknown, shared),
//! so that resolution and accounting meet every case. `tally_core::arbitrary`
//! generates single valid events; these generate coherent streams.
//!
//! Every generated run is valid: no two events conflict, event IDs are unique
//! per run (so no ordering ties exist), and re-reports of an entity under a
//! second event ID repeat its content exactly. Beside the plain cases they
//! hold overlapping and touching activities, `metadata.intervals`, several
//! devices and clock kinds (unmeasurable wall clocks, activities without a
//! device or an end), unattributed activities, references to unknown
//! requests, attempts and iterations, alignments with validity windows and
//! legacy execution-import alignments with every shape of `gap_ns`, and
//! memberships whose metadata numbers a re-delivery may spell `1`, `1.0` or
//! `true` (equal to Python).
//!
//! ```
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//! let mut runner = TestRunner::deterministic();
//! let run = tally_conformance::runs::arb_run().new_tree(&mut runner).unwrap().current();
//! assert!(run.records().len() >= run.legacy_count());
//! ```

use proptest::prelude::*;
use serde_json::{Value, json};
use tally_core::{InferenceRecord, parse_inference_record};

/// The run ID of every generated record.
pub const RUN_ID: &str = "run";

/// Contexts activities are captured in: `(producer, clock domain, clock
/// kind, device)`; the last two cannot be measured (a wall clock, no
/// device).
pub const ACTIVITY_CONTEXTS: [(&str, &str, &str, Option<&str>); 5] = [
    ("trace-0", "cuda:0", "device", Some("GPU-0")),
    ("trace-1", "host", "monotonic", Some("GPU-1")),
    ("trace-0b", "cuda:0", "device", Some("GPU-0")),
    ("trace-w", "wall", "wall", Some("GPU-0")),
    ("trace-n", "host", "monotonic", None),
];

/// The clock domains alignments connect (queries add one nobody aligned).
pub const ALIGNMENT_DOMAINS: [&str; 3] = ["host", "cuda:0", "wall"];

/// The context `source` of stormlog's legacy execution-import alignments.
const LEGACY_IMPORT_SOURCE: &str = "stormlog.infer.import_execution";

/// One generated activity.
#[derive(Debug, Clone)]
pub struct ActivitySpec {
    context: usize,
    domain: &'static str,
    iteration: Option<usize>,
    start: u64,
    /// Start where the previous activity ends (touching intervals).
    touch: bool,
    length: Option<u64>,
    /// `[offset, duration]` pairs, made valid against the length.
    pieces: Vec<(u64, u64)>,
    stream: Option<u64>,
    /// Kind, name and launch correlation; `None` is kind `kernel`, no name.
    label: Option<ActivityLabel>,
}

/// What [`arb_labelled_run`] adds to an activity: the evidence the overlap
/// breakdown reads.
#[derive(Debug, Clone, Copy)]
pub struct ActivityLabel {
    /// `activity_kind`.
    pub kind: &'static str,
    /// `metadata.name`.
    pub name: Option<&'static str>,
    /// `cuda_correlation_id`, in one shared `correlation_scope`.
    pub correlation: Option<u64>,
}

/// Kinds a labelled GPU activity gets: kernels, copies, sets, a kind marked
/// communication, and one tally does not know.
pub const GPU_KINDS: [&str; 6] =
    ["kernel", "gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_communication", "cuda_sync"];
/// Names a labelled activity gets: collectives, copies with and without a
/// direction, compute kernels, runtime launches and synchronisations.
pub const ACTIVITY_NAMES: [&str; 8] = [
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    "RCCL_allgather",
    "Memcpy HtoD (Pageable -> Device)",
    "Memcpy DtoD (Device -> Device)",
    "sm80_gemm",
    "elementwise",
    "cudaLaunchKernel",
    "cudaStreamSynchronize",
];

/// One generated membership.
#[derive(Debug, Clone)]
pub struct MembershipSpec {
    request: usize,
    attempt: Option<usize>,
    iteration: usize,
    decode: bool,
    /// `metadata.batch_position`, when any.
    position: Option<u8>,
}

/// How a legacy execution-import alignment spells its `gap_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyGap {
    /// A non-negative integer: the bracket's width.
    Width(u64),
    /// A negative integer: not a bracket.
    Negative,
    /// A float: not a bracket.
    Float,
    /// `true`: not a bracket (Python's bool is no integer here).
    Bool,
    /// No `gap_ns` at all.
    Missing,
    /// A width beside an `alignment_basis`: a current alignment.
    WithBasis(u64),
}

/// One generated clock alignment.
#[derive(Debug, Clone)]
pub struct AlignmentSpec {
    from: usize,
    to: usize,
    offset: i64,
    uncertainty: u64,
    valid_from: Option<u64>,
    /// The window's length after `valid_from` (or 0).
    valid_for: Option<u64>,
    legacy: Option<LegacyGap>,
}

impl AlignmentSpec {
    /// `(from, to)` clock domains.
    pub fn domains(&self) -> (&'static str, &'static str) {
        (ALIGNMENT_DOMAINS[self.from], ALIGNMENT_DOMAINS[self.to])
    }

    /// The validity window's bounds, as written.
    pub fn window(&self) -> (Option<u64>, Option<u64>) {
        let to = self.valid_for.map(|length| self.valid_from.unwrap_or(0) + length);
        (self.valid_from, to)
    }
}

/// A run: the counts and references that become records.
#[derive(Debug, Clone)]
pub struct RunSpec {
    requests: usize,
    attempts: Vec<usize>,
    iterations: Vec<(u64, Option<u64>, bool)>,
    memberships: Vec<MembershipSpec>,
    stages: Vec<(Option<usize>, Option<usize>)>,
    activities: Vec<ActivitySpec>,
    alignments: Vec<AlignmentSpec>,
    /// Indices of records to report again under a second event ID.
    rereports: Vec<usize>,
    legacy: usize,
}

fn activity() -> impl Strategy<Value = ActivitySpec> {
    (
        0usize..ACTIVITY_CONTEXTS.len(),
        prop_oneof![8 => Just("gpu"), 1 => Just("runtime"), 1 => Just("cpu")],
        proptest::option::weighted(0.85, 0usize..8),
        (0u64..6_000, proptest::bool::weighted(0.15)),
        proptest::option::weighted(0.95, prop_oneof![Just(0u64), 1u64..200, 200u64..5_000]),
        proptest::collection::vec((0u64..100, 0u64..100), 0..4),
        proptest::option::of(prop_oneof![Just(7u64), Just(13u64)]),
    )
        .prop_map(|(context, domain, iteration, (start, touch), length, raw, stream)| {
            // Lay the raw pairs out left to right inside the span, so they
            // are sorted, disjoint and inside, as stormlog requires.
            let mut pieces = Vec::new();
            if let Some(length) = length {
                let mut cursor = 0;
                for (gap, duration) in raw {
                    let offset = cursor + gap;
                    if offset + duration > length {
                        break;
                    }
                    pieces.push((offset, duration));
                    cursor = offset + duration;
                }
            }
            ActivitySpec { context, domain, iteration, start, touch, length, pieces, stream, label: None }
        })
}

fn alignment() -> impl Strategy<Value = AlignmentSpec> {
    let legacy = prop_oneof![
        (0u64..500).prop_map(LegacyGap::Width),
        Just(LegacyGap::Negative),
        Just(LegacyGap::Float),
        Just(LegacyGap::Bool),
        Just(LegacyGap::Missing),
        (0u64..500).prop_map(LegacyGap::WithBasis),
    ];
    (
        0usize..ALIGNMENT_DOMAINS.len(),
        0usize..ALIGNMENT_DOMAINS.len(),
        -1_000i64..1_000,
        0u64..100,
        proptest::option::weighted(0.4, 0u64..5_000),
        proptest::option::weighted(0.4, 1u64..5_000),
        proptest::option::weighted(0.3, legacy),
    )
        .prop_map(|(from, to, offset, uncertainty, valid_from, valid_for, legacy)| AlignmentSpec {
            from,
            to,
            offset,
            uncertainty,
            valid_from,
            valid_for,
            legacy,
        })
}

/// A whole run; see the module docs.
pub fn arb_run() -> impl Strategy<Value = RunSpec> {
    (
        0usize..6,
        proptest::collection::vec(0usize..6, 0..4),
        proptest::collection::vec(
            (0u64..50_000, proptest::option::weighted(0.8, 0u64..20_000), any::<bool>()),
            0..6,
        ),
        proptest::collection::vec(
            (
                0usize..8,
                proptest::option::weighted(0.3, 0usize..5),
                0usize..8,
                any::<bool>(),
                proptest::option::weighted(0.3, 0u8..3),
            )
                .prop_map(|(request, attempt, iteration, decode, position)| MembershipSpec {
                    request,
                    attempt,
                    iteration,
                    decode,
                    position,
                }),
            0..12,
        ),
        proptest::collection::vec((proptest::option::of(0usize..8), proptest::option::of(0usize..8)), 0..4),
        proptest::collection::vec(activity(), 0..30),
        proptest::collection::vec(alignment(), 0..5),
        proptest::collection::vec(any::<prop::sample::Index>(), 0..5),
        0usize..3,
    )
        .prop_map(
            |(requests, attempts, iterations, memberships, stages, activities, alignments, picks, legacy)| {
                let mut spec = RunSpec {
                    requests,
                    attempts,
                    iterations,
                    memberships,
                    stages,
                    activities,
                    alignments,
                    rereports: Vec::new(),
                    legacy,
                };
                let count = spec.event_values().len();
                if count > 0 {
                    spec.rereports = picks.iter().map(|pick| pick.index(count)).collect();
                }
                spec
            },
        )
}

/// [`arb_run`] with every activity labelled: a kind (for GPU activities,
/// one of [`GPU_KINDS`]; runtime ones `cuda_runtime`), often a name of
/// [`ACTIVITY_NAMES`], and often a CUDA correlation ID from a small range, so
/// launch calls and the work they launched link (and sometimes collide).
/// The records are those of an [`arb_run`] otherwise.
pub fn arb_labelled_run() -> impl Strategy<Value = RunSpec> {
    arb_run()
        .prop_flat_map(|spec| {
            let count = spec.activities.len();
            let label = (
                0usize..GPU_KINDS.len(),
                proptest::option::weighted(0.8, 0usize..ACTIVITY_NAMES.len()),
                proptest::option::weighted(0.6, 0u64..8),
            );
            (Just(spec), proptest::collection::vec(label, count))
        })
        .prop_map(|(mut spec, labels)| {
            for (activity, (kind, name, correlation)) in spec.activities.iter_mut().zip(labels) {
                let kind = if activity.domain == "runtime" { "cuda_runtime" } else { GPU_KINDS[kind] };
                activity.label =
                    Some(ActivityLabel { kind, name: name.map(|name| ACTIVITY_NAMES[name]), correlation });
            }
            spec
        })
}

fn context(producer: &str, domain: &str, kind: &str, device: Option<&str>) -> Value {
    json!({"run_id": RUN_ID, "session_id": format!("s-{producer}"), "producer_id": producer,
           "source": "gen", "clock_domain": domain, "clock_kind": kind, "collection_mode": "imported",
           "provenance": "observed", "device_uuid": device})
}

fn reference(producer: &str, id: String) -> Value {
    json!({"producer_id": producer, "id": id})
}

impl RunSpec {
    /// The ID of request `index` (past the generated ones: unknown).
    pub fn request_id(index: usize) -> String {
        format!("req-{index}")
    }

    /// The ID of attempt `index`.
    pub fn attempt_id(index: usize) -> String {
        format!("try-{index}")
    }

    /// The reference of iteration `index` (past the generated ones: unknown).
    pub fn iteration_ref(index: usize) -> Value {
        reference("engine", format!("step-{index}"))
    }

    /// How many iterations were generated.
    pub fn iteration_count(&self) -> usize {
        self.iterations.len()
    }

    /// How many requests were generated.
    pub fn request_count(&self) -> usize {
        self.requests
    }

    /// The generated alignments.
    pub fn alignments(&self) -> &[AlignmentSpec] {
        &self.alignments
    }

    /// How many legacy v1 records the run ends with.
    pub fn legacy_count(&self) -> usize {
        self.legacy
    }

    /// The event records (as JSON, without event IDs), in generation order.
    fn event_values(&self) -> Vec<Value> {
        let api = context("api", "host", "monotonic", None);
        let engine = context("engine", "host", "monotonic", None);
        let mut out = Vec::new();
        for request in 0..self.requests {
            out.push(json!({"event_type": "infer.request", "context": api,
                "request_ref": reference("api", Self::request_id(request)),
                "start_ns": request as u64 * 10, "end_ns": request as u64 * 10 + 5}));
        }
        for (position, request) in self.attempts.iter().enumerate() {
            out.push(json!({"event_type": "infer.request", "context": api,
                "request_ref": reference("api", Self::request_id(*request)),
                "attempt_ref": reference("api", Self::attempt_id(position))}));
        }
        for (index, (start, length, wall)) in self.iterations.iter().enumerate() {
            let context = if *wall { context("engine", "wall", "wall", None) } else { engine.clone() };
            out.push(json!({"event_type": "infer.iteration", "context": context,
                "iteration_ref": Self::iteration_ref(index), "start_ns": start,
                "end_ns": length.map(|length| start + length)}));
        }
        let mut seen = std::collections::HashSet::new();
        for membership in &self.memberships {
            let key = (membership.request, membership.attempt, membership.iteration, membership.decode);
            if !seen.insert(key) {
                continue; // one membership entity, one description
            }
            let mut record = json!({"event_type": "infer.membership", "context": engine,
                "request_ref": reference("api", Self::request_id(membership.request)),
                "attempt_ref": membership.attempt.map(|attempt| reference("api", Self::attempt_id(attempt))),
                "iteration_ref": Self::iteration_ref(membership.iteration),
                "role": if membership.decode { "decode" } else { "prefill" }});
            if let Some(position) = membership.position {
                record["metadata"] = json!({"batch_position": position});
            }
            out.push(record);
        }
        for (index, (request, iteration)) in self.stages.iter().enumerate() {
            if request.is_none() && iteration.is_none() {
                continue;
            }
            out.push(json!({"event_type": "infer.stage", "context": engine,
                "stage_ref": reference("engine", format!("stage-{index}")), "name": "prefill",
                "request_ref": request.map(|r| reference("api", Self::request_id(r))),
                "iteration_ref": iteration.map(Self::iteration_ref)}));
        }
        let mut previous_end = None;
        for (index, activity) in self.activities.iter().enumerate() {
            let (producer, domain, kind, device) = ACTIVITY_CONTEXTS[activity.context];
            let start = match (activity.touch, previous_end) {
                (true, Some(end)) => end,
                _ => activity.start,
            };
            let end = activity.length.map(|length| start + length);
            previous_end = end.or(previous_end);
            let mut record = json!({"event_type": "infer.activity_ref",
                "context": context(producer, domain, kind, device),
                "activity_ref": reference(producer, format!("act-{index}")), "activity_kind": "kernel",
                "activity_domain": activity.domain,
                "attribution_status": if activity.iteration.is_some() { "linked" } else { "unresolved" },
                "iteration_ref": activity.iteration.map(Self::iteration_ref),
                "stream_id": activity.stream, "start_ns": start, "end_ns": end});
            if !activity.pieces.is_empty() {
                let pieces: Vec<Value> = activity.pieces.iter().map(|(o, d)| json!([o, d])).collect();
                record["metadata"] = json!({"intervals": pieces});
                record["schema_version"] = json!(3);
            }
            if let Some(label) = activity.label {
                record["activity_kind"] = json!(label.kind);
                if let Some(name) = label.name {
                    record["metadata"]["name"] = json!(name);
                }
                if let Some(correlation) = label.correlation {
                    record["cuda_correlation_id"] = json!(correlation);
                    record["correlation_scope"] = reference("gen", "process/1".to_owned());
                }
            }
            out.push(record);
        }
        let mut keys = std::collections::HashSet::new();
        for alignment in &self.alignments {
            let (from, to) = alignment.domains();
            let (valid_from, valid_to) = alignment.window();
            // One alignment entity per key (its context, domains, offset,
            // uncertainty and window), one description: two legacy ones
            // differing only in metadata would conflict.
            let key = (
                alignment.legacy.is_some(),
                from,
                to,
                alignment.offset,
                alignment.uncertainty,
                valid_from,
                valid_to,
            );
            if !keys.insert(key) {
                continue;
            }
            let (context, metadata) = match alignment.legacy {
                None => (engine.clone(), None),
                Some(gap) => {
                    let mut legacy = context("importer", "host", "monotonic", None);
                    legacy["source"] = json!(LEGACY_IMPORT_SOURCE);
                    let metadata = match gap {
                        LegacyGap::Width(width) => json!({"gap_ns": width}),
                        LegacyGap::Negative => json!({"gap_ns": -5}),
                        LegacyGap::Float => json!({"gap_ns": 2.5}),
                        LegacyGap::Bool => json!({"gap_ns": true}),
                        LegacyGap::Missing => json!({}),
                        LegacyGap::WithBasis(width) => json!({"gap_ns": width, "alignment_basis": "bracket"}),
                    };
                    (legacy, Some(metadata))
                }
            };
            let mut record = json!({"event_type": "infer.clock_alignment", "context": context,
                "from_clock_domain": from, "to_clock_domain": to,
                "offset_ns": alignment.offset, "uncertainty_ns": alignment.uncertainty,
                "valid_from_ns": valid_from, "valid_to_ns": valid_to});
            if let Some(metadata) = metadata {
                record["metadata"] = metadata;
            }
            out.push(record);
        }
        out
    }

    /// The run's records as JSON objects: events with unique IDs, re-reports
    /// of some entities under a second ID, and legacy v1 records last.
    pub fn values(&self) -> Vec<Value> {
        let mut values = self.event_values();
        let mut second: Vec<Value> = self.rereports.iter().map(|&index| values[index].clone()).collect();
        // IDs sort in generation order; a re-report's ID sorts before or
        // after the first report's, alternately, so either may be kept.
        for (index, value) in values.iter_mut().enumerate() {
            value["event_id"] = json!(format!("e{index:05}"));
        }
        for (position, value) in second.iter_mut().enumerate() {
            let prefix = if position % 2 == 0 { "a" } else { "z" };
            value["event_id"] = json!(format!("{prefix}{position:05}"));
        }
        values.extend(second);
        for value in &mut values {
            if value.get("schema_version").is_none() {
                value["schema_version"] = json!(2);
            }
        }
        for index in 0..self.legacy {
            values.push(json!({"event_type": "infer.request", "request_id": format!("v1-{index}")}));
        }
        values
    }

    /// The run's records, parsed: [`RunSpec::values`] as tally's model.
    pub fn records(&self) -> Vec<InferenceRecord> {
        self.values()
            .into_iter()
            // Invariant: the generator builds valid records only (the
            // module's contract, checked by every property using it).
            .map(|value| parse_inference_record(value).expect("generated records are valid"))
            .collect()
    }
}

/// A permutation of `0..len` and a subset of it to deliver twice, for
/// invariance properties: apply with [`deliver`].
pub fn arb_delivery(len: usize) -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    let order = Just((0..len).collect::<Vec<usize>>()).prop_shuffle();
    let repeats = proptest::collection::vec(any::<prop::sample::Index>(), 0..len.max(1));
    (order, repeats).prop_map(move |(order, repeats)| {
        let repeats =
            if len == 0 { Vec::new() } else { repeats.iter().map(|pick| pick.index(len)).collect() };
        (order, repeats)
    })
}

/// `records` in the given order, with the `repeats` delivered again,
/// interleaved by position.
pub fn deliver<T: Clone>(records: &[T], order: &[usize], repeats: &[usize]) -> Vec<T> {
    let mut out: Vec<T> = order.iter().map(|&index| records[index].clone()).collect();
    for (position, &index) in repeats.iter().enumerate() {
        let at = (position * 7 + index) % (out.len() + 1);
        out.insert(at, records[index].clone());
    }
    out
}
