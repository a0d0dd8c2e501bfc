//! The reader of Nsight Systems SQLite exports (`nsys export --type sqlite`).
//!
//! Follows stormlog's `trace_nsys`: GPU work from `CUPTI_ACTIVITY_KIND_KERNEL`,
//! `_MEMCPY` and `_MEMSET`, runtime and driver calls from `_RUNTIME`, names
//! through `StringIds`, iteration ranges from `NVTX_EVENTS`, and each
//! process's CUDA ordinals mapped to GPU UUIDs through
//! `TARGET_INFO_CUDA_DEVICE` and `TARGET_INFO_GPU`. nsys creates tables only
//! when they have rows and its columns change between versions, so the
//! schema is read first: a missing table or column is reported in the
//! summary (`missing_tables`, `missing_columns`) instead of failing the
//! query, and only `start` and `end` are required. The export's schema
//! version is in the summary (`schema_version`); one newer than any tested
//! is read all the same, with a warning naming what the reader does not
//! know ([`schema`]).
//!
//! # CUDA graphs
//!
//! nsys records a CUDA graph's launch one of two ways
//! (`--cuda-graph-trace`). Traced per node, each kernel, copy and memset
//! of the graph is a row of its table with the graph's `graphId` and its
//! `graphNodeId`, and the `correlationId` of the `cudaGraphLaunch` call that
//! launched the graph: they are imported like any GPU row, linked to that
//! call and carrying the graph's ID. Traced per graph (the default since
//! nsys 2024), the nodes are not recorded: each launch is one row of
//! `CUPTI_ACTIVITY_KIND_GRAPH_TRACE`, from the graph's first node's start to
//! its last node's end on its stream. Each such row becomes one GPU activity
//! of kind `gpu_kernel` (the event model's kind for GPU work that is not a
//! copy, a memset or communication), named `CUDA graph <graphId>`, with the
//! graph's ID, linked to its launch call by correlation ID like a kernel,
//! and with `cuda_graph_trace: "graph"` in its metadata saying it spans a
//! whole graph rather than one kernel: the device's busy time counts the
//! graph's span, which holds every node's execution (and any gap between
//! nodes, which per-graph tracing cannot tell apart).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use crate::build::{self, DeviceDetails, TraceInfo};
use crate::collect::{Collected, GpuEvent, GpuKind, NONE_U32, NONE_U64, RuntimeKind, RuntimeRow, SpanRow};
use crate::error::TraceErrorKind;
use crate::ranges::SpanMatcher;

mod schema;

const GPU_TABLES: [(&str, GpuKind); 3] = [
    ("CUPTI_ACTIVITY_KIND_KERNEL", GpuKind::Kernel),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", GpuKind::Memcpy),
    ("CUPTI_ACTIVITY_KIND_MEMSET", GpuKind::Memset),
];
const RUNTIME_TABLE: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
const GRAPH_TABLE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
const NVTX_TABLE: &str = "NVTX_EVENTS";
/// The exporter always writes one of these next to `StringIds`.
const EXPORT_MARKERS: [&str; 3] = ["META_DATA_EXPORT", "EXPORT_META_DATA", "TARGET_INFO_SESSION_START_TIME"];
/// NvtxPushPopRange and NvtxStartEndRange, in any domain.
const NVTX_RANGE_TYPES: [i64; 2] = [59, 60];

/// Columns read from a GPU table besides `start` and `end`, which are
/// required; a missing one reads as NULL and is reported.
const GPU_COLUMNS: [&str; 4] = ["deviceId", "streamId", "correlationId", "globalPid"];
const RUNTIME_COLUMNS: [&str; 3] = ["globalTid", "correlationId", "nameId"];
const NVTX_COLUMNS: [&str; 3] = ["text", "textId", "globalTid"];

/// `(pid, tid)` from an nsys `globalTid`: `(1 << 48) | pid << 24 | tid`.
pub fn split_global_id(global_id: i64) -> (u64, u64) {
    let id = global_id as u64;
    ((id >> 24) & 0xFF_FFFF, id & 0xFF_FFFF)
}

struct Schema {
    tables: BTreeSet<String>,
    missing_columns: BTreeMap<String, Vec<&'static str>>,
}

impl Schema {
    fn read(db: &Connection) -> Result<Self, TraceErrorKind> {
        let mut statement = db.prepare("select name from sqlite_master where type in ('table', 'view')")?;
        let tables = statement.query_map([], |row| row.get::<_, String>(0))?.collect::<Result<_, _>>()?;
        Ok(Self { tables, missing_columns: BTreeMap::new() })
    }

    fn has(&self, table: &str) -> bool {
        self.tables.contains(table)
    }

    fn columns(db: &Connection, table: &str) -> Result<BTreeSet<String>, TraceErrorKind> {
        let mut statement = db.prepare(&format!("pragma table_info({table})"))?;
        let columns = statement.query_map([], |row| row.get::<_, String>(1))?.collect::<Result<_, _>>()?;
        Ok(columns)
    }

    /// `column` when the table has it, else `NULL` (and the column is noted).
    fn select(&mut self, table: &str, present: &BTreeSet<String>, wanted: &[&'static str]) -> String {
        let mut parts = Vec::new();
        for &column in wanted {
            if present.contains(column) {
                parts.push(format!("\"{column}\""));
            } else {
                self.missing_columns.entry(table.to_owned()).or_default().push(column);
                parts.push("NULL".to_owned());
            }
        }
        parts.join(", ")
    }
}

fn require(table: &str, present: &BTreeSet<String>, columns: &[&str]) -> Result<(), TraceErrorKind> {
    for column in columns {
        if !present.contains(*column) {
            return Err(TraceErrorKind::NotNsysExport(format!("{table} has no {column} column")));
        }
    }
    Ok(())
}

fn integer(value: &Sql) -> Option<i64> {
    match value {
        Sql::Integer(number) => Some(*number),
        // SQLite stores what it is given; a real that is integral is one.
        #[allow(clippy::cast_possible_truncation, reason = "integral values only")]
        Sql::Real(number) if number.fract() == 0.0 && number.abs() < 9.0e18 => Some(*number as i64),
        Sql::Text(text) => text.trim().parse().ok(),
        _ => None,
    }
}

fn text(value: &Sql) -> Option<String> {
    match value {
        Sql::Text(text) => Some(text.clone()),
        Sql::Integer(number) => Some(number.to_string()),
        _ => None,
    }
}

/// The UUID as NVML writes it.
fn nvml_uuid(uuid: &Sql) -> Option<String> {
    text(uuid).and_then(|text| build::nvml_uuid(&text))
}

/// Each process's CUDA ordinal's GPU: `(uuid, name)`.
#[derive(Default)]
struct Devices {
    by_process: HashMap<(u64, u32), (Option<String>, Option<String>)>,
    only_gpu: Option<(Option<String>, Option<String>)>,
    /// Compute capability and memory of the listed GPUs, by UUID.
    details: BTreeMap<String, DeviceDetails>,
}

impl Devices {
    fn read(db: &Connection, schema: &mut Schema, notes: &mut Vec<String>) -> Result<Self, TraceErrorKind> {
        let mut gpus: BTreeMap<i64, (Option<String>, Option<String>)> = BTreeMap::new();
        let mut details = BTreeMap::new();
        if schema.has("TARGET_INFO_GPU") {
            let present = Schema::columns(db, "TARGET_INFO_GPU")?;
            let select = schema.select("TARGET_INFO_GPU", &present, &["id", "name", "uuid"]);
            // Only for the summary: not noted when missing.
            let optional = ["computeMajor", "computeMinor", "totalMemory"]
                .map(
                    |column| {
                        if present.contains(column) { format!("\"{column}\"") } else { "NULL".to_owned() }
                    },
                )
                .join(", ");
            let mut statement = db.prepare(&format!("select {select}, {optional} from TARGET_INFO_GPU"))?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                if let Some(id) = integer(&row.get(0)?) {
                    let uuid = nvml_uuid(&row.get(2)?);
                    if let Some(uuid) = &uuid {
                        let capability = match (integer(&row.get(3)?), integer(&row.get(4)?)) {
                            (Some(major), Some(minor)) => Some(format!("{major}.{minor}")),
                            _ => None,
                        };
                        let memory = integer(&row.get(5)?).and_then(|bytes| u64::try_from(bytes).ok());
                        details.insert(
                            uuid.clone(),
                            DeviceDetails { compute_capability: capability, total_memory_bytes: memory },
                        );
                    }
                    gpus.insert(id, (uuid, text(&row.get(1)?)));
                }
            }
        }
        // nsys lists every GPU of the host, so one listed GPU is the one any
        // process used, whatever its CUDA_VISIBLE_DEVICES.
        let mut devices = Devices {
            only_gpu: (gpus.len() == 1).then(|| gpus.values().next().cloned()).flatten(),
            details,
            ..Devices::default()
        };
        if schema.has("TARGET_INFO_CUDA_DEVICE") {
            let present = Schema::columns(db, "TARGET_INFO_CUDA_DEVICE")?;
            let columns: Vec<&'static str> = if present.contains("uuid") {
                vec!["pid", "cudaId", "gpuId", "uuid"]
            } else {
                vec!["pid", "cudaId", "gpuId"]
            };
            let select = schema.select("TARGET_INFO_CUDA_DEVICE", &present, &columns);
            let mut statement = db.prepare(&format!("select {select} from TARGET_INFO_CUDA_DEVICE"))?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                let (Some(pid), Some(ordinal)) = (integer(&row.get(0)?), integer(&row.get(1)?)) else {
                    continue;
                };
                let listed = integer(&row.get(2)?).and_then(|id| gpus.get(&id).cloned());
                let direct = if columns.len() == 4 { nvml_uuid(&row.get(3)?) } else { None };
                let entry = match (direct, listed) {
                    (Some(uuid), Some((Some(listed), _))) if listed != uuid => {
                        return Err(TraceErrorKind::NotNsysExport(format!(
                            "TARGET_INFO_CUDA_DEVICE names process {pid}'s device {ordinal} both {uuid} and {listed}"
                        )));
                    }
                    (Some(uuid), listed) => {
                        let name = gpus
                            .values()
                            .find(|(known, _)| known.as_deref() == Some(uuid.as_str()))
                            .and_then(|(_, name)| name.clone())
                            .or_else(|| listed.and_then(|(_, name)| name));
                        Some((Some(uuid), name))
                    }
                    (None, listed) => listed,
                };
                if let (Some(entry), Ok(pid), Ok(ordinal)) =
                    (entry, u64::try_from(pid), u32::try_from(ordinal))
                {
                    devices.by_process.insert((pid, ordinal), entry);
                }
            }
        } else if gpus.len() > 1 {
            notes.push(
                "this export does not say which GPU each process's CUDA devices are; re-export the report \
                 with nsys 2025.1 or later to name them"
                    .to_owned(),
            );
        }
        Ok(devices)
    }

    fn lookup(&self, pid: Option<u64>, device: u32) -> (Option<String>, Option<String>) {
        if let Some(found) = pid.and_then(|pid| self.by_process.get(&(pid, device))) {
            return found.clone();
        }
        // A process on a one-GPU host sees that GPU as device 0.
        match (&self.only_gpu, device) {
            (Some(only), 0) => only.clone(),
            _ => (None, None),
        }
    }
}

/// Reads an export into `collected`; returns what it says about the trace.
pub(crate) fn read_nsys(
    path: &Path,
    collected: &mut Collected,
    spans: &SpanMatcher,
) -> Result<TraceInfo, TraceErrorKind> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(path, flags)?;
    let mut schema = Schema::read(&db).map_err(|error| match error {
        TraceErrorKind::Sqlite(error) => TraceErrorKind::NotNsysExport(error.to_string()),
        other => other,
    })?;
    if !schema.has("StringIds") {
        return Err(TraceErrorKind::NotNsysExport("no StringIds table".into()));
    }
    if !EXPORT_MARKERS.iter().any(|table| schema.has(table)) {
        return Err(TraceErrorKind::NotNsysExport(format!("neither {} table", EXPORT_MARKERS.join(" nor "))));
    }
    let cuda_tables = GPU_TABLES.iter().map(|(table, _)| *table).chain([RUNTIME_TABLE, GRAPH_TABLE]);
    if !cuda_tables.clone().any(|table| schema.has(table)) {
        return Err(TraceErrorKind::NotNsysExport(
            "no CUDA activity tables (CUPTI_ACTIVITY_KIND_*): the report was recorded without CUDA tracing \
             (nsys profile's trace option must include cuda)"
                .into(),
        ));
    }
    let missing_tables: Vec<&str> =
        cuda_tables.chain([NVTX_TABLE]).filter(|table| *table != GRAPH_TABLE && !schema.has(table)).collect();
    let strings = read_strings(&db)?;
    let mut info = TraceInfo {
        source: "nsys",
        base_ns: session_start(&db, &schema)?,
        host: meta(&db, &schema, "META_DATA_CAPTURE", "DEVICE_DISPLAY_NAME")?,
        trace_id: path.file_name().map(|name| name.to_string_lossy().into_owned()),
        backend: "cupti",
        resolution_ns: 1,
        ..TraceInfo::default()
    };
    let version = schema::META_TABLES
        .iter()
        .map(|table| meta(&db, &schema, table, "EXPORT_SCHEMA_VERSION"))
        .find_map(|found| found.transpose())
        .transpose()?;
    if let Some(version) = &version
        && let Some(warning) = schema::newer_schema_warning(&db, &schema.tables, version)?
    {
        collected.notes.push(warning);
    }
    info.extra.insert("schema_version".into(), Value::from(version));
    info.extra.insert(
        "nsys_version".into(),
        Value::from(
            schema::META_TABLES
                .iter()
                .map(|table| meta(&db, &schema, table, "EXPORT_PRODUCT_VERSION"))
                .find_map(|found| found.transpose())
                .transpose()?,
        ),
    );
    let devices = Devices::read(&db, &mut schema, &mut collected.notes)?;
    for (table, kind) in GPU_TABLES {
        if schema.has(table) {
            read_gpu(&db, &mut schema, table, kind, &strings, &devices, collected)?;
        }
    }
    if schema.has(RUNTIME_TABLE) {
        read_runtime(&db, &mut schema, &strings, collected)?;
    }
    if schema.has(GRAPH_TABLE) {
        let before = collected.gpu.len();
        read_gpu(&db, &mut schema, GRAPH_TABLE, GpuKind::Graph, &strings, &devices, collected)?;
        let rows = collected.gpu.len() - before;
        if rows > 0 {
            info.extra.insert("graph_launches_traced_per_graph".into(), Value::from(rows));
            collected.notes.push(format!(
                "{rows} CUDA graph launches were recorded per graph, not per node: each is one gpu_kernel \
                 activity spanning the graph's execution (metadata cuda_graph_trace: graph); record with \
                 nsys profile's CUDA graph tracing set to node for the graph's kernels"
            ));
        }
    }
    if schema.has(NVTX_TABLE) {
        read_nvtx(&db, &mut schema, &strings, spans, collected)?;
    }
    if collected.gpu.is_empty() && collected.not_imported.is_empty() {
        collected.notes.push("the report records CUDA calls but no GPU kernels, copies or memsets".into());
    }
    let unnamed: BTreeSet<(u64, u32)> = collected
        .gpu
        .iter()
        .filter(|row| row.device_uuid == NONE_U32)
        .map(|row| (row.pid, row.device))
        .collect();
    if !unnamed.is_empty() {
        let listed: Vec<String> = unnamed
            .iter()
            .take(5)
            .map(|&(pid, device)| format!("process {} device {}", pid_text(pid), device_text(device)))
            .collect();
        let more = if unnamed.len() > 5 { format!(" and {} more", unnamed.len() - 5) } else { String::new() };
        collected.notes.push(format!(
            "the report does not name the GPU of {}{more}; tally synthesizes a device UUID per process and ordinal",
            listed.join(", ")
        ));
    }
    for (uuid, name) in devices.by_process.values().chain(devices.only_gpu.iter()) {
        if let (Some(uuid), Some(name)) = (uuid, name) {
            info.names_by_uuid.insert(uuid.clone(), name.clone());
        }
    }
    info.details_by_uuid = devices.details;
    info.extra.insert("missing_tables".into(), Value::from(missing_tables));
    for columns in schema.missing_columns.values_mut() {
        columns.sort_unstable();
    }
    info.extra.insert("missing_columns".into(), serde_json::json!(schema.missing_columns));
    Ok(info)
}

fn pid_text(pid: u64) -> String {
    if pid == NONE_U64 { "unknown".into() } else { pid.to_string() }
}

fn device_text(device: u32) -> String {
    if device == NONE_U32 { "unknown".into() } else { device.to_string() }
}

fn read_strings(db: &Connection) -> Result<HashMap<i64, String>, TraceErrorKind> {
    let mut statement = db.prepare("select id, value from StringIds")?;
    let mut rows = statement.query([])?;
    let mut strings = HashMap::new();
    while let Some(row) = rows.next()? {
        if let (Some(id), Some(value)) = (integer(&row.get(0)?), text(&row.get(1)?)) {
            strings.insert(id, value);
        }
    }
    Ok(strings)
}

fn session_start(db: &Connection, schema: &Schema) -> Result<u64, TraceErrorKind> {
    if !schema.has("TARGET_INFO_SESSION_START_TIME") {
        return Ok(0);
    }
    let start: Option<Sql> = db
        .query_row("select utcEpochNs from TARGET_INFO_SESSION_START_TIME", [], |row| row.get(0))
        .map(Some)
        .or_else(|error| match error {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            other => Err(other),
        })?;
    match start.as_ref().map(integer) {
        None | Some(None) => Ok(0),
        Some(Some(start)) => u64::try_from(start).map_err(|_| {
            TraceErrorKind::Header(format!("TARGET_INFO_SESSION_START_TIME is negative: {start}"))
        }),
    }
}

fn meta(db: &Connection, schema: &Schema, table: &str, name: &str) -> Result<Option<String>, TraceErrorKind> {
    if !schema.has(table) {
        return Ok(None);
    }
    let mut statement = db.prepare(&format!("select value from {table} where name = ?1"))?;
    let mut rows = statement.query([name])?;
    Ok(match rows.next()? {
        Some(row) => text(&row.get(0)?),
        None => None,
    })
}

/// A row's start and end, or a counted skip.
fn row_times(collected: &mut Collected, table: &str, start: &Sql, end: &Sql) -> Option<(u64, u64)> {
    let (Some(start), Some(end)) = (integer(start), integer(end)) else {
        collected.skip("missing start or end", || format!("{table}: a row without start or end"));
        return None;
    };
    let Ok(start_ns) = u64::try_from(start) else {
        collected.skip("negative ts", || format!("{table}: start {start}"));
        return None;
    };
    if end < start {
        collected.skip("negative dur", || format!("{table}: end {end} before start {start}"));
        return None;
    }
    Some((start_ns, end.unsigned_abs()))
}

fn read_gpu(
    db: &Connection,
    schema: &mut Schema,
    table: &str,
    kind: GpuKind,
    strings: &HashMap<i64, String>,
    devices: &Devices,
    collected: &mut Collected,
) -> Result<(), TraceErrorKind> {
    let present = Schema::columns(db, table)?;
    require(table, &present, &["start", "end"])?;
    // Only the kernel table names its rows; older exports lack shortName.
    let name_column = match kind {
        GpuKind::Kernel => {
            if !present.contains("shortName") {
                schema.missing_columns.entry(table.to_owned()).or_default().push("shortName");
            }
            ["shortName", "demangledName"].into_iter().find(|column| present.contains(*column))
        }
        _ => None,
    };
    let optional = ["graphId", "graphNodeId"]
        .map(|column| if present.contains(column) { format!("\"{column}\"") } else { "NULL".to_owned() });
    let select = schema.select(table, &present, &GPU_COLUMNS);
    let name = name_column.map_or_else(|| "NULL".to_owned(), |column| format!("\"{column}\""));
    let query =
        format!("select start, \"end\", {select}, {name}, {}, {} from {table}", optional[0], optional[1]);
    let mut statement = db.prepare(&query)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let Some((start, end)) = row_times(collected, table, &row.get(0)?, &row.get(1)?) else {
            continue;
        };
        let device = integer(&row.get(2)?).and_then(|device| u32::try_from(device).ok()).unwrap_or(NONE_U32);
        let stream = integer(&row.get(3)?).and_then(|stream| u64::try_from(stream).ok()).unwrap_or(NONE_U64);
        let correlation =
            integer(&row.get(4)?).and_then(|correlation| u64::try_from(correlation).ok()).unwrap_or(0);
        let pid = integer(&row.get(5)?).map(|global| split_global_id(global).0);
        let name_text = integer(&row.get(6)?).and_then(|id| strings.get(&id)).map(String::as_str);
        let graph_id = integer(&row.get(7)?).and_then(|graph| u64::try_from(graph).ok()).unwrap_or(0);
        let graph_node = integer(&row.get(8)?).is_some();
        let (uuid, _) = if device == NONE_U32 { (None, None) } else { devices.lookup(pid, device) };
        let pid_key = match pid {
            Some(pid) => collected.threads.number(pid),
            None => NONE_U64,
        };
        let name = match (kind, name_text) {
            (GpuKind::Graph, _) => collected.names.intern(&format!("CUDA graph {graph_id}")),
            (_, Some(text)) => collected.names.intern(text),
            (_, None) => collected.names.intern(kind.activity_kind()),
        };
        let device_uuid = uuid.map_or(NONE_U32, |uuid| collected.strings.intern(&uuid));
        collected.events_read += 1;
        collected.gpu.push(GpuEvent {
            start,
            end,
            correlation,
            stream,
            graph_id,
            pid: pid_key,
            name,
            device,
            device_uuid,
            graph_node,
            kind,
        });
    }
    Ok(())
}

fn read_runtime(
    db: &Connection,
    schema: &mut Schema,
    strings: &HashMap<i64, String>,
    collected: &mut Collected,
) -> Result<(), TraceErrorKind> {
    let present = Schema::columns(db, RUNTIME_TABLE)?;
    require(RUNTIME_TABLE, &present, &["start", "end"])?;
    let select = schema.select(RUNTIME_TABLE, &present, &RUNTIME_COLUMNS);
    let mut statement = db.prepare(&format!("select start, \"end\", {select} from {RUNTIME_TABLE}"))?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        collected.events_read += 1;
        let Some((start, end)) = row_times(collected, RUNTIME_TABLE, &row.get(0)?, &row.get(1)?) else {
            continue;
        };
        let Some(global_tid) = integer(&row.get(2)?) else {
            collected.skip("missing pid or tid", || format!("{RUNTIME_TABLE}: a row without globalTid"));
            continue;
        };
        let (pid, tid) = split_global_id(global_tid);
        let correlation =
            integer(&row.get(3)?).and_then(|correlation| u64::try_from(correlation).ok()).unwrap_or(0);
        let name = integer(&row.get(4)?).and_then(|id| strings.get(&id)).map_or("", String::as_str);
        // The table holds runtime (cuda*) and driver (cu*) calls alike.
        let kind = if !name.starts_with("cuda") && name.starts_with("cu") {
            RuntimeKind::Driver
        } else {
            RuntimeKind::Runtime
        };
        let row = RuntimeRow {
            start,
            end,
            correlation,
            pid: collected.threads.number(pid),
            tid: collected.threads.number(tid),
            name: collected.names.intern(name),
            kind,
        };
        collected.runtime.push(row);
    }
    Ok(())
}

fn read_nvtx(
    db: &Connection,
    schema: &mut Schema,
    strings: &HashMap<i64, String>,
    spans: &SpanMatcher,
    collected: &mut Collected,
) -> Result<(), TraceErrorKind> {
    let present = Schema::columns(db, NVTX_TABLE)?;
    require(NVTX_TABLE, &present, &["start", "end", "eventType"])?;
    let select = schema.select(NVTX_TABLE, &present, &NVTX_COLUMNS);
    let types = NVTX_RANGE_TYPES.map(|kind| kind.to_string()).join(", ");
    let query = format!(
        "select start, \"end\", {select} from {NVTX_TABLE} where eventType in ({types}) and \"end\" is not null"
    );
    let mut statement = db.prepare(&query)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let name = match text(&row.get(2)?) {
            Some(name) => name,
            None => match integer(&row.get(3)?).and_then(|id| strings.get(&id)) {
                Some(name) => name.clone(),
                None => continue,
            },
        };
        let Some(scope) = spans.scope(&name) else {
            continue;
        };
        collected.events_read += 1;
        let Some((start, end)) = row_times(collected, NVTX_TABLE, &row.get(0)?, &row.get(1)?) else {
            continue;
        };
        let Some(global_tid) = integer(&row.get(4)?) else {
            collected
                .skip("missing pid or tid", || format!("{NVTX_TABLE}: range {name:?} without globalTid"));
            continue;
        };
        let (pid, tid) = split_global_id(global_tid);
        let span = SpanRow {
            start,
            end,
            pid: collected.threads.number(pid),
            tid: collected.threads.number(tid),
            name: collected.names.intern(&name),
            scope,
        };
        collected.spans.push(span);
    }
    Ok(())
}
