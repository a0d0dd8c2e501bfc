//! Rank reports, bounded rank work, CPU stand-in evidence and the
//! accounting of several ranks' artifacts, without MPI.

use std::time::{Duration, Instant};

use tally_artifact::{Form, encode_artifact, read_artifact_from};
use tally_core::{ActivityDomain, EventBody};
use tally_distributed::evidence::{STAND_IN_EVIDENCE, STAND_IN_SOURCE};
use tally_distributed::ranks::{RankFailure, RankReport, combine_reports, run_with_deadline};
use tally_distributed::{CpuStandInRecorder, account_ranks, stand_in_clock_name};
use tally_profile::profile::ResourceProfile;
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};

fn profile(calls: u64) -> ResourceProfile {
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
    for _ in 0..calls {
        profiler
            .measure_call(|| std::hint::black_box((0..10_000u64).sum::<u64>()), CallSpec::new(4, "batch"));
    }
    profiler.finish(false)
}

#[test]
fn reports_round_trip_and_combine_in_rank_order() {
    let payloads = vec![
        RankReport::reported(0, "shard-0", profile(2)).to_bytes().expect("JSON"),
        RankReport::failed(1, "shard-1", "out of memory").to_bytes().expect("JSON"),
        b"not json".to_vec(),
        RankReport::reported(7, "shard-7", profile(1)).to_bytes().expect("JSON"),
        RankReport::reported(4, "shard-4", profile(3)).to_bytes().expect("JSON"),
    ];
    let combined = combine_reports(&payloads, |rank| format!("shard-{rank}"));
    assert_eq!(combined.all_shard_keys, ["shard-0", "shard-1", "shard-2", "shard-3", "shard-4"]);
    let reported: Vec<&str> = combined.profiles.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(reported, ["shard-0", "shard-4"]);
    assert_eq!(combined.profiles[1].1.inference.materialized_samples, 12);
    let statuses: Vec<(&str, Option<&str>)> =
        combined.statuses.iter().map(|status| (status.status, status.reason.as_deref())).collect();
    assert_eq!(statuses[0], ("reported", None));
    assert_eq!(statuses[1], ("failed", Some("out of memory")));
    assert!(statuses[2].1.is_some_and(|reason| reason.contains("unreadable report")));
    assert_eq!(statuses[3], ("failed", Some("rank 3 sent a report for rank 7")));
    assert_eq!(statuses[4], ("reported", None));
}

#[test]
fn a_report_with_an_invalid_profile_is_unreadable() {
    let text = br#"{"rank": 0, "shard_key": "s", "profile": {"status": "fast"}}"#;
    assert!(RankReport::from_bytes(text).is_err());
    let combined = combine_reports(&[text.to_vec()], |rank| format!("s{rank}"));
    assert!(combined.profiles.is_empty());
    assert_eq!(combined.statuses[0].status, "failed");
}

#[test]
fn bounded_work_reports_errors_panics_and_timeouts() {
    assert_eq!(run_with_deadline(Duration::from_secs(10), || Ok::<_, String>(3)), Ok(3));
    assert_eq!(
        run_with_deadline(Duration::from_secs(10), || Err::<u8, _>("disk full")),
        Err(RankFailure::Failed("disk full".into()))
    );
    let panicked = run_with_deadline(Duration::from_secs(10), || -> Result<u8, String> { panic!("boom") });
    assert_eq!(panicked, Err(RankFailure::Panicked("boom".into())));
    let started = Instant::now();
    let stuck = run_with_deadline(Duration::from_millis(100), || -> Result<u8, String> {
        std::thread::sleep(Duration::from_secs(600));
        Ok(0)
    });
    assert_eq!(stuck, Err(RankFailure::TimedOut(Duration::from_millis(100))));
    assert!(started.elapsed() < Duration::from_secs(5), "the caller is not held by the stuck work");
}

#[test]
fn stand_in_evidence_says_what_it_is() {
    let mut recorder = CpuStandInRecorder::new("run", 3, 4).expect("valid");
    recorder.window("w", || std::thread::sleep(Duration::from_millis(2))).expect("event");
    let context = recorder.context();
    assert_eq!(context.clock_domain.as_str(), "rank-3-cpu");
    assert_eq!(context.device_uuid.as_deref(), Some("rank-3-cpu"));
    assert_eq!(context.backend.as_deref(), Some("cpu"));
    assert_eq!(context.source.as_str(), STAND_IN_SOURCE);
    assert_eq!(context.rank, Some(3));
    let activity = recorder.events().iter().find_map(|event| match event.body() {
        EventBody::ActivityRef(activity) => Some((event, activity)),
        _ => None,
    });
    let (event, activity) = activity.expect("an activity");
    assert_eq!(activity.activity_domain, ActivityDomain::Gpu);
    assert_eq!(event.metadata().get("evidence").and_then(|v| v.as_str()), Some(STAND_IN_EVIDENCE));
    assert!(
        event.metadata().get("note").and_then(|v| v.as_str()).is_some_and(|note| note.contains("No GPU"))
    );
    let span = activity.span;
    let length = span.end_ns().zip(span.start_ns()).map(|(end, start)| end - start).expect("closed span");
    assert!(length >= 2_000_000, "the window covers the work ({length} ns)");
}

#[test]
fn ranks_are_accounted_together_with_one_row_per_rank_clock() {
    let mut artifacts = Vec::new();
    let windows = [3usize, 1, 2];
    for (rank, &count) in windows.iter().enumerate() {
        let mut recorder = CpuStandInRecorder::new("job", rank as u64, 3).expect("valid");
        for index in 0..count {
            recorder
                .window(&format!("b{index}"), || std::hint::black_box((0..1000u64).product::<u64>()))
                .expect("ok");
        }
        artifacts.push(encode_artifact(&recorder.into_records(), Form::Compact).expect("encodes"));
    }
    let mut records = Vec::new();
    for (rank, bytes) in artifacts.iter().enumerate() {
        records.extend(read_artifact_from(&bytes[..], &format!("rank {rank}")).expect("decodes"));
    }
    let summary = account_ranks(&records).expect("resolves");
    assert_eq!(summary.run_id.as_deref(), Some("job"));
    let rows: Vec<(String, u64)> =
        summary.device_totals.iter().map(|row| (row.clock_domain.clone(), row.activity_count)).collect();
    assert_eq!(rows, [(stand_in_clock_name(0), 3), (stand_in_clock_name(1), 1), (stand_in_clock_name(2), 2)]);
    assert_eq!(summary.iterations.len(), 6);
    for iteration in &summary.iterations {
        // Each window's iteration has its one activity, on its rank's clock.
        assert_eq!(iteration.gpu.len(), 1);
        let rank_clock = stand_in_clock_name(
            iteration.iteration_ref.producer_id().trim_start_matches("rank-").parse().expect("rank-N"),
        );
        assert_eq!(iteration.gpu[0].clock_domain, rank_clock);
        assert_eq!(iteration.elapsed_ns, Some(iteration.gpu[0].busy_ns));
    }
    assert!(summary.unattributed_activity_refs.is_empty());
    // A rank's clock is separate even when its windows overlap another's in time.
    let busy: u64 = summary.device_totals.iter().map(|row| row.busy_ns).sum();
    let summed: u128 = summary.device_totals.iter().map(|row| row.summed_activity_ns).sum();
    assert_eq!(u128::from(busy), summed, "windows of one rank never overlap");
}
