//! `read_batches` decodes a window ahead of its sink: the sink must still see
//! every batch in file order, each window before the error of a later one,
//! and nothing after its own error.

use tally_artifact::{ErrorKind, ReadOptions, read_batches};

/// `count` legacy records, one per line, each naming its line in its type.
fn lines(count: usize) -> String {
    (1..=count)
        .map(|line| format!("{{\"schema_version\": 1, \"event_type\": \"infer.l{line}\"}}\n"))
        .collect()
}

/// Windows of a few lines each, split into one-line chunks.
fn tiny() -> ReadOptions {
    ReadOptions { window_bytes: 150, chunk_bytes: 1, fast_path: true, ..ReadOptions::default() }
}

#[test]
fn batches_arrive_in_file_order_across_windows() {
    let text = lines(200);
    let mut seen = Vec::new();
    let stats = read_batches(text.as_bytes(), "t", &tiny(), |batch| {
        seen.extend(batch.lines);
        Ok(())
    })
    .expect("valid artifact");
    assert_eq!(seen, (1..=200).collect::<Vec<u64>>());
    assert_eq!((stats.lines, stats.records, stats.bytes), (200, 200, text.len() as u64));
}

#[test]
fn a_late_bad_line_is_reported_after_every_earlier_window() {
    let mut text = lines(120);
    text.push_str("not json\n");
    text.push_str(&lines(50));
    let mut seen = Vec::new();
    let error = read_batches(text.as_bytes(), "t", &tiny(), |batch| {
        seen.extend(batch.lines);
        Ok(())
    })
    .expect_err("line 121 is not JSON");
    assert_eq!(error.line(), Some(121));
    // Whole windows before the bad one were handed on, in order, and nothing
    // from the bad line on.
    assert!(seen.len() >= 100, "only {} lines delivered before the error", seen.len());
    assert_eq!(seen, (1..=seen.len() as u64).collect::<Vec<u64>>());
}

#[test]
fn the_sink_error_stops_the_read() {
    let text = lines(300);
    let mut calls = 0;
    let mut last = 0;
    let error = read_batches(text.as_bytes(), "t", &tiny(), |batch| {
        calls += 1;
        last = batch.lines.last().copied().unwrap_or(last);
        if last >= 40 {
            return Err(tally_artifact::ArtifactError::whole("t", ErrorKind::Io, "stop"));
        }
        Ok(())
    })
    .expect_err("the sink stopped");
    assert_eq!((error.kind(), error.to_string().ends_with("stop")), (ErrorKind::Io, true));
    // One-line chunks make one batch per line: the sink ran up to its error
    // and was not called again.
    assert_eq!((calls, last), (40, 40));
}
