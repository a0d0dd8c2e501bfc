//! The timeline a page draws agrees with the breakdown beside it, over
//! generated runs (`tally_conformance::runs::arb_labelled_run`): the
//! breakdown read with timelines is the breakdown; the columns tile each
//! device clock's envelope; summed over the columns, each category's busy
//! time, the union and each idle cause are the breakdown's figures, and
//! within a column busy and idle time fill it exactly. The page rendered
//! from them embeds the breakdown.

use proptest::prelude::*;
use tally_conformance::runs::arb_labelled_run;
use tally_gpu_time::breakdown::{BreakdownOptions, breakdown, breakdown_with_timelines};
use tally_gpu_time::category::{Category, CategoryRules};
use tally_report::{ReportOptions, breakdown_report};
use tally_resolve::resolve_inference_events;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn columns_add_up_to_the_breakdown(spec in arb_labelled_run(), columns in 1u32..40) {
        let records = spec.records();
        let graph = resolve_inference_events(&records).expect("generated runs resolve");
        let options = BreakdownOptions { rules: CategoryRules::new(), by_iteration: true };
        let (result, timelines) = breakdown_with_timelines(&graph, &options, columns);
        prop_assert_eq!(&result, &breakdown(&graph, &options));
        prop_assert_eq!(timelines.len(), result.devices.len());
        for (device, timeline) in result.devices.iter().zip(&timelines) {
            let columns_of = &timeline.columns;
            match (device.envelope_start_ns, device.envelope_end_ns) {
                (Some(start), Some(end)) => {
                    prop_assert!(!columns_of.is_empty() && columns_of.len() <= columns as usize);
                    prop_assert_eq!(columns_of[0].start_ns, start);
                    prop_assert_eq!(columns_of[columns_of.len() - 1].end_ns, end);
                    prop_assert!(columns_of.windows(2).all(|pair| pair[0].end_ns == pair[1].start_ns));
                }
                _ => prop_assert!(columns_of.is_empty()),
            }
            for column in columns_of {
                let idle: u64 = column.idle_ns.iter().sum();
                prop_assert_eq!(column.busy_ns + idle, column.end_ns - column.start_ns);
                prop_assert!(column.categories_ns.iter().all(|&time| time <= column.busy_ns));
            }
            let total = |read: &dyn Fn(&tally_gpu_time::breakdown::TimelineColumn) -> u64| -> u64 {
                columns_of.iter().map(read).sum()
            };
            prop_assert_eq!(total(&|column| column.busy_ns), device.busy_ns);
            for (index, category) in Category::ALL.into_iter().enumerate() {
                prop_assert_eq!(
                    total(&|column| column.categories_ns[index]),
                    device.categories.get(category).busy_ns,
                    "{:?}", category
                );
            }
            let idle = &device.idle;
            let causes = [idle.launch_queued_ns, idle.sync_wait_ns, idle.unknown_ns, idle.host_bound_ns];
            for (index, expected) in causes.into_iter().enumerate() {
                prop_assert_eq!(total(&|column| column.idle_ns[index]), expected, "idle cause {}", index);
            }
            let binned: u64 = timeline.latency_bins.iter().map(|bin| bin.count).sum();
            prop_assert_eq!(binned, device.launch_latency.linked);
        }
        let page = breakdown_report(&result, &timelines, &ReportOptions::default()).expect("renders");
        let html = page.page();
        let open = "<script type=\"application/json\" id=\"tally-data\">";
        let start = html.find(open).expect("data element") + open.len();
        let end = start + html[start..].find("</script>").expect("closed");
        let embedded: serde_json::Value = serde_json::from_str(&html[start..end]).expect("JSON");
        prop_assert_eq!(embedded, serde_json::to_value(&result).expect("serializes"));
    }
}
