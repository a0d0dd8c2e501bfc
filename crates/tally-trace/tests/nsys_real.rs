//! The three real Nsight Systems exports of `tests/fixtures/nsys/real`
//! (nsys 2022.2, 2025.5 and 2026.2; export schemas 2.9.1, 3.24.0 and
//! 3.25.0), each read here a second time with plain SQL, and that reading
//! compared with tally's import: every GPU row (kernel, copy, memset, CUDA
//! graph launch) with its process, device, times, correlation ID and the
//! runtime call it links to; each device's count, summed and busy time;
//! the runtime calls; the ProfilerStep-like ranges. All in integer ns.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use tally_core::{ActivityDomain, CorrelationEvent, EventBody};
use tally_trace::{Detail, ImportSummary};

const V2022: &str = "nsys-2022.2.1_schema-2.9.1_a100_saxpy-mpi.sqlite";
const V2025: &str = "nsys-2025.5.2_schema-3.24.0_rtx3060_smoke.sqlite";
const V2026: &str = "nsys-2026.2.1_schema-3.25.0_2xh100_fastvideo-1s.sqlite";

fn real(name: &str) -> PathBuf {
    fixture(&format!("nsys/real/{name}"))
}

/// One GPU row as compared: (pid, device, start, end, correlation ID,
/// activity kind, launch API, graph ID).
type Row = (u64, u64, u64, u64, Option<u64>, String, Option<String>, Option<u64>);

/// What plain SQL says of an export.
struct SqlReading {
    base: u64,
    rows: Vec<Row>,
    runtime_calls: u64,
    profiler_steps: u64,
    /// The GPUs `TARGET_INFO_GPU` lists: (uuid, name, compute capability,
    /// memory in bytes).
    gpus: Vec<(String, String, String, u64)>,
}

fn has_table(db: &Connection, table: &str) -> bool {
    db.query_row("select count(*) from sqlite_master where type = 'table' and name = ?1", [table], |row| {
        row.get::<_, i64>(0)
    })
    .unwrap()
        == 1
}

fn read_sql(path: &Path) -> SqlReading {
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let base: u64 = db
        .query_row("select utcEpochNs from TARGET_INFO_SESSION_START_TIME", [], |row| row.get::<_, i64>(0))
        .unwrap()
        .try_into()
        .unwrap();
    let mut rows = Vec::new();
    // The runtime call with the row's correlation ID in the row's process
    // (the last one in the table, should there be several).
    let launch = "(select s.value from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds s on s.id = r.nameId \
                  where r.correlationId = g.correlationId \
                  and ((r.globalTid >> 24) & 16777215) = ((g.globalPid >> 24) & 16777215) \
                  order by r.rowid desc limit 1)";
    for (table, kind) in [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "gpu_kernel"),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "gpu_memcpy"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "gpu_memset"),
        ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "gpu_kernel"),
    ] {
        if !has_table(&db, table) {
            continue;
        }
        let graph = if table.ends_with("GRAPH_TRACE")
            || table.ends_with("KERNEL") && {
                let mut statement = db.prepare(&format!("pragma table_info({table})")).unwrap();
                let columns: Vec<String> =
                    statement.query_map([], |row| row.get(1)).unwrap().map(Result::unwrap).collect();
                columns.iter().any(|column| column == "graphId")
            } {
            "g.graphId"
        } else {
            "NULL"
        };
        let query = format!(
            "select (g.globalPid >> 24) & 16777215, g.deviceId, g.start, g.\"end\", g.correlationId, {launch}, \
             {graph} from {table} g"
        );
        let mut statement = db.prepare(&query).unwrap();
        let mut found = statement.query([]).unwrap();
        while let Some(row) = found.next().unwrap() {
            let number =
                |index: usize| row.get::<_, Option<i64>>(index).unwrap().map(|n| u64::try_from(n).unwrap());
            rows.push((
                number(0).unwrap(),
                number(1).unwrap(),
                base + number(2).unwrap(),
                base + number(3).unwrap(),
                number(4).filter(|&id| id != 0),
                kind.to_owned(),
                row.get::<_, Option<String>>(5).unwrap(),
                number(6).filter(|&id| id != 0),
            ));
        }
    }
    rows.sort();
    let runtime_calls = db
        .query_row("select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME", [], |row| row.get::<_, i64>(0))
        .unwrap()
        .try_into()
        .unwrap();
    let profiler_steps = if has_table(&db, "NVTX_EVENTS") {
        let mut statement = db
            .prepare(
                "select coalesce(n.text, s.value) from NVTX_EVENTS n left join StringIds s on s.id = n.textId \
                 where n.eventType in (59, 60) and n.\"end\" is not null",
            )
            .unwrap();
        let names: Vec<Option<String>> =
            statement.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
        names
            .iter()
            .flatten()
            .filter(|name| {
                name.strip_prefix("ProfilerStep#")
                    .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            })
            .count() as u64
    } else {
        0
    };
    let gpus = if has_table(&db, "TARGET_INFO_GPU") {
        let mut statement = db
            .prepare(
                "select uuid, name, computeMajor || '.' || computeMinor, totalMemory from TARGET_INFO_GPU",
            )
            .unwrap();
        statement
            .query_map([], |row| {
                let uuid = format!("GPU-{}", row.get::<_, String>(0)?);
                Ok((uuid, row.get(1)?, row.get(2)?, u64::try_from(row.get::<_, i64>(3)?).unwrap()))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect()
    } else {
        Vec::new()
    };
    SqlReading { base, rows, runtime_calls, profiler_steps, gpus }
}

/// The same rows from tally's records, one per GPU event.
fn imported_rows(events: &[CorrelationEvent]) -> Vec<Row> {
    let mut rows: Vec<Row> = events
        .iter()
        .filter_map(|event| match event.body() {
            EventBody::ActivityRef(activity) if activity.activity_domain == ActivityDomain::Gpu => {
                let (start, end) = activity.span.bounds().unwrap();
                let metadata = event.metadata();
                Some((
                    event.context().pid.unwrap(),
                    metadata.get("device_index").and_then(Value::as_u64).unwrap(),
                    start,
                    end,
                    activity.cuda_correlation_id,
                    activity.activity_kind.as_str().to_owned(),
                    metadata.get("launch_api").and_then(Value::as_str).map(str::to_owned),
                    activity.graph_id,
                ))
            }
            _ => None,
        })
        .collect();
    rows.sort();
    rows
}

/// Per (pid, device): count, summed ns, busy ns (interval union).
fn per_device(rows: &[Row]) -> BTreeMap<String, (u64, u128, u128)> {
    let mut intervals: BTreeMap<String, Vec<(u128, u128)>> = BTreeMap::new();
    for row in rows {
        intervals.entry(format!("{}/{}", row.0, row.1)).or_default().push((row.2.into(), row.3.into()));
    }
    intervals
        .into_iter()
        .map(|(key, spans)| {
            let summed = spans.iter().map(|(start, end)| end - start).sum();
            (key, (spans.len() as u64, summed, union_length(&spans)))
        })
        .collect()
}

fn summary_devices(summary: &ImportSummary) -> BTreeMap<String, (u128, u128)> {
    summary.traces[0]["devices"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, device)| {
            let figure = |name: &str| u128::from(device[name].as_u64().unwrap());
            (key.clone(), (figure("summed_ns"), figure("busy_ns")))
        })
        .collect()
}

/// The import agrees with plain SQL on every GPU row, each device's
/// figures, the runtime calls and the iterations; returns both readings.
fn check(name: &str) -> (SqlReading, Vec<CorrelationEvent>, ImportSummary) {
    let path = real(name);
    let sql = read_sql(&path);
    let (events, summary) = import(std::slice::from_ref(&path), Detail::Kernel);
    let trace = &summary.traces[0];
    assert_eq!(trace["base_time_ns"].as_u64().unwrap(), sql.base, "{name}");
    let imported = imported_rows(&events);
    assert_eq!(imported.len(), sql.rows.len(), "{name}: GPU rows");
    for (got, wanted) in imported.iter().zip(&sql.rows) {
        assert_eq!(got, wanted, "{name}");
    }
    assert_eq!(trace["gpu_events"].as_u64().unwrap(), sql.rows.len() as u64, "{name}");
    let figures = per_device(&sql.rows);
    let from_summary = summary_devices(&summary);
    let wanted: BTreeMap<String, (u128, u128)> =
        figures.iter().map(|(key, &(_, summed, busy))| (key.clone(), (summed, busy))).collect();
    assert_eq!(from_summary, wanted, "{name}: each device's summed and busy ns");
    assert_eq!(per_device(&imported), figures, "{name}");
    let runtime = events
        .iter()
        .filter(|event| {
            matches!(event.body(), EventBody::ActivityRef(activity)
                if activity.activity_domain == ActivityDomain::Runtime)
        })
        .count() as u64;
    assert_eq!(runtime, sql.runtime_calls, "{name}: runtime calls");
    assert_eq!(trace["runtime_calls"].as_u64().unwrap(), sql.runtime_calls, "{name}");
    let iterations = events.iter().filter(|event| matches!(event.body(), EventBody::Iteration(_))).count();
    assert_eq!(iterations as u64, sql.profiler_steps, "{name}: ProfilerStep ranges");
    // Device identity: the listed GPU's UUID and name where the export
    // lists one, a synthesized UUID per process and ordinal otherwise.
    for event in &events {
        if let EventBody::ActivityRef(activity) = event.body()
            && activity.activity_domain == ActivityDomain::Gpu
        {
            let uuid = event.context().device_uuid.as_ref().unwrap().as_str();
            match sql.gpus.as_slice() {
                [(listed, ..)] => assert_eq!(uuid, listed, "{name}"),
                _ => assert!(uuid.starts_with("nsys:") && uuid.contains(":device"), "{name}: {uuid}"),
            }
        }
    }
    for device in trace["devices"].as_object().unwrap().values() {
        match sql.gpus.as_slice() {
            [(_, gpu_name, capability, memory)] => {
                assert_eq!(device["name"].as_str(), Some(gpu_name.as_str()), "{name}");
                assert_eq!(device["device_uuid_source"], "trace", "{name}");
                assert_eq!(device["compute_capability"].as_str(), Some(capability.as_str()), "{name}");
                assert_eq!(device["total_memory_bytes"].as_u64(), Some(*memory), "{name}");
            }
            _ => {
                assert_eq!(device["device_uuid_source"], "synthesized", "{name}");
                assert_eq!(device["compute_capability"], Value::Null, "{name}");
            }
        }
    }
    assert!(
        !trace["notes"].as_array().unwrap().iter().any(|note| note.as_str().unwrap().starts_with("WARNING")),
        "{name}: a tested schema gives no warning: {}",
        trace["notes"]
    );
    (sql, events, summary)
}

#[test]
fn nsys_2022_export_with_the_old_metadata_table_matches_sql() {
    let (sql, events, summary) = check(V2022);
    let trace = &summary.traces[0];
    assert_eq!(trace["schema_version"], "2.9.1", "read from EXPORT_META_DATA");
    assert_eq!(trace["nsys_version"], "2022.2.1.31");
    let kinds = |kind: &str| sql.rows.iter().filter(|row| row.5 == kind).count();
    assert_eq!((kinds("gpu_kernel"), kinds("gpu_memcpy"), kinds("gpu_memset")), (5, 15, 0));
    assert_eq!(sql.runtime_calls, 95);
    // Every kernel and copy was launched by a runtime call of its process.
    assert!(sql.rows.iter().all(|row| row.6.is_some()), "{:?}", sql.rows);
    assert!(events.len() > 115);
}

#[test]
fn nsys_2025_graph_launches_traced_per_graph_are_gpu_activities_linked_to_their_launch() {
    let (sql, events, summary) = check(V2025);
    let trace = &summary.traces[0];
    assert_eq!(trace["schema_version"], "3.24.0");
    assert_eq!(trace["graph_launches_traced_per_graph"], 2);
    assert!(trace["not_imported"].as_object().unwrap().is_empty(), "{}", trace["not_imported"]);
    assert_eq!(sql.rows.len(), 3 + 1 + 2, "3 kernels, 1 copy, 2 graph launches");
    let graphs: Vec<&CorrelationEvent> =
        events.iter().filter(|event| event.metadata().get("cuda_graph_trace").is_some()).collect();
    assert_eq!(graphs.len(), 2);
    for event in graphs {
        let EventBody::ActivityRef(activity) = event.body() else { panic!("not an activity") };
        assert_eq!(activity.activity_kind.as_str(), "gpu_kernel");
        assert_eq!(activity.graph_id, Some(1));
        assert_eq!(event.metadata().get("cuda_graph_trace").unwrap(), "graph");
        assert_eq!(event.metadata().get("first_name").unwrap(), "CUDA graph 1");
        assert_eq!(event.metadata().get("launch_api").unwrap(), "cudaGraphLaunch_v10000");
    }
    assert_eq!(trace["graph_gpu_events"], 2);
}

#[test]
fn nsys_2026_two_h100s_match_sql() {
    let (sql, _, summary) = check(V2026);
    let trace = &summary.traces[0];
    assert_eq!(trace["schema_version"], "3.25.0");
    let kinds = |kind: &str| sql.rows.iter().filter(|row| row.5 == kind).count();
    assert_eq!((kinds("gpu_kernel"), kinds("gpu_memcpy"), kinds("gpu_memset")), (3442, 904, 22));
    assert_eq!(sql.runtime_calls, 5796);
    let devices = per_device(&sql.rows);
    assert_eq!(devices.len(), 2, "{devices:?}");
    let linked = sql.rows.iter().filter(|row| row.6.is_some()).count() as u64;
    let unresolved = trace["unresolved_gpu_events"].as_object().unwrap();
    let no_launch = unresolved.get("no_launch_record").and_then(Value::as_u64).unwrap_or(0);
    assert_eq!(sql.rows.len() as u64 - no_launch, linked, "{unresolved:?}");
}

#[test]
fn an_export_newer_than_any_tested_warns_and_names_what_it_does_not_know() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("newer.sqlite");
    std::fs::copy(real(V2025), &path).unwrap();
    {
        let db = Connection::open(&path).unwrap();
        db.execute_batch(
            "update META_DATA_EXPORT set value = '3.26.1' where name = 'EXPORT_SCHEMA_VERSION';
             alter table CUPTI_ACTIVITY_KIND_KERNEL add column futureColumn INTEGER;
             create table CUPTI_ACTIVITY_KIND_FUTURE_THING (start INTEGER, \"end\" INTEGER);",
        )
        .unwrap();
    }
    let (events, summary) = import(std::slice::from_ref(&path), Detail::Kernel);
    let trace = &summary.traces[0];
    assert_eq!(trace["schema_version"], "3.26.1");
    let notes: Vec<&str> =
        trace["notes"].as_array().unwrap().iter().map(|note| note.as_str().unwrap()).collect();
    let warning =
        notes.iter().find(|note| note.starts_with("WARNING")).unwrap_or_else(|| panic!("{notes:?}"));
    for words in
        ["3.26.1", "3.25.0", "CUPTI_ACTIVITY_KIND_FUTURE_THING", "CUPTI_ACTIVITY_KIND_KERNEL.futureColumn"]
    {
        assert!(warning.contains(words), "{words} in {warning}");
    }
    // Still read as the tested schema: the same GPU rows.
    assert_eq!(imported_rows(&events), read_sql(&real(V2025)).rows);
}
