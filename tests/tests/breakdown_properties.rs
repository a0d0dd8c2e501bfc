//! Issue 17's properties of the overlap breakdown over generated runs
//! (`tally_conformance::runs::arb_labelled_run`: kinds, names, streams,
//! launch correlations), each figure checked against an independent
//! computation from the resolved facts with `tally_utils::interval`'s plain
//! unions.

use std::collections::BTreeMap;

mod support;

use proptest::prelude::*;
use support::with_delivery;
use tally_conformance::runs::{arb_labelled_run, deliver};
use tally_core::{ActivityDomain, InferenceRecord};
use tally_gpu_time::account_gpu_time;
use tally_gpu_time::breakdown::{Breakdown, BreakdownOptions, Categories, CategoryTime, Overlaps, breakdown};
use tally_gpu_time::category::{Category, CategoryRules};
use tally_resolve::{ResolvedEvidence, resolve_inference_events, resolve_streaming};
use tally_utils::interval::{merge_intervals, union_ns};

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(128)
}

fn options() -> BreakdownOptions {
    BreakdownOptions { rules: CategoryRules::new(), by_iteration: true }
}

type Key = (String, String, String);

/// Each device clock's intervals by category, read straight from the facts.
fn intervals_by_category(
    graph: &impl ResolvedEvidence,
) -> BTreeMap<Key, BTreeMap<Category, Vec<(u64, u64)>>> {
    let rules = CategoryRules::new();
    let mut out: BTreeMap<Key, BTreeMap<Category, Vec<(u64, u64)>>> = BTreeMap::new();
    for activity in graph.activity_facts() {
        if activity.domain != ActivityDomain::Gpu {
            continue;
        }
        let (Some((uuid, domain, kind)), Some(busy)) = (activity.device, activity.busy) else { continue };
        let category = rules.classify(activity.kind, activity.name).category;
        let key = (uuid.to_owned(), domain.to_owned(), kind.as_str().to_owned());
        let list = out.entry(key).or_default().entry(category).or_default();
        list.extend(busy.as_slice().iter().map(|interval| (interval.start_ns(), interval.end_ns())));
    }
    out
}

/// The length of `a ∩ b` for two merged lists.
fn intersection(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (start, end) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        if end > start {
            total += end - start;
        }
        if a[i].1 < b[j].1 { i += 1 } else { j += 1 }
    }
    total
}

fn check_overlaps(
    overlaps: &Overlaps,
    categories: &Categories,
    busy: u64,
    exposed: u64,
) -> Result<(), TestCaseError> {
    let (compute, communication, memory) =
        (categories.compute.busy_ns, categories.communication.busy_ns, categories.memory.busy_ns);
    prop_assert!(overlaps.communication_compute <= communication.min(compute));
    prop_assert!(overlaps.memory_compute <= memory.min(compute));
    prop_assert!(overlaps.communication_memory <= communication.min(memory));
    prop_assert_eq!(exposed + overlaps.communication_compute, communication);
    for category in Category::ALL {
        prop_assert!(categories.get(category).busy_ns <= busy);
    }
    Ok(())
}

fn check(records: &[InferenceRecord]) -> Result<Breakdown, TestCaseError> {
    let graph = resolve_inference_events(records).expect("generated runs resolve");
    let result = breakdown(&graph, &options());
    let accounting = account_gpu_time(&graph);
    let expected = intervals_by_category(&graph);
    prop_assert_eq!(result.devices.len(), accounting.device_totals.len());
    for (device, total) in result.devices.iter().zip(&accounting.device_totals) {
        // The accounting's figures, on the same clock.
        prop_assert_eq!(&device.device_uuid, total.clock.device_uuid);
        prop_assert_eq!(device.busy_ns, total.time.busy_ns);
        prop_assert_eq!(device.summed_ns, total.time.summed_activity_ns);
        prop_assert_eq!(device.count, total.time.activity_count);
        let key =
            (device.device_uuid.clone(), device.clock_domain.clone(), device.clock_kind.as_str().to_owned());
        let lists = &expected[&key];
        let merged: BTreeMap<Category, Vec<(u64, u64)>> = lists
            .iter()
            .map(|(category, list)| {
                let merged = merge_intervals(&mut list.clone()).into_iter().filter(|(s, e)| e > s).collect();
                (*category, merged)
            })
            .collect();
        let empty = Vec::new();
        let of = |category: Category| merged.get(&category).unwrap_or(&empty);
        for category in Category::ALL {
            let time: &CategoryTime = device.categories.get(category);
            prop_assert_eq!(time.busy_ns, union_ns(&mut of(category).clone()), "{:?}", category);
        }
        // The union of the categories' busy intervals is the device's.
        let mut all: Vec<(u64, u64)> = merged.values().flatten().copied().collect();
        prop_assert_eq!(union_ns(&mut all), device.busy_ns);
        let overlaps = &device.overlap_ns;
        prop_assert_eq!(
            overlaps.communication_compute,
            intersection(of(Category::Communication), of(Category::Compute))
        );
        prop_assert_eq!(overlaps.memory_compute, intersection(of(Category::Memory), of(Category::Compute)));
        check_overlaps(overlaps, &device.categories, device.busy_ns, device.exposed_communication_ns)?;
        let idle = &device.idle;
        prop_assert_eq!(idle.idle_ns, idle.envelope_ns - device.busy_ns);
        prop_assert_eq!(
            idle.launch_queued_ns + idle.sync_wait_ns + idle.unknown_ns + idle.host_bound_ns,
            idle.idle_ns
        );
        let kernel_summed: u128 = device.kernels.iter().map(|kernel| kernel.summed_ns).sum();
        let kernel_count: u64 = device.kernels.iter().map(|kernel| kernel.count).sum();
        prop_assert_eq!((kernel_summed, kernel_count), (device.summed_ns, device.count));
        for kernel in &device.kernels {
            prop_assert!(u128::from(kernel.busy_ns) <= kernel.summed_ns);
            prop_assert!(kernel.busy_ns <= device.busy_ns);
            prop_assert!(kernel.min_ns <= kernel.median_ns && kernel.median_ns <= kernel.max_ns);
        }
        prop_assert!(device.kernels.windows(2).all(|pair| pair[0].summed_ns >= pair[1].summed_ns));
        let latency = &device.launch_latency;
        prop_assert_eq!(latency.linked + latency.unlinked, device.count);
        for stream in &device.streams {
            prop_assert!(stream.busy_ns <= device.busy_ns);
            check_overlaps(
                &stream.overlap_ns,
                &stream.categories,
                stream.busy_ns,
                stream.exposed_communication_ns,
            )?;
        }
        for iteration in device.iterations.iter().flatten() {
            prop_assert!(iteration.busy_ns <= device.busy_ns);
            check_overlaps(
                &iteration.overlap_ns,
                &iteration.categories,
                iteration.busy_ns,
                iteration.exposed_communication_ns,
            )?;
        }
    }
    Ok(result)
}

proptest! {
    #![proptest_config(config())]

    /// Intersections are at most both operands, the categories' union is
    /// the device's busy time, exposed plus overlapped communication is
    /// communication's busy time, and each figure equals the plain interval
    /// computation.
    #[test]
    fn figures_agree_with_plain_interval_arithmetic((records, _) in with_delivery(arb_labelled_run())) {
        check(&records)?;
    }

    /// The breakdown is the same for any order and repetition of the
    /// records, through either resolver.
    #[test]
    fn order_and_repetition_do_not_matter((records, (order, repeats)) in with_delivery(arb_labelled_run())) {
        let reference = check(&records)?;
        let delivered = deliver(&records, &order, &repeats);
        prop_assert_eq!(&check(&delivered)?, &reference);
        let streamed = resolve_streaming(&delivered).expect("generated runs resolve");
        prop_assert_eq!(&breakdown(&streamed, &options()), &reference);
    }
}
