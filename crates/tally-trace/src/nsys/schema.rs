//! The export's schema version, and what an export newer than any tested
//! holds that the reader does not know.
//!
//! nsys writes its export schema's version in its metadata table
//! (`META_DATA_EXPORT` since schema 3, `EXPORT_META_DATA` before) as
//! `EXPORT_SCHEMA_VERSION`. The reader was tested against 2.9.1 (nsys
//! 2022.2), 3.24.0 (2025.5) and 3.25.0 (2026.2). An export with a newer
//! schema is still read (nsys adds columns and tables far more often than it
//! renames them), but the summary warns, naming the version and every
//! `CUPTI_ACTIVITY_KIND_*` table and every column of a table the reader
//! reads that the newest tested schema does not have: whatever they hold is
//! not in the figures.

use std::collections::BTreeSet;

use rusqlite::Connection;

use crate::error::TraceErrorKind;

/// The newest export schema the reader was tested against.
pub(super) const NEWEST_TESTED: (u32, u32, u32) = (3, 25, 0);

/// The metadata tables, newest name first.
pub(super) const META_TABLES: [&str; 2] = ["META_DATA_EXPORT", "EXPORT_META_DATA"];

/// The CUDA activity tables of the tested schemas.
const KNOWN_CUPTI_TABLES: [&str; 11] = [
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
    "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
    "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
    "CUPTI_ACTIVITY_KIND_OVERHEAD",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
];

/// The columns every GPU activity table (kernel, memcpy, memset, graph
/// trace) starts with, then that table's own `$own` ones.
macro_rules! gpu_activity_columns {
    ($($own:literal),* $(,)?) => {
        &["start", "end", "deviceId", "contextId", "greenContextId", "streamId", "correlationId", "globalPid", $($own),*]
    };
}

/// The columns of the tables the reader reads, as schema 3.25.0 (and
/// 3.24.0, for the graph-trace and GPU tables 3.25.0's test export lacks)
/// has them.
const KNOWN_COLUMNS: [(&str, &[&str]); 8] = [
    (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        gpu_activity_columns![
            "demangledName",
            "shortName",
            "mangledName",
            "launchType",
            "cacheConfig",
            "registersPerThread",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "localMemoryPerThread",
            "localMemoryTotal",
            "gridId",
            "sharedMemoryExecuted",
            "graphNodeId",
            "sharedMemoryLimitConfig",
            "qmdBulkReleaseDone",
            "qmdPreexitDone",
            "qmdLastCtaDone",
            "graphId",
            "clusterX",
            "clusterY",
            "clusterZ",
            "clusterSchedulingPolicy",
            "maxPotentialClusterSize",
            "maxActiveClusters",
            "sharedMemoryRequestedPercentage",
            "tensorSizeMinusOneElements",
        ],
    ),
    (
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        gpu_activity_columns![
            "bytes",
            "copyKind",
            "deprecatedSrcId",
            "srcKind",
            "dstKind",
            "srcDeviceId",
            "srcContextId",
            "dstDeviceId",
            "dstContextId",
            "migrationCause",
            "graphNodeId",
            "virtualAddress",
            "copyCount",
        ],
    ),
    ("CUPTI_ACTIVITY_KIND_MEMSET", gpu_activity_columns!["value", "bytes", "graphNodeId", "memKind",]),
    (
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        &["start", "end", "eventClass", "globalTid", "correlationId", "nameId", "returnValue", "callchainId"],
    ),
    ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", gpu_activity_columns!["graphId", "graphExecId",]),
    (
        "NVTX_EVENTS",
        &[
            "start",
            "end",
            "eventType",
            "rangeId",
            "category",
            "color",
            "text",
            "globalTid",
            "endGlobalTid",
            "textId",
            "domainId",
            "uint64Value",
            "int64Value",
            "doubleValue",
            "uint32Value",
            "int32Value",
            "floatValue",
            "jsonTextId",
            "jsonText",
            "binaryData",
        ],
    ),
    (
        "TARGET_INFO_GPU",
        &[
            "vmId",
            "id",
            "name",
            "busLocation",
            "isDiscrete",
            "l2CacheSize",
            "totalMemory",
            "memoryBandwidth",
            "clockRate",
            "smCount",
            "pwGpuId",
            "uuid",
            "luid",
            "chipName",
            "cuDevice",
            "ctxswDevPath",
            "ctrlDevPath",
            "revision",
            "nodeMask",
            "constantMemory",
            "maxIPC",
            "maxRegistersPerBlock",
            "maxShmemPerBlock",
            "maxShmemPerBlockOptin",
            "maxShmemPerSm",
            "maxRegistersPerSm",
            "threadsPerWarp",
            "asyncEngines",
            "maxWarpsPerSm",
            "maxBlocksPerSm",
            "maxThreadsPerBlock",
            "maxBlockDimX",
            "maxBlockDimY",
            "maxBlockDimZ",
            "maxGridDimX",
            "maxGridDimY",
            "maxGridDimZ",
            "computeMajor",
            "computeMinor",
            "smMajor",
            "smMinor",
        ],
    ),
    ("TARGET_INFO_CUDA_DEVICE", &["gpuId", "cudaId", "pid", "uuid"]),
];

/// `"3.25.0"` as numbers; a missing part reads as 0.
pub(super) fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().split('.').map(|part| part.parse::<u32>());
    let major = parts.next()?.ok()?;
    let minor = parts.next().transpose().ok()?.unwrap_or(0);
    let micro = parts.next().transpose().ok()?.unwrap_or(0);
    Some((major, minor, micro))
}

/// The warning for an export whose schema is newer than any tested, or
/// `None` when it is not: the version and what the reader does not know.
pub(super) fn newer_schema_warning(
    db: &Connection,
    tables: &BTreeSet<String>,
    version: &str,
) -> Result<Option<String>, TraceErrorKind> {
    match parse_version(version) {
        Some(parsed) if parsed > NEWEST_TESTED => {}
        _ => return Ok(None),
    }
    let unknown_tables: Vec<&str> = tables
        .iter()
        .map(String::as_str)
        .filter(|table| table.starts_with("CUPTI_ACTIVITY_KIND_") && !KNOWN_CUPTI_TABLES.contains(table))
        .collect();
    let mut unknown_columns = Vec::new();
    for (table, known) in KNOWN_COLUMNS {
        if !tables.contains(table) {
            continue;
        }
        let mut statement = db.prepare(&format!("pragma table_info({table})"))?;
        let columns = statement.query_map([], |row| row.get::<_, String>(1))?;
        for column in columns {
            let column = column?;
            if !known.contains(&column.as_str()) {
                unknown_columns.push(format!("{table}.{column}"));
            }
        }
    }
    let (major, minor, micro) = NEWEST_TESTED;
    let list = |items: &[String]| if items.is_empty() { "none".to_owned() } else { items.join(", ") };
    let tables: Vec<String> = unknown_tables.iter().map(|&table| table.to_owned()).collect();
    Ok(Some(format!(
        "WARNING: the export's schema is {version}, newer than the newest tally was tested with \
         ({major}.{minor}.{micro}); read as that one. CUDA tables it does not know (not imported): {}; \
         columns it does not know in the tables it reads (ignored): {}",
        list(&tables),
        list(&unknown_columns),
    )))
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_compare_by_number_not_text() {
        assert_eq!(parse_version("3.25.0"), Some((3, 25, 0)));
        assert_eq!(parse_version("2.9.1"), Some((2, 9, 1)));
        assert_eq!(parse_version("4"), Some((4, 0, 0)));
        assert!(parse_version("3.100.0") > parse_version("3.25.0"));
        assert_eq!(parse_version("three"), None);
        assert_eq!(parse_version("3.x"), None);
    }
}
