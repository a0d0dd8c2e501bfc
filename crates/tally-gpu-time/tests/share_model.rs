//! The share-model document: its shape rules, and Python's reading of
//! numbers (`-0` is the integer 0; `0.0` is no integer).

use tally_gpu_time::{ShareError, ShareModel};

fn model(duration: &str, unattributed: &str) -> String {
    format!(
        r#"{{"iteration_ref": {{"producer_id": "e", "id": "i"}},
            "device_clock": {{"device_uuid": "GPU-0", "clock_domain": "cuda:0", "clock_kind": "device"}},
            "shares": [{{"request_ref": {{"producer_id": "api", "id": "r"}}, "duration_ns": {duration}, "model": "m"}}],
            "unattributed_ns": {unattributed}}}"#
    )
}

#[test]
fn negative_zero_is_the_integer_zero() {
    let parsed = ShareModel::from_json_str(&model("-0", "-0")).expect("a valid model");
    let shares = parsed.shares.expect("valid shares");
    assert_eq!(shares[0].duration_ns, 0);
    assert_eq!(parsed.unattributed_ns, 0);
}

#[test]
fn a_float_duration_breaks_stormlogs_rule_not_the_documents_shape() {
    let parsed = ShareModel::from_json_str(&model("0.0", "0")).expect("the shape is fine");
    assert_eq!(parsed.shares, Err(ShareError::NegativeDuration));
    let parsed = ShareModel::from_json_str(&model("1", "2.5")).expect("the shape is fine");
    assert_eq!(parsed.unattributed_ns, -1, "not an integer: fails the remainder rule later");
}

#[test]
fn malformed_documents_say_what_is_wrong() {
    for (text, says) in [
        ("[1]", "JSON object"),
        ("{", "not JSON"),
        (r#"{"iteration_ref": {"producer_id": "e", "id": "i"}}"#, "missing key \"device_clock\""),
    ] {
        let error = ShareModel::from_json_str(text).expect_err(text);
        assert!(error.to_string().contains(says), "{text}: {error}");
    }
    let long_key = format!(r#"{{"{}": 1}}"#, "k".repeat(100_000));
    let error = ShareModel::from_json_str(&long_key).expect_err("an unknown key");
    assert!(error.to_string().len() < 400, "a long key is quoted short");
}
