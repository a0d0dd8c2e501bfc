//! The overlap breakdown's rule: the least uncertain direct alignment that
//! covers a timestamp, in either direction.

use tally_clock::{DirectAlignment, NearestAligner};

fn alignment<'a>(
    from: &'a str,
    to: &'a str,
    offset_ns: i64,
    uncertainty_ns: u64,
    window: (u64, u64),
) -> DirectAlignment<'a> {
    DirectAlignment::new((from, to), offset_ns, uncertainty_ns, (Some(window.0), Some(window.1)))
}

#[test]
fn identity_forward_backward_and_least_uncertainty() {
    let aligner = NearestAligner::new([
        alignment("host", "gpu", 100, 9, (0, 1000)),
        alignment("host", "gpu", 50, 3, (500, 1000)),
        // gpu = host - 10 read backwards; its window is on the gpu clock.
        alignment("gpu", "host", 10, 5, (0, 300)),
    ]);
    assert_eq!(aligner.translate(7, "host", "host"), Some((7, 0)));
    // Only the wide forward one covers 100 on the host clock, and the
    // backward one covers 90 on the gpu clock: least uncertainty wins.
    assert_eq!(aligner.translate(100, "host", "gpu"), Some((90, 5)));
    assert_eq!(aligner.translate(400, "host", "gpu"), Some((500, 9)));
    assert_eq!(aligner.translate(600, "host", "gpu"), Some((650, 3)));
    assert_eq!(aligner.translate(1000, "host", "gpu"), None);
    assert_eq!(aligner.translate(5, "gpu", "host"), Some((15, 5)));
    // A negative result is no timestamp.
    assert_eq!(NearestAligner::new([alignment("a", "b", -10, 0, (0, 100))]).translate(5, "a", "b"), None);
}
