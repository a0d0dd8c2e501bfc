#![doc = include_str!("../README.md")]
//!
//! Overlap-aware GPU-time accounting, as stormlog 0.4.3's
//! `account_gpu_time` and `validate_request_shares` define it, with
//! per-device details beyond it.
//!
//! Three figures stay apart, per device clock, for the run and for each
//! iteration, and none is derived from another:
//!
//! - **summed activity time**: the sum of every activity's busy intervals;
//!   concurrent kernels count once each;
//! - **busy time**: the length of the union of those intervals, the time the
//!   device had at least one activity running;
//! - **elapsed time** of an iteration: `end − start` on a monotonic clock.
//!
//! ```
//! use serde_json::json;
//! use tally_core::parse_inference_record;
//! use tally_resolve::resolve_inference_events;
//! use tally_gpu_time::account_gpu_time;
//!
//! let context = json!({"run_id": "r", "session_id": "s", "producer_id": "trace",
//!     "source": "doc", "clock_domain": "gpu0", "clock_kind": "device",
//!     "collection_mode": "imported", "provenance": "observed", "device_uuid": "GPU-0"});
//! let kernel = |id: &str, start: u64, end: u64| parse_inference_record(json!({
//!     "schema_version": 2, "event_type": "infer.activity_ref", "event_id": id,
//!     "context": context, "activity_ref": {"producer_id": "trace", "id": id},
//!     "activity_kind": "kernel", "activity_domain": "gpu",
//!     "attribution_status": "unresolved", "start_ns": start, "end_ns": end})).unwrap();
//! let records = [kernel("k1", 0, 100), kernel("k2", 50, 150), kernel("k3", 300, 400)];
//! let graph = resolve_inference_events(&records).unwrap();
//! let accounting = account_gpu_time(&graph);
//! let total = &accounting.device_totals[0];
//! assert_eq!(total.time.summed_activity_ns, 300); // 100 + 100 + 100
//! assert_eq!(total.time.busy_ns, 250);            // [0, 150) and [300, 400)
//! assert_eq!(total.detail.peak_concurrency, 2);
//! assert_eq!(total.detail.idle_gaps.total_ns, 150);
//! ```
//!
//! # Beyond stormlog
//!
//! Each device total also carries a [`DeviceDetail`]: busy time per stream,
//! the peak concurrency, the busy envelope and the idle gaps inside it; and
//! [`GpuTime::overlap_factor`] gives summed over busy. The interval
//! arithmetic underneath (and its rule for empty intervals) is
//! [`tally_utils::interval`], shared with the trace import.
//!
//! # Differences from stormlog
//!
//! Python's integers are unbounded; here a busy time is a `u64` (it never
//! exceeds the span of `u64` timestamps) and a summed time a `u128`.
//! Iteration rows and device totals come as sorted lists instead of dicts.

mod account;
pub mod breakdown;
pub mod category;
pub mod diff;
mod model;
mod report;
mod shares;

pub use account::{
    DeviceClock, DeviceDetail, DeviceTotal, GpuTime, IterationTiming, RunAccounting, StreamBusy,
    account_gpu_time, account_gpu_time_on,
};
pub use model::{ShareModel, ShareModelError};
pub use report::{AccountingReport, DeviceDetailRow, GpuTimeRow, IterationRow, StreamRow, UnresolvedRow};
pub use shares::{RequestShareEstimate, ShareBudget, ShareError, validate_request_shares};
