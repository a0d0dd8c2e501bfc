#![doc = include_str!("../README.md")]
//!
//! Each module is one tool with one home: a crate that needs one of these
//! takes it from here rather than keeping a copy (`tests/tests/tidy.rs` and
//! the repeated-code check in review keep it that way). Nothing here knows
//! the event model, an artifact format or the command line.
//!
//! - [`interval`]: interval arithmetic (sums, unions, busy periods, sweeps
//!   with gaps, concurrency and labelled coverage, the radix sort).
//! - [`fast_hash`]: the fast hasher of in-memory tables.
//! - [`json_eq`] and [`content_hash`]: Python's equality of decoded JSON
//!   (`1 == 1.0`), and 128-bit hashes of JSON content under that equality,
//!   the same from a decoded value and from JSON text.
//! - [`byte_search`] and [`decimal`]: the word-at-a-time byte search and
//!   decimal digits of the fast scanners.
//! - [`json_text`]: where Python reads JSON text otherwise than serde_json
//!   (integer negative zeros).
//! - [`document`]: the size bound on a JSON document read whole.
//! - [`intern`] and [`chunked`]: the string interner and the vector that
//!   grows by whole chunks, of the streaming readers and resolvers.
//! - [`sniff`]: an input's first bytes, and the one gzip detector.
//! - [`xorshift`]: the deterministic pseudo-random numbers of generated
//!   test and bench inputs.

pub mod byte_search;
pub mod chunked;
pub mod content_hash;
pub mod decimal;
pub mod document;
pub mod fast_hash;
pub mod intern;
pub mod interval;
pub mod json_eq;
pub mod json_text;
pub mod sniff;
pub mod xorshift;
