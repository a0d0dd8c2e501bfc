#![doc = include_str!("../README.md")]
//!
//! The event model of tally: correlation events exactly as stormlog 0.4.3
//! defines them, and the small primitives both halves of tally share
//! (non-empty strings, validation errors, [`string_enum!`]). The tools
//! beneath them (interval arithmetic, hashing, decimal digits, Python's
//! reading and equality of JSON) are the internal crate `tally-utils`'.
//!
//! This crate is plain data and validation. It opens no file and knows no
//! file format beyond one JSON record: reading and writing artifacts is
//! `tally-artifact`'s job. Every constructor and every deserializer checks
//! the model's rules, so an invalid value cannot exist after construction.
//!
//! Where tally and stormlog differ on valid input: stormlog's integers are
//! unbounded; tally's counts and timestamps are `u64` and offsets `i64`, so a
//! record with a timestamp of 2^64 ns (year 2554) or more is rejected with a
//! clear error instead of accepted. JSON's `NaN` and `Infinity`, which
//! Python's parser accepts inside metadata, are not JSON and are rejected.
//!
//! ```
//! use serde_json::json;
//! use tally_core::{parse_inference_record, InferenceRecord};
//! let bad = json!({
//!     "schema_version": 2, "event_type": "infer.iteration", "event_id": "e1",
//!     "context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "t",
//!                 "clock_domain": "host", "clock_kind": "monotonic",
//!                 "collection_mode": "active", "provenance": "observed"},
//!     "iteration_ref": {"producer_id": "p", "id": "it-1"},
//!     "start_ns": 250, "end_ns": 100
//! });
//! let error = parse_inference_record(bad).unwrap_err();
//! assert_eq!(error.to_string(), "end_ns must be >= start_ns");
//! ```
//!
//! # Features
//!
//! * **`proptest`** — proptest strategies for every model value
//!   (`tally_core::arbitrary`), for other crates' property suites. Off by
//!   default. (Written here by hand rather than by `document-features`,
//!   since this crate depends on serde, serde_json, thiserror and
//!   tally-utils only.)

#[cfg(feature = "proptest")]
pub mod arbitrary;
mod busy_intervals;
mod context;
mod error;
mod event;
mod fields;
mod record;
pub mod schema;
mod span;
mod text;
pub mod view;

pub use busy_intervals::busy_intervals_from_pairs;
pub use context::{ClockKind, CollectionMode, CorrelationContext, EntityRef, Provenance};
pub use error::{ValidationError, shown};
pub use event::{
    ACTIVITY_INTERVALS_SCHEMA_VERSION, ActivityDomain, ActivityRef, ArtifactIdentity, BusyIntervals,
    CONTEXT_REFERENCE_SCHEMA_VERSION, CORRELATION_SCHEMA_VERSION, Capabilities, ClockAlignment,
    CorrelationEvent, EventBody, InferenceRecord, Iteration, LegacyRecord, Membership, Metadata, Request,
    Stage, TokenCounts,
};
pub use fields::json_integer;
pub use record::{RecordMember, parse_inference_record, parse_record_map, record_schema_version};
pub use schema::EventType;
pub use span::{Interval, Span};
pub use text::NonEmptyString;

// The serde that `string_enum!` expands to, whatever the calling crate names it.
#[doc(hidden)]
pub use serde as __serde;
