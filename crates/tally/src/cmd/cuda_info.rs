//! `tally cuda-info`: what the CUDA driver sees (its version, each device
//! with its UUID and memory), or why there is no CUDA here. Both answers
//! exit 0: a machine without CUDA is a fact to report, not an error.

use std::process::ExitCode;

use serde_json::{Value, json};
use tally_cuda::{DriverInfo, probe};

use super::Format;

/// Arguments of `tally cuda-info`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let answer = probe();
    let text = match (&answer, args.format) {
        (Ok(info), Format::Text) => text(info),
        (Ok(info), Format::Json) => format!("{:#}\n", json_value(info)),
        (Err(error), Format::Text) => format!("{}\nstatus: unavailable\n", error.reason()),
        (Err(error), Format::Json) => {
            format!("{:#}\n", json!({"status": "unavailable", "reason": error.reason()}))
        }
    };
    super::output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

const GIB: f64 = (1u64 << 30) as f64;

fn text(info: &DriverInfo) -> String {
    let mut out = format!("CUDA driver: {} ({})\n", info.version, info.version.0);
    out += &format!("devices: {}\n", info.devices.len() + info.device_errors.len());
    for device in &info.devices {
        let used = device.total_bytes.saturating_sub(device.free_bytes);
        out += &format!(
            "  {}: {}  {}  compute {}.{}  memory {:.2} GiB total, {:.2} GiB free, {:.2} GiB used\n",
            device.ordinal,
            device.name,
            device.uuid,
            device.compute_capability.0,
            device.compute_capability.1,
            device.total_bytes as f64 / GIB,
            device.free_bytes as f64 / GIB,
            used as f64 / GIB,
        );
    }
    for (ordinal, reason) in &info.device_errors {
        out += &format!("  {ordinal}: unreadable: {reason}\n");
    }
    out += "status: available\n";
    out
}

fn json_value(info: &DriverInfo) -> Value {
    let devices: Vec<Value> = info
        .devices
        .iter()
        .map(|device| {
            json!({
                "ordinal": device.ordinal,
                "name": device.name,
                "uuid": device.uuid,
                "compute_capability": format!("{}.{}", device.compute_capability.0, device.compute_capability.1),
                "total_bytes": device.total_bytes,
                "free_bytes": device.free_bytes,
            })
        })
        .collect();
    let errors: Vec<Value> = info
        .device_errors
        .iter()
        .map(|(ordinal, reason)| json!({"ordinal": ordinal, "reason": reason}))
        .collect();
    json!({
        "status": "available",
        "driver_version": info.version.to_string(),
        "devices": devices,
        "device_errors": errors,
    })
}
