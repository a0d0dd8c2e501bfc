//! Generated cases: a [`RunSpec`] delivered in some order with repeats,
//! split into rank files of chosen forms, perhaps broken on purpose (then
//! the expected answer is a rejection), and, by kind, a share model or
//! alignment queries.
//!
//! Every part is a proptest strategy, so a failing case shrinks: fewer
//! records, one file, embedded form, no gzip, no shuffle.
//!
//! ```
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//! use tally_conformance::{Kind, generate::arb_case};
//! let mut runner = TestRunner::deterministic();
//! let case = arb_case(Kind::Shares).new_tree(&mut runner).unwrap().current().build();
//! assert!(case.model.is_some() && !case.files.is_empty());
//! ```

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};
use tally_artifact::Form;
use tally_core::parse_inference_record;

use crate::case::{Case, CaseFile, Kind};
use crate::runs::{ALIGNMENT_DOMAINS, RunSpec, arb_run};

/// How a re-delivery spells the number `1` in metadata: Python finds `1`,
/// `1.0` and `true` equal, so all three are the same event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// As first delivered.
    Same,
    /// `1` as `1.0`.
    Float,
    /// `1` as `true`.
    Bool,
}

/// A field rule an invalid record breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRule {
    /// `event_id` empty.
    EmptyEventId,
    /// No `context`.
    MissingContext,
    /// `context.clock_kind` not monotonic, wall or device.
    BadClockKind,
    /// `context.run_id` not a string.
    RunIdNotString,
    /// An unsupported `schema_version`.
    BadSchemaVersion,
    /// An `event_type` that names no inference event.
    UnknownEventType,
    /// A negative time.
    NegativeTime,
    /// `end_ns` before `start_ns`.
    EndBeforeStart,
    /// A time that is a float.
    FloatTime,
    /// A time that is `true`.
    BoolTime,
    /// A reference whose producer is empty.
    BadReference,
    /// `metadata` not an object.
    MetadataNotObject,
    /// A key the event type does not have.
    UnknownKey,
}

impl FieldRule {
    /// Every rule.
    pub const ALL: [FieldRule; 13] = [
        FieldRule::EmptyEventId,
        FieldRule::MissingContext,
        FieldRule::BadClockKind,
        FieldRule::RunIdNotString,
        FieldRule::BadSchemaVersion,
        FieldRule::UnknownEventType,
        FieldRule::NegativeTime,
        FieldRule::EndBeforeStart,
        FieldRule::FloatTime,
        FieldRule::BoolTime,
        FieldRule::BadReference,
        FieldRule::MetadataNotObject,
        FieldRule::UnknownKey,
    ];

    /// Breaks `record` by this rule.
    fn apply(self, record: &mut Value) {
        let time_field = if record.get("start_ns").is_some_and(Value::is_u64) { "start_ns" } else { "" };
        match self {
            FieldRule::EmptyEventId => record["event_id"] = json!(""),
            FieldRule::MissingContext => {
                if let Some(map) = record.as_object_mut() {
                    map.remove("context");
                }
            }
            FieldRule::BadClockKind => record["context"]["clock_kind"] = json!("lunar"),
            FieldRule::RunIdNotString => record["context"]["run_id"] = json!(7),
            FieldRule::BadSchemaVersion => record["schema_version"] = json!(9),
            FieldRule::UnknownEventType => record["event_type"] = json!("infer.bogus"),
            FieldRule::NegativeTime | FieldRule::FloatTime | FieldRule::BoolTime if time_field.is_empty() => {
                // No time to break here: break its ID instead, so the
                // record is invalid whatever its type.
                record["event_id"] = json!("");
            }
            FieldRule::NegativeTime => record[time_field] = json!(-1),
            FieldRule::FloatTime => record[time_field] = json!(1.5),
            FieldRule::BoolTime => record[time_field] = json!(true),
            FieldRule::EndBeforeStart => {
                let start = record.get("start_ns").and_then(Value::as_u64).unwrap_or(0);
                record["start_ns"] = json!(start + 1);
                record["end_ns"] = json!(start);
                if record["event_type"] == "infer.clock_alignment"
                    || record["event_type"] == "infer.membership"
                {
                    // Types without a span: an unknown key breaks them too.
                    if let Some(map) = record.as_object_mut() {
                        map.remove("start_ns");
                        map.remove("end_ns");
                    }
                    record["event_id"] = json!("");
                }
            }
            FieldRule::BadReference => {
                let field = ["request_ref", "iteration_ref", "activity_ref", "stage_ref"]
                    .into_iter()
                    .find(|field| record.get(*field).is_some_and(Value::is_object));
                match field {
                    Some(field) => record[field]["producer_id"] = json!(""),
                    None => record["event_id"] = json!(""),
                }
            }
            FieldRule::MetadataNotObject => record["metadata"] = json!([1]),
            FieldRule::UnknownKey => record["bogus_field"] = json!(1),
        }
    }
}

/// How a generated case breaks the rules on purpose.
#[derive(Debug, Clone)]
pub enum Breakage {
    /// A second delivery of an event with other content under its ID.
    ConflictingEvent(Index, Index),
    /// An entity described again, differently, under another event ID.
    ConflictingEntity(Index, Index),
    /// A record of another run.
    OtherRun(Index, Index),
    /// One record breaks one field rule.
    Field(Index, FieldRule),
    /// The last line of the last file is cut short (a hundredths kept).
    Truncated(u8),
}

impl Breakage {
    fn note(&self) -> &'static str {
        match self {
            Breakage::ConflictingEvent(..) => "conflicting event identity",
            Breakage::ConflictingEntity(..) => "conflicting entity identity",
            Breakage::OtherRun(..) => "multiple run ids",
            Breakage::Field(..) => "a field rule broken",
            Breakage::Truncated(..) => "a truncated line",
        }
    }
}

/// One file of a case's layout: compact form, gzip, where it starts.
#[derive(Debug, Clone)]
pub struct FileSpec {
    compact: bool,
    gzip: bool,
    cut: Index,
}

/// A share model, before the run's budget is known.
#[derive(Debug, Clone)]
pub struct ShareSpec {
    /// One of the iterations and device clocks with measured GPU time, by
    /// index, and whether to prefer those whose activities overlap (where
    /// busy and summed time part); `None` (or none measured) uses
    /// `iteration` and `clock`.
    measured: Option<(Index, bool)>,
    iteration: usize,
    clock: usize,
    shares: Vec<(usize, Option<usize>, u64, u8)>,
    /// `None`: the remainder balances the budget; else off by this much.
    off_by: Option<i64>,
}

/// The device clocks a share model may name: the generator's three
/// measurable ones and one no activity uses.
const SHARE_CLOCKS: [(&str, &str, &str); 4] = [
    ("GPU-0", "cuda:0", "device"),
    ("GPU-1", "host", "monotonic"),
    ("GPU-0", "wall", "wall"),
    ("GPU-9", "cuda:0", "device"),
];

/// One alignment query, before the run's windows are known.
#[derive(Debug, Clone)]
pub struct QuerySpec {
    at: QueryTime,
    from: usize,
    to: usize,
}

/// Where a query's timestamp lies.
#[derive(Debug, Clone)]
pub enum QueryTime {
    /// On a window's bound, or one before or after it.
    Boundary(Index, i8),
    /// Anywhere.
    Raw(u64),
    /// Negative: refused.
    Negative,
}

/// Everything a generated case is made of; [`CaseSpec::build`] makes the
/// [`Case`].
#[derive(Debug, Clone)]
pub struct CaseSpec {
    kind: Kind,
    run: RunSpec,
    /// 0: generation order; else a seed for a shuffle.
    shuffle: u64,
    repeats: Vec<(Index, Spelling)>,
    breakage: Option<Breakage>,
    files: Vec<FileSpec>,
    shares: Option<ShareSpec>,
    queries: Vec<QuerySpec>,
}

fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![3 => Just(Spelling::Same), 1 => Just(Spelling::Float), 1 => Just(Spelling::Bool)]
}

fn breakage() -> impl Strategy<Value = Breakage> {
    prop_oneof![
        1 => (any::<Index>(), any::<Index>()).prop_map(|(pick, at)| Breakage::ConflictingEvent(pick, at)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(pick, at)| Breakage::ConflictingEntity(pick, at)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(pick, at)| Breakage::OtherRun(pick, at)),
        3 => (any::<Index>(), proptest::sample::select(FieldRule::ALL.to_vec()))
            .prop_map(|(pick, rule)| Breakage::Field(pick, rule)),
        1 => (1u8..100).prop_map(Breakage::Truncated),
    ]
}

fn file_spec() -> impl Strategy<Value = FileSpec> {
    (proptest::bool::weighted(0.4), proptest::bool::weighted(0.15), any::<Index>())
        .prop_map(|(compact, gzip, cut)| FileSpec { compact, gzip, cut })
}

fn share_spec() -> impl Strategy<Value = ShareSpec> {
    (
        proptest::option::weighted(0.8, (any::<Index>(), any::<bool>())),
        0usize..7,
        prop_oneof![6 => 0usize..3, 1 => Just(3usize)],
        proptest::collection::vec(
            (0usize..7, proptest::option::weighted(0.25, 0usize..4), 0u64..100, 0u8..40),
            0..5,
        ),
        proptest::option::weighted(0.3, prop_oneof![Just(1i64), Just(-1i64), -50i64..50]),
    )
        .prop_map(|(measured, iteration, clock, shares, off_by)| ShareSpec {
            measured,
            iteration,
            clock,
            shares,
            off_by,
        })
}

fn query_spec() -> impl Strategy<Value = QuerySpec> {
    let at = prop_oneof![
        4 => (any::<Index>(), -1i8..=1).prop_map(|(pick, delta)| QueryTime::Boundary(pick, delta)),
        2 => (0u64..10_000).prop_map(QueryTime::Raw),
        1 => Just(QueryTime::Negative),
    ];
    (at, 0usize..=ALIGNMENT_DOMAINS.len(), 0usize..=ALIGNMENT_DOMAINS.len())
        .prop_map(|(at, from, to)| QuerySpec { at, from, to })
}

/// The cases of `kind`: valid runs, and for [`Kind::Account`] invalid ones
/// too (about one in four), whose expected answer is a rejection.
pub fn arb_case(kind: Kind) -> BoxedStrategy<CaseSpec> {
    let breakage = match kind {
        Kind::Account => proptest::option::weighted(0.25, breakage()).boxed(),
        Kind::Shares | Kind::Align => Just(None).boxed(),
    };
    let shares = match kind {
        Kind::Shares => share_spec().prop_map(Some).boxed(),
        _ => Just(None).boxed(),
    };
    let queries = match kind {
        Kind::Align => proptest::collection::vec(query_spec(), 1..12).boxed(),
        _ => Just(Vec::new()).boxed(),
    };
    (
        arb_run(),
        prop_oneof![1 => Just(0u64), 3 => 1u64..u64::MAX],
        proptest::collection::vec((any::<Index>(), spelling()), 0..6),
        breakage,
        proptest::collection::vec(file_spec(), 1..4),
        shares,
        queries,
    )
        .prop_map(move |(run, shuffle, repeats, breakage, files, shares, queries)| CaseSpec {
            kind,
            run,
            shuffle,
            repeats,
            breakage,
            files,
            shares,
            queries,
        })
        .boxed()
}

/// A small deterministic shuffle (xorshift), so the order is part of the
/// case and shrinks with its seed towards generation order.
fn shuffle<T>(items: &mut [T], seed: u64) {
    if seed == 0 {
        return;
    }
    let mut state = seed;
    for index in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let other = (state % (index as u64 + 1)) as usize;
        items.swap(index, other);
    }
}

/// `1` in a record's metadata spelled another way (Python-equal).
fn respell(mut record: Value, spelling: Spelling) -> Value {
    let replacement = match spelling {
        Spelling::Same => return record,
        Spelling::Float => json!(1.0),
        Spelling::Bool => json!(true),
    };
    if let Some(metadata) = record.get_mut("metadata").and_then(Value::as_object_mut) {
        for value in metadata.values_mut() {
            if value.as_u64() == Some(1) {
                *value = replacement.clone();
            }
        }
    }
    record
}

/// Whether a record is a correlation event (not a v1 record).
fn is_event(record: &Value) -> bool {
    record.get("schema_version").and_then(Value::as_u64).is_some_and(|version| version >= 2)
}

/// A changed copy of `record`: the same event with other metadata.
fn altered(record: &Value) -> Value {
    let mut copy = record.clone();
    match copy.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(metadata) => {
            metadata.insert("conflict".into(), json!(1));
        }
        None => copy["metadata"] = json!({"conflict": 1}),
    }
    copy
}

impl CaseSpec {
    /// The kind of the case.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The case: records delivered, broken, split into files; the share
    /// model or the queries.
    pub fn build(&self) -> Case {
        let mut records = self.run.values();
        shuffle(&mut records, self.shuffle);
        if !records.is_empty() {
            let repeats: Vec<Value> = self
                .repeats
                .iter()
                .map(|(pick, spelling)| respell(records[pick.index(records.len())].clone(), *spelling))
                .collect();
            for (position, repeat) in repeats.into_iter().enumerate() {
                let at = (position * 7 + records.len() / 2) % (records.len() + 1);
                records.insert(at, repeat);
            }
        }
        let mut truncate = None;
        let mut note = "valid run".to_owned();
        if let Some(breakage) = &self.breakage {
            let events: Vec<usize> = (0..records.len()).filter(|&index| is_event(&records[index])).collect();
            let broken = match breakage {
                Breakage::Truncated(keep) => {
                    truncate = Some(*keep);
                    !records.is_empty()
                }
                _ if events.is_empty() => false,
                Breakage::ConflictingEvent(pick, at) => {
                    let copy = altered(&records[events[pick.index(events.len())]]);
                    records.insert(at.index(records.len() + 1), copy);
                    true
                }
                Breakage::ConflictingEntity(pick, at) => {
                    let mut copy = altered(&records[events[pick.index(events.len())]]);
                    copy["event_id"] = json!("conflicting-entity");
                    let entity = copy["event_type"] != "infer.artifact";
                    records.insert(at.index(records.len() + 1), copy);
                    entity
                }
                Breakage::OtherRun(pick, at) => {
                    let mut copy = records[events[pick.index(events.len())]].clone();
                    copy["event_id"] = json!("stranger");
                    copy["context"]["run_id"] = json!("another-run");
                    records.insert(at.index(records.len() + 1), copy);
                    true
                }
                Breakage::Field(pick, rule) => {
                    rule.apply(&mut records[events[pick.index(events.len())]]);
                    true
                }
            };
            if broken {
                note = breakage.note().to_owned();
            }
        }
        let files = self.split(records, truncate);
        let model = self.shares.as_ref().map(|spec| share_model(spec, &files));
        let queries = (self.kind == Kind::Align).then(|| self.query_values());
        Case { kind: self.kind, files, model, queries, note }
    }

    /// The records cut into the layout's files, in order; the truncation,
    /// when any, hits the last file.
    fn split(&self, records: Vec<Value>, truncate: Option<u8>) -> Vec<CaseFile> {
        let total = records.len();
        let mut cuts: Vec<usize> = self.files.iter().skip(1).map(|file| file.cut.index(total + 1)).collect();
        cuts.sort_unstable();
        let mut bounds = vec![0];
        bounds.extend(cuts);
        bounds.push(total);
        let mut rest = records.into_iter();
        let count = self.files.len();
        self.files
            .iter()
            .enumerate()
            .map(|(position, spec)| {
                let length = bounds[position + 1] - bounds[position];
                let extension = if spec.gzip { "jsonl.gz" } else { "jsonl" };
                CaseFile {
                    name: if count == 1 {
                        format!("run.{extension}")
                    } else {
                        format!("rank-{position}.{extension}")
                    },
                    form: if spec.compact { Form::Compact } else { Form::Embedded },
                    gzip: spec.gzip,
                    records: rest.by_ref().take(length).collect(),
                    truncate_last_line: if position + 1 == count { truncate } else { None },
                }
            })
            .collect()
    }

    fn query_values(&self) -> Value {
        let mut bounds = vec![0u64];
        for alignment in self.run.alignments() {
            let (from, to) = alignment.window();
            bounds.extend(from);
            bounds.extend(to);
        }
        let domain = |index: usize| ALIGNMENT_DOMAINS.get(index).copied().unwrap_or("nowhere");
        let queries: Vec<Value> = self
            .queries
            .iter()
            .map(|query| {
                let timestamp: i64 = match &query.at {
                    QueryTime::Boundary(pick, delta) => {
                        let bound = i64::try_from(bounds[pick.index(bounds.len())]).unwrap_or(i64::MAX);
                        (bound + i64::from(*delta)).max(0)
                    }
                    QueryTime::Raw(value) => i64::try_from(*value).unwrap_or(i64::MAX),
                    QueryTime::Negative => -1,
                };
                json!({"timestamp_ns": timestamp, "from": domain(query.from), "to": domain(query.to)})
            })
            .collect();
        Value::Array(queries)
    }
}

/// The share model of `spec` for the case's files: durations scaled to the
/// iteration's measured budget (tally's accounting of the records), the
/// remainder balancing it unless the spec says off by how much.
fn share_model(spec: &ShareSpec, files: &[CaseFile]) -> Value {
    let measured = measured_budgets(files);
    let overlapping: Vec<&(Value, Value, u64, bool)> = measured.iter().filter(|row| row.3).collect();
    let (iteration, clock, budget) = match spec.measured {
        Some((pick, true)) if !overlapping.is_empty() => {
            let row = overlapping[pick.index(overlapping.len())];
            (row.0.clone(), row.1.clone(), row.2)
        }
        Some((pick, _)) if !measured.is_empty() => {
            let row = &measured[pick.index(measured.len())];
            (row.0.clone(), row.1.clone(), row.2)
        }
        _ => {
            let (device, domain, kind) = SHARE_CLOCKS[spec.clock];
            let iteration = RunSpec::iteration_ref(spec.iteration);
            let clock = json!({"device_uuid": device, "clock_domain": domain, "clock_kind": kind});
            let budget = measured
                .iter()
                .find(|(known, known_clock, _, _)| *known == iteration && *known_clock == clock)
                .map_or(0, |row| row.2);
            (iteration, clock, budget)
        }
    };
    let members = members_of(files, &iteration);
    let weights: u64 = spec.shares.iter().map(|share| share.2).sum::<u64>() + 25;
    let mut shares = Vec::new();
    let mut attributed: i64 = 0;
    for (request, attempt, weight, model) in &spec.shares {
        // Mostly the iteration's own members (so the later rules are
        // reached), sometimes any request (not a member).
        let (request_id, attempt_id) = match members.get(*request % members.len().max(1)) {
            Some((member, member_attempt)) if *request < 6 => {
                (member.clone(), if attempt.is_some() { member_attempt.clone() } else { None })
            }
            _ => (RunSpec::request_id(*request), attempt.map(RunSpec::attempt_id)),
        };
        let mut duration =
            i64::try_from(u128::from(budget) * u128::from(*weight) / u128::from(weights)).unwrap_or(i64::MAX);
        let model_name = match model {
            0 => "",
            1 => "uniform",
            _ => "proportional-tokens",
        };
        if *model == 2 {
            duration = -1;
        }
        attributed = attributed.saturating_add(duration);
        let mut share = json!({"request_ref": {"producer_id": "api", "id": request_id},
                               "duration_ns": duration, "model": model_name});
        if let Some(attempt) = attempt_id {
            share["attempt_ref"] = json!({"producer_id": "api", "id": attempt});
        }
        shares.push(share);
    }
    let balanced = i64::try_from(budget).unwrap_or(i64::MAX).saturating_sub(attributed);
    let unattributed = balanced.saturating_add(spec.off_by.unwrap_or(0));
    json!({"iteration_ref": iteration, "device_clock": clock, "shares": shares, "unattributed_ns": unattributed})
}

/// The `(request, attempt)` IDs of `iteration`'s memberships in the files.
fn members_of(files: &[CaseFile], iteration: &Value) -> Vec<(String, Option<String>)> {
    let mut members: Vec<(String, Option<String>)> = files
        .iter()
        .flat_map(|file| file.records.iter())
        .filter(|record| record["event_type"] == "infer.membership" && &record["iteration_ref"] == iteration)
        .filter_map(|record| {
            let request = record["request_ref"]["id"].as_str()?.to_owned();
            Some((request, record["attempt_ref"]["id"].as_str().map(str::to_owned)))
        })
        .collect();
    members.sort();
    members.dedup();
    members
}

/// Every iteration's busy time per device clock, as tally accounts the
/// files' records: `(iteration_ref, device_clock, busy_ns, overlapping)`,
/// overlapping when busy is less than summed; empty when they do not
/// resolve.
fn measured_budgets(files: &[CaseFile]) -> Vec<(Value, Value, u64, bool)> {
    let Ok(records) = files
        .iter()
        .flat_map(|file| file.records.iter())
        .map(|value| parse_inference_record(value.clone()))
        .collect::<Result<Vec<_>, _>>()
    else {
        return Vec::new();
    };
    let Ok(graph) = tally_resolve::resolve_inference_events(&records) else { return Vec::new() };
    let report = tally_gpu_time::AccountingReport::from_resolved(&graph, false);
    let mut rows = Vec::new();
    for iteration in &report.iterations {
        let reference =
            json!({"producer_id": iteration.iteration_ref.producer_id(), "id": iteration.iteration_ref.id()});
        for gpu in &iteration.gpu {
            let Ok(row) = serde_json::to_value(gpu) else { continue };
            let clock = json!({"device_uuid": row["device_uuid"], "clock_domain": row["clock_domain"],
                               "clock_kind": row["clock_kind"]});
            let busy = row["busy_ns"].as_u64().unwrap_or(0);
            let overlapping = row["summed_activity_ns"].as_u64().is_some_and(|summed| summed > busy);
            rows.push((reference.clone(), clock, busy, overlapping));
        }
    }
    rows
}
