//! Issue 3's properties of resolution and accounting over whole generated
//! runs (`tally_conformance::runs`).

mod support;

use proptest::prelude::*;
use serde_json::{Value, json};
use support::with_delivery;
use tally_conformance::runs::{arb_run, deliver};
use tally_core::{EntityRef, InferenceRecord};
use tally_gpu_time::{
    GpuTime, RequestShareEstimate, RunAccounting, ShareError, account_gpu_time, account_gpu_time_on,
    validate_request_shares,
};
use tally_resolve::{CorrelationGraph, ResolvedEvidence, resolve_inference_events};

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(96)
}

fn entity(reference: &EntityRef) -> Value {
    json!([reference.producer_id(), reference.id()])
}

fn time(time: &GpuTime) -> Value {
    json!([time.summed_activity_ns.to_string(), time.busy_ns, time.activity_count])
}

/// Everything resolution and accounting decide, in a comparable form:
/// tables by key with the event kept for each, and every figure.
fn summary(graph: &CorrelationGraph<'_>, accounting: &RunAccounting<'_>) -> Value {
    let mut requests: Vec<Value> = graph
        .requests()
        .iter()
        .map(|r| {
            json!([
                entity(&r.body.request_ref),
                r.body.attempt_ref.as_ref().map(entity),
                r.event.event_id().as_str()
            ])
        })
        .collect();
    requests.sort_by_key(|value| value.to_string());
    let mut iterations: Vec<Value> = graph
        .iterations()
        .iter()
        .map(|i| json!([entity(&i.body.iteration_ref), i.event.event_id().as_str()]))
        .collect();
    iterations.sort_by_key(|value| value.to_string());
    let mut stages: Vec<Value> = graph
        .stages()
        .iter()
        .map(|s| json!([entity(&s.body.stage_ref), s.event.event_id().as_str()]))
        .collect();
    stages.sort_by_key(|value| value.to_string());
    let mut activities: Vec<Value> = graph
        .activities()
        .iter()
        .map(|a| json!([entity(&a.body.activity_ref), a.event.event_id().as_str()]))
        .collect();
    activities.sort_by_key(|value| value.to_string());
    let memberships: Vec<&str> = graph.memberships().iter().map(|m| m.event.event_id().as_str()).collect();
    let alignments: Vec<&str> = graph.alignments().iter().map(|a| a.event.event_id().as_str()).collect();
    let unresolved: Vec<Value> = graph
        .unresolved()
        .iter()
        .map(|u| json!([u.event_id, u.kind.as_str(), entity(u.reference)]))
        .collect();
    json!({
        "run_id": graph.run_id(), "requests": requests, "iterations": iterations, "stages": stages,
        "activities": activities, "memberships": memberships, "alignments": alignments,
        "unresolved": unresolved, "accounting": summary_of_accounting(accounting),
    })
}

fn summarize(records: &[InferenceRecord]) -> Value {
    let graph = resolve_inference_events(records).expect("generated runs resolve");
    let accounting = account_gpu_time(&graph);
    summary(&graph, &accounting)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn resolution_and_accounting_ignore_order_and_repetition((records, (order, repeats)) in with_delivery(arb_run())) {
        let expected = summarize(&records);
        let delivered = deliver(&records, &order, &repeats);
        prop_assert_eq!(summarize(&delivered), expected);
    }

    /// Activities delivered in order of start, as traces and artifacts
    /// nearly always deliver them (each device's intervals then swept as
    /// they come), are accounted as the same run in any order (each
    /// device's intervals gathered and sorted first).
    #[test]
    fn accounting_in_order_of_start_is_accounting_in_any_order((records, (order, repeats)) in with_delivery(arb_run())) {
        let mut in_order = records.clone();
        in_order.sort_by_key(|record| match record.as_event().map(|event| event.body()) {
            Some(tally_core::EventBody::ActivityRef(activity)) => activity.span.start_ns(),
            _ => None,
        });
        let delivered = deliver(&records, &order, &repeats);
        prop_assert_eq!(summarize(&in_order), summarize(&delivered));
    }

    /// Accounting on several threads (each its own devices, dealt out in
    /// the order they are first met) is accounting on one, for runs in
    /// their own order and in order of start.
    #[test]
    fn accounting_on_threads_is_accounting_on_one((records, (order, repeats)) in with_delivery(arb_run()), threads in 2usize..5) {
        let delivered = deliver(&records, &order, &repeats);
        let mut in_order = records.clone();
        in_order.sort_by_key(|record| match record.as_event().map(|event| event.body()) {
            Some(tally_core::EventBody::ActivityRef(activity)) => activity.span.start_ns(),
            _ => None,
        });
        for run in [delivered, in_order] {
            let graph = resolve_inference_events(&run).expect("generated runs resolve");
            let one = summary_of_accounting(&account_gpu_time_on(&graph, 1));
            prop_assert_eq!(summary_of_accounting(&account_gpu_time_on(&graph, threads)), one);
        }
    }

    #[test]
    fn every_row_keeps_busy_within_summed_and_its_device_total(spec in arb_run()) {
        let records = spec.records();
        let graph = resolve_inference_events(&records).expect("generated runs resolve");
        let accounting = account_gpu_time(&graph);
        for total in &accounting.device_totals {
            prop_assert!(u128::from(total.time.busy_ns) <= total.time.summed_activity_ns);
            let envelope = total.detail.envelope.map_or(0, |(first, last)| last - first);
            prop_assert!(total.time.busy_ns <= envelope);
            prop_assert_eq!(total.detail.idle_gaps.total_ns, envelope - total.time.busy_ns);
            for stream in &total.detail.streams {
                prop_assert!(stream.time.busy_ns <= total.time.busy_ns);
            }
            let activities: u64 = accounting
                .iterations
                .iter()
                .filter_map(|timing| timing.on(&total.clock))
                .map(|time| time.activity_count)
                .sum();
            prop_assert!(activities <= total.time.activity_count);
        }
        for timing in &accounting.iterations {
            for (clock, time) in &timing.gpu {
                prop_assert!(u128::from(time.busy_ns) <= time.summed_activity_ns);
                let total = accounting.device_total(clock).expect("an iteration's clock has a total");
                prop_assert!(time.busy_ns <= total.time.busy_ns);
                prop_assert!(time.summed_activity_ns <= total.time.summed_activity_ns);
            }
        }
    }

    /// A model built to sum to the budget passes; moving any one share or
    /// the remainder by one nanosecond, either way, fails.
    #[test]
    fn shares_summing_to_the_budget_pass_and_one_nanosecond_off_fails(
        spec in arb_run(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        nudge in any::<prop::sample::Index>(),
        up in any::<bool>(),
    ) {
        let records = spec.records();
        let graph = resolve_inference_events(&records).expect("generated runs resolve");
        let accounting = account_gpu_time(&graph);
        // An iteration with a budget and member requests.
        let candidate = accounting.iterations.iter().find_map(|timing| {
            let (clock, time) = timing.gpu.first()?;
            let mut members: Vec<&EntityRef> = graph
                .memberships()
                .iter()
                .filter(|m| m.body.iteration_ref == *timing.iteration_ref)
                .map(|m| &m.body.request_ref)
                .collect();
            members.sort();
            members.dedup();
            Some((timing.iteration_ref, *clock, time.busy_ns, members))
        });
        // A run without a measured iteration has no budget to split.
        prop_assume!(candidate.is_some(), "no iteration with GPU time");
        let Some((iteration, clock, budget, members)) = candidate else { unreachable!("assumed just above") };
        // Split the budget among the members at random cut points; the
        // last part is the unattributed remainder.
        let mut points: Vec<u64> = cuts.iter().take(members.len()).map(|cut| cut.index(budget as usize + 1) as u64).collect();
        points.resize(members.len(), budget);
        points.sort_unstable();
        let mut previous = 0;
        let mut shares = Vec::new();
        for (request, point) in members.iter().zip(&points) {
            let share = RequestShareEstimate::new((*request).clone(), None, i128::from(point - previous), "model");
            shares.push(share.expect("non-negative, named"));
            previous = *point;
        }
        let remainder = i128::from(budget - previous);
        let accepted = validate_request_shares(&graph, &accounting, iteration, &clock, &shares, remainder);
        let accepted = accepted.expect("a model summing to the budget is valid");
        prop_assert_eq!(accepted.budget_ns, budget);

        let delta: i128 = if up { 1 } else { -1 };
        let slot = nudge.index(shares.len() + 1);
        let mut changed = shares.clone();
        let mut changed_remainder = remainder;
        if slot == shares.len() {
            changed_remainder += delta;
        } else {
            let duration = i128::from(changed[slot].duration_ns) + delta;
            match RequestShareEstimate::new(changed[slot].request_ref.clone(), None, duration, "model") {
                Ok(share) => changed[slot] = share,
                Err(error) => {
                    prop_assert_eq!(error, ShareError::NegativeDuration);
                    return Ok(());
                }
            }
        }
        let rejected = validate_request_shares(&graph, &accounting, iteration, &clock, &changed, changed_remainder);
        prop_assert!(matches!(
            rejected,
            Err(ShareError::SumMismatch { .. } | ShareError::NegativeRemainder)
        ), "{:?}", rejected);
    }
}

/// What any resolved run tells accounting and reports, with its accounting.
fn evidence_summary(graph: &impl ResolvedEvidence) -> Value {
    let accounting = account_gpu_time(graph);
    let unresolved: Vec<Value> = graph
        .unresolved_references()
        .map(|u| json!([u.event_id, u.kind.as_str(), entity(u.reference)]))
        .collect();
    let memberships: Vec<Value> = graph
        .membership_facts()
        .map(|m| json!([entity(m.request_ref), m.attempt_ref.map(entity), entity(m.iteration_ref)]))
        .collect();
    let counts = graph.counts();
    json!({
        "run_id": graph.run_id(),
        "counts": [counts.requests, counts.iterations, counts.stages, counts.memberships, counts.activities,
                   counts.alignments],
        "unresolved": unresolved,
        "memberships": memberships,
        "accounting": summary_of_accounting(&accounting),
    })
}

fn summary_of_accounting(accounting: &RunAccounting<'_>) -> Value {
    let devices: Vec<Value> = accounting
        .device_totals
        .iter()
        .map(|total| {
            let detail = &total.detail;
            let streams: Vec<Value> =
                detail.streams.iter().map(|s| json!([s.stream_id, time(&s.time)])).collect();
            json!([
                total.clock.device_uuid,
                total.clock.clock_domain,
                total.clock.clock_kind.as_str(),
                time(&total.time),
                detail.peak_concurrency,
                detail.envelope,
                [detail.idle_gaps.count, detail.idle_gaps.total_ns, detail.idle_gaps.longest_ns],
                streams
            ])
        })
        .collect();
    let timings: Vec<Value> = accounting
        .iterations
        .iter()
        .map(|timing| {
            let rows: Vec<Value> = timing
                .gpu
                .iter()
                .map(|(clock, t)| json!([clock.device_uuid, clock.clock_domain, time(t)]))
                .collect();
            json!([entity(timing.iteration_ref), timing.elapsed_ns, rows])
        })
        .collect();
    let refs = |list: &[&EntityRef]| list.iter().map(|r| entity(r)).collect::<Vec<Value>>();
    json!({"devices": devices, "timings": timings,
           "unattributed": refs(&accounting.unattributed_activity_refs),
           "unmeasured": refs(&accounting.unmeasured_gpu_activity_refs)})
}

/// Changes one event of a run so that it conflicts with another: the same
/// event ID with other content, or the same entity with other content.
fn conflicting(records: &[InferenceRecord], pick: usize, same_id: bool) -> Option<InferenceRecord> {
    let events: Vec<&tally_core::CorrelationEvent> =
        records.iter().filter_map(InferenceRecord::as_event).collect();
    let event = events.get(pick % events.len().max(1))?;
    let mut metadata = event.metadata().as_map().clone();
    metadata.insert("conflict".into(), json!(true));
    let id = if same_id {
        event.event_id().clone()
    } else {
        tally_core::NonEmptyString::new("zz-conflict").ok()?
    };
    tally_core::CorrelationEvent::new(
        std::sync::Arc::clone(event.context_arc()),
        id,
        tally_core::Metadata::new(metadata),
        event.body().clone(),
    )
    .ok()
    .map(InferenceRecord::Event)
}

proptest! {
    #![proptest_config(config())]

    /// The streaming resolver (no events kept) and the borrowing one agree
    /// on everything they report, and on the first rule a stream breaks.
    #[test]
    fn streaming_and_borrowing_resolution_agree(
        (records, (order, repeats)) in with_delivery(arb_run()),
        conflict in proptest::option::of((any::<usize>(), any::<bool>(), any::<prop::sample::Index>())),
    ) {
        let mut delivered = deliver(&records, &order, &repeats);
        if let Some((pick, same_id, at)) = conflict
            && let Some(bad) = conflicting(&records, pick, same_id)
        {
            delivered.insert(at.index(delivered.len() + 1), bad);
        }
        let borrowed = resolve_inference_events(&delivered);
        let streamed = tally_resolve::resolve_streaming(&delivered);
        match (borrowed, streamed) {
            (Ok(graph), Ok(run)) => prop_assert_eq!(evidence_summary(&graph), evidence_summary(&run)),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "borrowed {:?} but streamed {:?}", a.err(), b.err()),
        }
    }
}
