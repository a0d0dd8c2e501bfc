//! Shared by the property suites: a generated run with a delivery of it.

use proptest::prelude::*;
use tally_conformance::runs::{RunSpec, arb_delivery};
use tally_core::InferenceRecord;

/// The records of a run drawn from `runs`, with an order and repetitions of
/// them (`tally_conformance::runs::deliver` applies them).
pub fn with_delivery(
    runs: impl Strategy<Value = RunSpec>,
) -> impl Strategy<Value = (Vec<InferenceRecord>, (Vec<usize>, Vec<usize>))> {
    runs.prop_flat_map(|spec| {
        let records = spec.records();
        let len = records.len();
        (Just(records), arb_delivery(len))
    })
}
