//! proptest strategies for whole runs of correlation evidence: requests,
//! attempts, iterations, memberships, stages, GPU activities and clock
//! alignments whose references collide on purpose (known, unknown, shared),
//! so that resolution and accounting meet every case. `tally_core::arbitrary`
//! generates single valid events; these generate coherent streams.
//!
//! Every generated run is valid: no two events conflict, event IDs are unique
//! per run (so no ordering ties exist), and re-reports of an entity under a
//! second event ID repeat its content exactly.
//!
//! ```
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//! let mut runner = TestRunner::deterministic();
//! let run = tally_tests::runs::arb_run().new_tree(&mut runner).unwrap().current();
//! assert!(run.records().len() >= 1);
//! ```

use proptest::prelude::*;
use serde_json::{Value, json};
use tally_core::{InferenceRecord, parse_inference_record};

/// Contexts activities are captured in; the last two cannot be measured.
const ACTIVITY_CONTEXTS: [(&str, &str, &str, Option<&str>); 5] = [
    ("trace-0", "cuda:0", "device", Some("GPU-0")),
    ("trace-1", "host", "monotonic", Some("GPU-1")),
    ("trace-0b", "cuda:0", "device", Some("GPU-0")),
    ("trace-w", "wall", "wall", Some("GPU-0")),
    ("trace-n", "host", "monotonic", None),
];

/// One generated activity.
#[derive(Debug, Clone)]
pub struct ActivitySpec {
    context: usize,
    domain: &'static str,
    iteration: Option<usize>,
    start: u64,
    length: Option<u64>,
    /// `[offset, duration]` pairs, made valid against the length.
    pieces: Vec<(u64, u64)>,
    stream: Option<u64>,
}

/// One generated membership.
#[derive(Debug, Clone)]
pub struct MembershipSpec {
    request: usize,
    attempt: Option<usize>,
    iteration: usize,
    decode: bool,
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
    alignments: Vec<(u8, u8, i64, u64)>,
    /// Indices of records to report again under a second event ID.
    rereports: Vec<usize>,
    legacy: usize,
}

fn activity() -> impl Strategy<Value = ActivitySpec> {
    (
        0usize..ACTIVITY_CONTEXTS.len(),
        prop_oneof![8 => Just("gpu"), 1 => Just("runtime"), 1 => Just("cpu")],
        proptest::option::weighted(0.85, 0usize..8),
        0u64..6_000,
        proptest::option::weighted(0.95, prop_oneof![Just(0u64), 1u64..200, 200u64..5_000]),
        proptest::collection::vec((0u64..100, 0u64..100), 0..4),
        proptest::option::of(prop_oneof![Just(7u64), Just(13u64)]),
    )
        .prop_map(|(context, domain, iteration, start, length, raw, stream)| {
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
            ActivitySpec { context, domain, iteration, start, length, pieces, stream }
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
            (0usize..8, proptest::option::weighted(0.3, 0usize..5), 0usize..8, any::<bool>()).prop_map(
                |(request, attempt, iteration, decode)| MembershipSpec {
                    request,
                    attempt,
                    iteration,
                    decode,
                },
            ),
            0..12,
        ),
        proptest::collection::vec((proptest::option::of(0usize..8), proptest::option::of(0usize..8)), 0..4),
        proptest::collection::vec(activity(), 0..30),
        proptest::collection::vec((0u8..3, 0u8..3, -1_000i64..1_000, 0u64..100), 0..4),
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
                let count = spec.event_records().len();
                if count > 0 {
                    spec.rereports = picks.iter().map(|pick| pick.index(count)).collect();
                }
                spec
            },
        )
}

fn context(producer: &str, domain: &str, kind: &str, device: Option<&str>) -> Value {
    json!({"run_id": "run", "session_id": format!("s-{producer}"), "producer_id": producer,
           "source": "gen", "clock_domain": domain, "clock_kind": kind, "collection_mode": "imported",
           "provenance": "observed", "device_uuid": device})
}

fn reference(producer: &str, id: String) -> Value {
    json!({"producer_id": producer, "id": id})
}

impl RunSpec {
    fn request_id(index: usize) -> String {
        format!("req-{index}")
    }

    fn iteration_ref(&self, index: usize) -> Value {
        // Indices past the generated iterations name unknown ones.
        reference("engine", format!("step-{index}"))
    }

    /// The event records (as JSON, without event IDs), in generation order.
    fn event_records(&self) -> Vec<Value> {
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
                "attempt_ref": reference("api", format!("try-{position}"))}));
        }
        for (index, (start, length, wall)) in self.iterations.iter().enumerate() {
            let context = if *wall { context("engine", "wall", "wall", None) } else { engine.clone() };
            out.push(json!({"event_type": "infer.iteration", "context": context,
                "iteration_ref": self.iteration_ref(index), "start_ns": start,
                "end_ns": length.map(|length| start + length)}));
        }
        let mut seen = std::collections::HashSet::new();
        for membership in &self.memberships {
            let key = (membership.request, membership.attempt, membership.iteration, membership.decode);
            if !seen.insert(key) {
                continue; // one membership entity, one description
            }
            out.push(json!({"event_type": "infer.membership", "context": engine,
                "request_ref": reference("api", Self::request_id(membership.request)),
                "attempt_ref": membership.attempt.map(|attempt| reference("api", format!("try-{attempt}"))),
                "iteration_ref": self.iteration_ref(membership.iteration),
                "role": if membership.decode { "decode" } else { "prefill" }}));
        }
        for (index, (request, iteration)) in self.stages.iter().enumerate() {
            if request.is_none() && iteration.is_none() {
                continue;
            }
            out.push(json!({"event_type": "infer.stage", "context": engine,
                "stage_ref": reference("engine", format!("stage-{index}")), "name": "prefill",
                "request_ref": request.map(|r| reference("api", Self::request_id(r))),
                "iteration_ref": iteration.map(|i| self.iteration_ref(i))}));
        }
        for (index, activity) in self.activities.iter().enumerate() {
            let (producer, domain, kind, device) = ACTIVITY_CONTEXTS[activity.context];
            let mut record = json!({"event_type": "infer.activity_ref",
                "context": context(producer, domain, kind, device),
                "activity_ref": reference(producer, format!("act-{index}")), "activity_kind": "kernel",
                "activity_domain": activity.domain,
                "attribution_status": if activity.iteration.is_some() { "linked" } else { "unresolved" },
                "iteration_ref": activity.iteration.map(|i| self.iteration_ref(i)),
                "stream_id": activity.stream, "start_ns": activity.start,
                "end_ns": activity.length.map(|length| activity.start + length)});
            if !activity.pieces.is_empty() {
                let pieces: Vec<Value> = activity.pieces.iter().map(|(o, d)| json!([o, d])).collect();
                record["metadata"] = json!({"intervals": pieces});
                record["schema_version"] = json!(3);
            }
            out.push(record);
        }
        let domains = ["host", "cuda:0", "wall"];
        for (from, to, offset, uncertainty) in &self.alignments {
            out.push(json!({"event_type": "infer.clock_alignment", "context": engine,
                "from_clock_domain": domains[usize::from(*from)], "to_clock_domain": domains[usize::from(*to)],
                "offset_ns": offset, "uncertainty_ns": uncertainty}));
        }
        out
    }

    /// The run's records: events with unique IDs, re-reports of some
    /// entities under a second ID, and legacy v1 records.
    pub fn records(&self) -> Vec<InferenceRecord> {
        let mut values = self.event_records();
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
        let mut records: Vec<InferenceRecord> = values
            .into_iter()
            .map(|mut value| {
                if value.get("schema_version").is_none() {
                    value["schema_version"] = json!(2);
                }
                // The generator builds valid records only.
                parse_inference_record(value).expect("generated records are valid")
            })
            .collect();
        for index in 0..self.legacy {
            let legacy = json!({"event_type": "infer.request", "request_id": format!("v1-{index}")});
            records.push(parse_inference_record(legacy).expect("a v1 record is valid"));
        }
        records
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
