//! A realistic inference artifact of any size, for benchmarks: the artifact
//! bench decodes it, and the accounting bench can resolve and account it
//! (every reference points at an event that exists, IDs are unique per
//! producer, spans are consistent).
//!
//! The shape follows what stormlog's capture writes for a served model on a
//! few ranks: per rank an engine context (monotonic host clock) and a trace
//! context (device clock), plus one wall-clock capture context; a v1 session
//! record, the artifact identity, capabilities and clock alignments up
//! front; then iterations, each with its members' memberships and about two
//! dozen GPU activities (kernels linked to the iteration, ~15% of them with
//! `metadata.intervals`, so schema 3) and unresolved runtime launches;
//! requests and prefill stages as batches start. Most lines are
//! `infer.activity_ref`, as in real captures.
//!
//! Lines are written as stormlog writes them (`json.dumps(row,
//! sort_keys=True)`): embedded (schema 2/3) or compact (schema 4, each
//! context defined once by an `infer.context` row). The text is built here,
//! independently of tally's codec, so the benchmark never measures a file
//! shaped by the code under test.
//!
//! ```text
//! let spec = ArtifactSpec { target_bytes: 150_000_000, form: GenForm::Compact, ranks: 4 };
//! let made = generate::write_artifact(&path, &spec)?; // made.records, made.bytes
//! ```

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// How events carry their context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenForm {
    /// Each event embeds its context (schema 2/3).
    Embedded,
    /// Contexts defined once, events reference them (schema 4).
    Compact,
}

impl GenForm {
    /// `v2` or `v4`, for file names and report rows.
    pub fn label(self) -> &'static str {
        match self {
            GenForm::Embedded => "v2",
            GenForm::Compact => "v4",
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct ArtifactSpec {
    /// Stop after the first whole iteration at or past this size.
    pub target_bytes: u64,
    /// Embedded or compact.
    pub form: GenForm,
    /// Ranks (each with an engine and a trace context).
    pub ranks: u32,
}

/// What was written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Generated {
    /// File size.
    pub bytes: u64,
    /// Records (definitions excluded), i.e. what a reader returns.
    pub records: u64,
    /// Lines.
    pub lines: u64,
}

/// A JSON value, written with Python's `json.dumps(sort_keys=True)` layout.
enum Json {
    Null,
    Int(i128),
    Str(String),
    /// Already serialized (a context written once, reused).
    Raw(std::rc::Rc<str>),
    Arr(Vec<Json>),
    Obj(Vec<(&'static str, Json)>),
}

impl Json {
    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Int(value) => out.push_str(&value.to_string()),
            Json::Str(text) => write_str(out, text),
            Json::Raw(text) => out.push_str(text),
            Json::Arr(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Obj(entries) => {
                let mut sorted: Vec<&(&str, Json)> = entries.iter().collect();
                sorted.sort_by_key(|(key, _)| *key);
                out.push('{');
                for (index, (key, value)) in sorted.into_iter().enumerate() {
                    if index > 0 {
                        out.push_str(", ");
                    }
                    write_str(out, key);
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// `ensure_ascii=True` escaping, for the few non-ASCII strings used.
fn write_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

fn s(text: impl Into<String>) -> Json {
    Json::Str(text.into())
}

fn n(value: u64) -> Json {
    Json::Int(i128::from(value))
}

fn entity(producer: &str, id: String) -> Json {
    Json::Obj(vec![("producer_id", s(producer)), ("id", s(id))])
}

struct Ctx {
    id: String,
    producer: String,
    json: std::rc::Rc<str>,
    defined: bool,
}

#[allow(clippy::too_many_arguments, reason = "one argument per context field that varies")]
fn context(
    id: &str,
    producer: &str,
    source: &str,
    clock_domain: &str,
    clock_kind: &str,
    collection_mode: &str,
    device_uuid: Option<String>,
    rank: Option<u32>,
    ranks: u32,
) -> Ctx {
    let rank_field = |value: Option<u32>| value.map_or(Json::Null, |v| n(u64::from(v)));
    let object = Json::Obj(vec![
        ("run_id", s("run-bench")),
        ("session_id", s("session-1")),
        ("producer_id", s(producer)),
        ("source", s(source)),
        ("source_version", s("0.4.3")),
        ("clock_domain", s(clock_domain)),
        ("clock_kind", s(clock_kind)),
        ("collection_mode", s(collection_mode)),
        ("provenance", s("observed")),
        ("engine", if device_uuid.is_none() { s("vllm") } else { Json::Null }),
        ("engine_version", if device_uuid.is_none() { s("0.6.3") } else { Json::Null }),
        ("backend", s("cuda")),
        ("backend_version", s("12.4")),
        ("host", s("node-caf\u{e9}")),
        ("pid", n(40_000 + u64::from(rank.unwrap_or(0)))),
        ("device_uuid", device_uuid.map_or(Json::Null, s)),
        ("rank", rank_field(rank)),
        ("local_rank", rank_field(rank)),
        ("world_size", n(u64::from(ranks))),
    ]);
    let mut json = String::new();
    object.write(&mut json);
    Ctx { id: format!("ctx-{id}"), producer: producer.to_owned(), json: json.into(), defined: false }
}

struct Writer {
    out: BufWriter<File>,
    form: GenForm,
    line: String,
    made: Generated,
}

impl Writer {
    /// Writes one event of `event_type` with `fields` in `context`.
    fn event(
        &mut self,
        context: &mut Ctx,
        event_type: &'static str,
        event_id: String,
        metadata: Json,
        intervals: bool,
        mut fields: Vec<(&'static str, Json)>,
    ) -> anyhow::Result<()> {
        fields.push(("event_type", s(event_type)));
        fields.push(("event_id", s(event_id)));
        fields.push(("metadata", metadata));
        match self.form {
            GenForm::Embedded => {
                fields.push(("schema_version", n(if intervals { 3 } else { 2 })));
                fields.push(("context", Json::Raw(context.json.clone())));
            }
            GenForm::Compact => {
                if !context.defined {
                    context.defined = true;
                    let definition = Json::Obj(vec![
                        ("schema_version", n(4)),
                        ("event_type", s("infer.context")),
                        ("context_id", s(context.id.clone())),
                        ("context", Json::Raw(context.json.clone())),
                    ]);
                    self.emit(&definition, false)?;
                }
                fields.push(("schema_version", n(4)));
                fields.push(("context_id", s(context.id.clone())));
            }
        }
        self.emit(&Json::Obj(fields), true)
    }

    fn emit(&mut self, row: &Json, record: bool) -> anyhow::Result<()> {
        self.line.clear();
        row.write(&mut self.line);
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())?;
        self.made.bytes += self.line.len() as u64;
        self.made.lines += 1;
        self.made.records += u64::from(record);
        Ok(())
    }
}

fn span(fields: &mut Vec<(&'static str, Json)>, start: u64, end: u64) {
    fields.push(("start_ns", n(start)));
    fields.push(("end_ns", n(end)));
}

/// The artifact for `spec` in `scratch`, generated on first use and reused
/// while its recorded size matches (one name per spec, so the artifact and
/// account benches share files).
pub fn cached_artifact(scratch: &Path, spec: &ArtifactSpec) -> anyhow::Result<(PathBuf, Generated)> {
    let stem =
        format!("artifact-{}-{}mb-{}ranks", spec.form.label(), spec.target_bytes / 1_000_000, spec.ranks);
    let path = scratch.join(format!("{stem}.jsonl"));
    let [bytes, records, lines] = super::cached_input(&path, |path| {
        let made = write_artifact(path, spec)?;
        Ok([made.bytes, made.records, made.lines])
    })?;
    Ok((path, Generated { bytes, records, lines }))
}

/// Writes an artifact to `path` per `spec` and says what it holds.
pub fn write_artifact(path: &Path, spec: &ArtifactSpec) -> anyhow::Result<Generated> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut writer = Writer {
        out: BufWriter::with_capacity(1 << 20, file),
        form: spec.form,
        line: String::new(),
        made: Generated::default(),
    };
    let ranks = spec.ranks.max(1);
    let mut wall = context(
        "capture",
        "capture",
        "stormlog.infer.capture",
        "wall:node",
        "wall",
        "active",
        None,
        None,
        ranks,
    );
    let mut engines: Vec<Ctx> = (0..ranks)
        .map(|r| {
            context(
                &format!("engine-{r}"),
                &format!("engine-{r}"),
                "stormlog.infer.vllm",
                &format!("host:boot-{r}"),
                "monotonic",
                "active",
                None,
                Some(r),
                ranks,
            )
        })
        .collect();
    let mut traces: Vec<Ctx> = (0..ranks)
        .map(|r| {
            // The same name as the clock alignments' `from_clock_domain`.
            let gpu = format!("GPU-{r:04}-bench");
            context(
                &format!("kineto-{r}"),
                &format!("kineto-{r}"),
                "stormlog.infer.trace",
                &format!("gpu:{gpu}"),
                "device",
                "imported",
                Some(gpu),
                Some(r),
                ranks,
            )
        })
        .collect();

    // A v1 record first, as stormlog's own artifacts begin.
    let session = Json::Obj(vec![
        ("schema_version", n(1)),
        ("event_type", s("infer.session")),
        ("session_id", s("session-1")),
        ("timestamp_ns", n(1_700_000_000_000_000_000)),
        ("status", s("completed")),
        ("config", Json::Obj(vec![("source", s("stormlog.infer.watch")), ("collection", s("passive"))])),
    ]);
    writer.emit(&session, true)?;
    writer.event(
        &mut wall,
        "infer.artifact",
        "artifact".into(),
        Json::Obj(vec![("boot_id", s("boot-1"))]),
        false,
        vec![("artifact_kind", s("inference_jsonl")), ("created_at_ns", n(1_700_000_000_000_000_000))],
    )?;
    for (component, collected) in [("engine_adapter", "iterations"), ("trace_collector", "kernels")] {
        let names = |list: &[&str]| Json::Arr(list.iter().map(|name| s(*name)).collect());
        writer.event(
            &mut wall,
            "infer.capabilities",
            format!("{component}:1"),
            Json::Obj(vec![]),
            false,
            vec![
                ("component", s(component)),
                ("available", Json::Raw("true".into())),
                ("supported", names(&[collected, "stages"])),
                ("enabled", names(&[collected])),
                ("collected", names(&[collected])),
            ],
        )?;
    }
    for r in 0..ranks as usize {
        let domain = format!("gpu:GPU-{r:04}-bench");
        writer.event(
            &mut wall,
            "infer.clock_alignment",
            format!("align-{r}"),
            Json::Obj(vec![]),
            false,
            vec![
                ("from_clock_domain", s(domain)),
                ("to_clock_domain", s(format!("host:boot-{r}"))),
                ("offset_ns", Json::Int(-1_234_567 - r as i128)),
                ("uncertainty_ns", n(2_000)),
                ("valid_from_ns", Json::Null),
                ("valid_to_ns", Json::Null),
            ],
        )?;
    }

    let mut clock = vec![1_000_000_000u64; ranks as usize];
    let mut iteration = 0u64;
    let mut correlation = 0u64;
    while writer.made.bytes < spec.target_bytes {
        let r = (iteration % u64::from(ranks)) as usize;
        let step = iteration / u64::from(ranks);
        let engine = &mut engines[r];
        let producer = engine.producer.clone();
        let batch = step / 8;
        let members: Vec<String> = (0..4).map(|k| format!("req-{r}-{batch}-{k}")).collect();
        let start = clock[r];
        let end = start + 180_000 + (step % 7) * 10_000;
        if step.is_multiple_of(8) {
            for (k, request) in members.iter().enumerate() {
                let mut fields = vec![
                    ("request_ref", entity(&producer, request.clone())),
                    ("attempt_ref", Json::Null),
                    ("backend_request_ref", entity(&producer, format!("cmpl-{batch}-{k}"))),
                    ("status", s("ok")),
                    ("input_tokens", n(512 + k as u64)),
                    ("output_tokens", n(8)),
                    ("kv_bytes", n(1 << 20)),
                ];
                span(&mut fields, start, start + 8 * 260_000);
                writer.event(
                    engine,
                    "infer.request",
                    request.clone(),
                    Json::Obj(vec![("route", s("/v1/completions"))]),
                    false,
                    fields,
                )?;
                let mut stage = vec![
                    ("stage_ref", entity(&producer, format!("prefill-{request}"))),
                    ("name", s("prefill")),
                    ("request_ref", entity(&producer, request.clone())),
                    ("iteration_ref", entity(&producer, format!("step-{r}-{step}"))),
                    ("input_tokens", n(512)),
                    ("output_tokens", Json::Null),
                    ("kv_bytes", Json::Null),
                ];
                span(&mut stage, start, end);
                writer.event(
                    engine,
                    "infer.stage",
                    format!("stage-{request}"),
                    Json::Obj(vec![]),
                    false,
                    stage,
                )?;
            }
        }
        let iteration_ref = format!("step-{r}-{step}");
        let mut fields = vec![
            ("iteration_ref", entity(&producer, iteration_ref.clone())),
            ("batch_ref", entity(&producer, format!("batch-{r}-{batch}"))),
        ];
        span(&mut fields, start, end);
        writer.event(
            engine,
            "infer.iteration",
            iteration_ref.clone(),
            Json::Obj(vec![("num_seqs", n(4))]),
            false,
            fields,
        )?;
        for (k, request) in members.iter().enumerate() {
            let role = if step.is_multiple_of(8) { "prefill" } else { "decode" };
            writer.event(
                engine,
                "infer.membership",
                format!("member-{iteration_ref}-{k}"),
                Json::Obj(vec![]),
                false,
                vec![
                    ("request_ref", entity(&producer, request.clone())),
                    ("iteration_ref", entity(&producer, iteration_ref.clone())),
                    ("role", s(role)),
                    ("attempt_ref", Json::Null),
                    ("input_tokens", if step.is_multiple_of(8) { n(512) } else { Json::Null }),
                    ("output_tokens", n(1)),
                    ("kv_bytes", Json::Null),
                ],
            )?;
        }
        let trace = &mut traces[r];
        let trace_producer = trace.producer.clone();
        // On the device clock: host time less the alignment's offset, so
        // aligned activities fall inside their iteration.
        let mut cursor = start + 2_000 + 1_234_567 + r as u64;
        for k in 0..24u64 {
            correlation += 1;
            let runtime = k % 10 == 9;
            let duration = 5_000 + (k * 37 + step) % 4_000;
            let (a, b) = (cursor, cursor + duration);
            cursor = b + 500;
            let with_intervals = !runtime && (k + step).is_multiple_of(7);
            let metadata = if with_intervals {
                let half = duration / 2;
                Json::Obj(vec![
                    (
                        "intervals",
                        Json::Arr(vec![
                            Json::Arr(vec![n(0), n(half / 2)]),
                            Json::Arr(vec![n(half), n(duration - half)]),
                        ]),
                    ),
                    ("name", s("fused_moe_kernel")),
                ])
            } else {
                Json::Obj(vec![(
                    "name",
                    s(if runtime { "cudaLaunchKernel" } else { "ampere_fp16_s16816gemm" }),
                )])
            };
            let mut fields = vec![
                ("activity_ref", entity(&trace_producer, format!("act-{r}-{correlation}"))),
                ("activity_kind", s(if runtime { "cuda_runtime" } else { "kernel" })),
                ("attribution_status", s(if runtime { "unresolved" } else { "linked" })),
                ("activity_domain", s(if runtime { "runtime" } else { "gpu" })),
                (
                    "iteration_ref",
                    if runtime { Json::Null } else { entity(&producer, iteration_ref.clone()) },
                ),
                ("correlation_scope", entity(&trace_producer, format!("pid-{}", 40_000 + r))),
                ("trace_attachment_id", s(format!("trace-{r}"))),
                ("runtime_correlation_id", n(correlation)),
                ("cuda_correlation_id", if runtime { Json::Null } else { n(correlation) }),
                ("stream_id", n(7)),
                ("graph_id", Json::Null),
            ];
            span(&mut fields, a, b);
            writer.event(
                trace,
                "infer.activity_ref",
                format!("act-{r}-{correlation}"),
                metadata,
                with_intervals,
                fields,
            )?;
        }
        clock[r] = end.max(cursor - 1_234_567 - r as u64) + 20_000;
        iteration += 1;
    }
    writer.out.flush()?;
    Ok(writer.made)
}

#[cfg(test)]
mod tests {
    use std::io::BufRead;

    use super::*;

    /// The fast path of tally-artifact's decoder must decide the benchmark's
    /// own lines: were it to decline them all, every result would still be
    /// right (the exact path takes over) and the bench would measure the
    /// slow path without anyone noticing.
    #[test]
    fn the_fast_path_decides_the_benchmark_artifacts_lines() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        for form in [GenForm::Embedded, GenForm::Compact] {
            let path = dir.path().join(format!("bench-{}.jsonl", form.label()));
            let spec = ArtifactSpec { target_bytes: 2_000_000, form, ranks: 2 };
            let made = write_artifact(&path, &spec).expect("the generator writes");
            let mut decoder = tally_artifact::RecordDecoder::new(path.display().to_string());
            let reader = std::io::BufReader::new(File::open(&path).expect("written"));
            let mut records = 0u64;
            for (number, line) in (1..).zip(reader.split(b'\n')) {
                let line = line.expect("readable");
                if decoder.decode_line(&line, number).expect("the generated artifact is valid").is_some() {
                    records += 1;
                }
            }
            assert_eq!(records, made.records);
            let stats = decoder.stats();
            assert_eq!(stats.total(), records);
            // At least 99% of the lines, as issue 12 asks.
            assert!(
                stats.fast * 100 >= stats.total() * 99,
                "{}: the fast path decided only {} of {} records",
                form.label(),
                stats.fast,
                stats.total()
            );
        }
    }
}
