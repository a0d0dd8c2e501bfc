//! The statistics of `tally_profile::profile::stats` against numpy and Python
//! themselves, bit for bit, on arrays of every length class numpy's pairwise
//! summation distinguishes. Runs when `TALLY_PYTHON` names an interpreter
//! with numpy (the reference venv); prints "skipped" otherwise.

use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{Value, json};
use tally_profile::profile::stats::{
    int_true_div, numpy_max, numpy_mean, numpy_median, numpy_percentile, numpy_sum, python_sum,
};

const SCRIPT: &str = r#"
import json, sys
import numpy as np
cases = json.load(sys.stdin)
out = []
for values in cases["arrays"]:
    a = np.asarray(values, dtype=float)
    out.append([float(a.mean()), float(np.median(a)), float(np.percentile(a, 95)), float(a.max()),
                float(a.sum()), float(sum(values))])
divisions = [a / b for a, b in cases["divisions"]]
json.dump({"arrays": out, "divisions": divisions}, sys.stdout)
"#;

/// A positive float spread over many magnitudes, like call durations.
fn duration(rng: &mut TestRng) -> f64 {
    let nanos = rng.next_u64() % 50_000_000_000 + 1;
    let scale = [1.0, 1e-3, 7.0, 1e3][(rng.next_u64() % 4) as usize];
    nanos as f64 / 1e9 * scale
}

#[test]
fn statistics_equal_numpy_and_python_bit_for_bit() {
    let python = match tally_testkit::reference_python(&["numpy"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(format!("no numpy to compare with: {why}")),
    };
    let lengths = [
        1usize, 2, 3, 7, 8, 9, 15, 16, 17, 100, 127, 128, 129, 130, 136, 255, 256, 257, 1000, 1023, 1024,
        1025, 4095, 8191, 8192, 8193, 9000, 16384, 16385, 20001, 65536, 100_001,
    ];
    // proptest's deterministic generator: the same test data every run.
    let mut rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let arrays: Vec<Vec<f64>> =
        lengths.iter().map(|&n| (0..n).map(|_| duration(&mut rng)).collect()).collect();
    let mut divisions: Vec<(u64, u64)> =
        vec![(1, 3), ((1 << 53) + 1, 3), (u64::MAX, 7), (u64::MAX - 1, u64::MAX)];
    for _ in 0..200 {
        let a = rng.next_u64() >> (rng.next_u64() % 64);
        let b = (rng.next_u64() >> (rng.next_u64() % 64)).max(1);
        divisions.push((a, b));
    }
    let input = json!({"arrays": arrays, "divisions": divisions});
    let output = tally_testkit::run_python(&python, SCRIPT, input.to_string().as_bytes());
    assert!(output.status.success(), "python failed: {}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).expect("python printed JSON");
    let mut failures = Vec::new();
    for ((values, expected), n) in
        arrays.iter().zip(result["arrays"].as_array().expect("arrays")).zip(lengths)
    {
        let ours = [
            numpy_mean(values),
            numpy_median(values),
            numpy_percentile(values, 95.0),
            numpy_max(values),
            Some(numpy_sum(values)),
            Some(python_sum(values)),
        ];
        let names = ["mean", "median", "p95", "max", "numpy sum", "python sum"];
        for ((name, ours), theirs) in names.iter().zip(ours).zip(expected.as_array().expect("six numbers")) {
            let theirs = theirs.as_f64().expect("a float");
            if ours.map(f64::to_bits) != Some(theirs.to_bits()) {
                failures.push(format!("n={n} {name}: tally {ours:?} != python {theirs:?}"));
            }
        }
    }
    for ((a, b), theirs) in divisions.iter().zip(result["divisions"].as_array().expect("divisions")) {
        let ours = int_true_div(*a, *b).expect("non-zero divisor");
        let theirs = theirs.as_f64().expect("a float");
        if ours.to_bits() != theirs.to_bits() {
            failures.push(format!("{a} / {b}: tally {ours:?} != python {theirs:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
