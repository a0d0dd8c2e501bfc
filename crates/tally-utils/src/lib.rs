#![doc = include_str!("../README.md")]
//!
//! Each module is one tool with one home: a crate that needs one of these
//! takes it from here rather than keeping a copy (`tests/tests/tidy.rs` and
//! the repeated-code check in review keep it that way). Nothing here knows
//! the event model, a file format or the command line.
