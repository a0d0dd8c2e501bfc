//! An activity record by its parts reads, through its view, exactly as the
//! full event made from the same parts: on every fixture trace (both
//! formats, both details) and on generated parts.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::sync::Arc;

use common::{fixture, options};
use proptest::prelude::*;
use tally_core::{
    ActivityDomain, ClockKind, CollectionMode, CorrelationContext, EntityRef, Provenance, Span,
};
use tally_trace::{
    ActivityMetadata, Detail, ImportedActivity, InputKind, ThreadId, TraceRecord, import_inputs,
    import_records, open_input,
};
use tally_utils::content_hash::metadata_hash;

const TRACES: [&str; 7] = [
    "kineto/large-20k-kernels.json.gz",
    "kineto/nccl-distributed.json.gz",
    "kineto/rocm-mi250-train.json.gz",
    "kineto/alexnet-cuda-sync.json.gz",
    "kineto/sampled-rank-0.json.gz",
    "nsys/full.sqlite",
    "nsys/old.sqlite",
];

#[test]
fn every_imported_activitys_view_is_the_view_of_its_full_event() {
    for name in TRACES {
        for detail in [Detail::Kernel, Detail::Launch] {
            let open = || vec![open_input(&fixture(name), Some(InputKind::Trace)).unwrap()];
            let mut activities = 0;
            let mut viewed = Vec::new();
            import_records(open(), &options(detail), &mut |record| {
                if let TraceRecord::Activity(activity) = &record {
                    activities += 1;
                    let event = activity.to_event().unwrap();
                    assert_eq!(activity.view(), event.view(), "{name}: {}", activity.event_id);
                    assert_eq!(activity.view().metadata.hash, metadata_hash(event.metadata().as_map()));
                }
                viewed.push(record.into_event().unwrap());
                Ok(())
            })
            .unwrap();
            // Records by their parts are the bulk of a trace, and the full
            // events are those the event-by-event import makes, in order.
            assert!(activities * 2 > viewed.len(), "{name}: {activities} of {}", viewed.len());
            let mut built = Vec::new();
            import_inputs(open(), &options(detail), &mut |event| {
                built.push(event);
                Ok(())
            })
            .unwrap();
            assert_eq!(viewed.len(), built.len(), "{name}");
            for (by_parts, full) in viewed.iter().zip(&built) {
                assert_eq!(by_parts, full, "{name}");
                assert_eq!(by_parts.metadata(), full.metadata(), "{name}: {}", full.event_id());
            }
        }
    }
}

fn text() -> impl Strategy<Value = String> {
    // Empty, ASCII, escapes and non-ASCII, long enough for the hasher's
    // four-lane path.
    prop_oneof![Just(String::new()), "[a-z_:<>]{1,12}", "[ -~\\\\\"é漢]{0,90}", "\\PC{0,200}"]
}

fn metadata() -> impl Strategy<Value = (u8, Vec<String>, Vec<u64>, Vec<bool>)> {
    (
        0u8..4,
        proptest::collection::vec(text(), 3),
        proptest::collection::vec(any::<u64>(), 3),
        proptest::collection::vec(any::<bool>(), 4),
    )
}

const REASONS: [&str; 2] = ["no launch found for correlation", "outside any iteration range"];

proptest! {
    #[test]
    fn generated_activities_view_as_their_full_events(
        (shape, texts, numbers, flags) in metadata(),
        start in 0u64..1 << 62,
        length in 0u64..1 << 40,
        correlation in proptest::option::of(1u64..u64::MAX),
        stream in proptest::option::of(any::<u64>()),
        linked in any::<bool>(),
    ) {
        let context = Arc::new(CorrelationContext::new(
            "run".try_into().unwrap(),
            "session".try_into().unwrap(),
            "producer".try_into().unwrap(),
            "kineto".try_into().unwrap(),
            "device-clock".try_into().unwrap(),
            ClockKind::Device,
            CollectionMode::Imported,
            Provenance::Observed,
        ));
        let iteration = EntityRef::new("producer", "ProfilerStep#3").unwrap();
        let scope = EntityRef::new("producer", "process/7").unwrap();
        let reason = flags[0].then_some(REASONS[usize::from(flags[1])]);
        let metadata = match shape {
            0 => ActivityMetadata::Gpu {
                event_count: 1,
                first_name: &texts[0],
                summed_duration_ns: numbers[0],
                device_index: flags[2].then_some(numbers[1] as u32),
                launch_api: flags[1].then_some(texts[1].as_str()),
                unresolved_reason: reason,
                whole_graph: flags[3],
            },
            1 => ActivityMetadata::Runtime { name: &texts[0], tid: ThreadId::Number(numbers[0]), unresolved_reason: reason },
            2 => ActivityMetadata::Runtime { name: &texts[0], tid: ThreadId::Text(&texts[1]), unresolved_reason: reason },
            _ => ActivityMetadata::Runtime { name: &texts[0], tid: ThreadId::Unknown, unresolved_reason: reason },
        };
        let activity = ImportedActivity {
            context: &context,
            producer_id: "producer",
            event_id: "kineto:trace:abc/17",
            activity_kind: if shape == 0 { "gpu_kernel" } else { "cuda_runtime" },
            activity_domain: if shape == 0 { ActivityDomain::Gpu } else { ActivityDomain::Runtime },
            iteration_ref: linked.then_some(&iteration),
            correlation_scope: Some(&scope),
            trace_attachment_id: "kineto:trace:abc",
            cuda_correlation_id: correlation,
            stream_id: stream,
            graph_id: None,
            span: Span::new(Some(start), Some(start + length)).unwrap(),
            metadata,
        };
        let event = activity.to_event().unwrap();
        prop_assert_eq!(activity.view(), event.view());
        prop_assert_eq!(activity.view().metadata.hash, metadata_hash(event.metadata().as_map()));
    }
}
