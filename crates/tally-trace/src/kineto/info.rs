//! What a Kineto trace's header says of the run and its devices, in the
//! terms of [`TraceInfo`].
//!
//! The devices come from `deviceProperties`, one entry per CUDA (or HIP)
//! ordinal the process saw, as Kineto's `DeviceProperties.cpp` writes it:
//! `id`, `name`, `totalGlobalMem`, `computeMajor`, `computeMinor` and the
//! occupancy limits. The name, the compute capability and the memory name
//! the device in the summary. Kineto (as of PyTorch 2.13) writes no UUID,
//! so a device is told apart by the synthesized `kineto:FILE:HASH:deviceN`
//! (two ranks' device 0 are two GPUs unless a trace says which GPU it
//! was); where an entry does carry a `uuid` (a newer or patched writer, or a
//! tool that adds it), written in NVML's, Nsight's or CUDA's form, it is
//! the device's UUID, `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` as NVML
//! writes it, so the trace's device is the same device as in an Nsight
//! export or an NVML sample of that GPU.

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use serde_json::{Map, Value};

use super::KinetoHeader;
use crate::build::{DeviceDetails, TraceInfo, nvml_uuid};
use crate::collect::Collected;

/// What a Kineto header says, in the terms of [`TraceInfo`].
pub(crate) fn kineto_info(header: KinetoHeader, collected: &mut Collected) -> TraceInfo {
    let values = &header.values;
    let string = |key: &str| match values.get(key) {
        Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        _ => None,
    };
    let distributed = values.get("distributedInfo").and_then(Value::as_object);
    let number = |key: &str| distributed.and_then(|info| info.get(key)).and_then(Value::as_u64);
    let devices = read_devices(values.get("deviceProperties"), &mut collected.notes);
    let rocm = values.contains_key("roctracer_version")
        || devices.names.values().any(|name| name.starts_with("AMD"));
    let mut extra = Map::new();
    for (key, name) in [
        ("distributedInfo", "distributed_info"),
        ("deviceProperties", "device_properties"),
        ("traceName", "trace_name"),
    ] {
        extra.insert(name.into(), values.get(key).cloned().unwrap_or(Value::Null));
    }
    TraceInfo {
        source: "kineto",
        base_ns: header.base_ns.unwrap_or(0),
        host: string("host_name"),
        trace_id: string("trace_id"),
        rank: number("rank"),
        local_rank: number("local_rank"),
        world_size: number("world_size").and_then(NonZeroU64::new),
        engine_version: string("vllm_version"),
        backend: if rocm { "roctracer" } else { "cupti" },
        backend_version: if rocm { string("roctracer_version") } else { string("cupti_version") },
        device_names: devices.names,
        device_uuids: devices.uuids,
        device_details: devices.details,
        resolution_ns: if collected.sub_microsecond { 1 } else { 1000 },
        extra,
        ..TraceInfo::default()
    }
}

/// The devices `deviceProperties` describes, by ordinal.
#[derive(Default)]
struct Devices {
    names: BTreeMap<u32, String>,
    uuids: BTreeMap<u32, String>,
    details: BTreeMap<u32, DeviceDetails>,
}

fn read_devices(properties: Option<&Value>, notes: &mut Vec<String>) -> Devices {
    let mut devices = Devices::default();
    let Some(Value::Array(entries)) = properties else {
        return devices;
    };
    for entry in entries {
        let Some(id) = entry.get("id").and_then(Value::as_u64).and_then(|id| u32::try_from(id).ok()) else {
            continue;
        };
        let name = entry.get("name").and_then(Value::as_str).unwrap_or_default();
        devices.names.insert(id, name.to_owned());
        let number = |key: &str| entry.get(key).and_then(Value::as_u64);
        let compute_capability = match (number("computeMajor"), number("computeMinor")) {
            (Some(major), Some(minor)) => Some(format!("{major}.{minor}")),
            _ => None,
        };
        devices
            .details
            .insert(id, DeviceDetails { compute_capability, total_memory_bytes: number("totalGlobalMem") });
        let uuid = match entry.get("uuid") {
            None | Some(Value::Null) => continue,
            Some(Value::String(text)) => nvml_uuid(text),
            Some(_) => None,
        };
        match uuid {
            Some(uuid) => {
                devices.uuids.insert(id, uuid);
            }
            None => notes.push(format!(
                "deviceProperties gives device {id} the uuid {}, which is not a GPU UUID; the device keeps a \
                 synthesized one",
                entry["uuid"]
            )),
        }
    }
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    let mut repeated = Vec::new();
    for (&id, uuid) in &devices.uuids {
        if let Some(first) = seen.insert(uuid, id) {
            repeated.push((first, id, uuid.clone()));
        }
    }
    // Two ordinals of one process are two GPUs: a repeated UUID is the
    // writer's mistake, and merging the two would hide it.
    for (first, id, uuid) in repeated {
        notes.push(format!(
            "deviceProperties gives devices {first} and {id} one uuid {uuid}; both keep synthesized ones"
        ));
        devices.uuids.retain(|_, known| *known != uuid);
    }
    devices
}
