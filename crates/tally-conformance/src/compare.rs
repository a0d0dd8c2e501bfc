//! The comparison of an implementation's reply with tally's, field by field.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::answer::Reply;

/// One field whose values differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Where: `device_totals[0].busy_ns`; empty for the whole reply.
    pub path: String,
    /// tally's value there (`None`: absent).
    pub tally: Option<Value>,
    /// The implementation's value there (`None`: absent).
    pub implementation: Option<Value>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |value: &Option<Value>| match value {
            None => "(absent)".to_owned(),
            Some(value) => tally_core::shown(&value.to_string()).to_string(),
        };
        let path = if self.path.is_empty() { "(reply)" } else { &self.path };
        write!(f, "{path}: tally {}, implementation {}", show(&self.tally), show(&self.implementation))
    }
}

/// How an implementation's reply compares with tally's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The same answer, value for value (integers stay integers).
    Agreed,
    /// Both refused the input (the messages are not compared).
    RejectedByBoth,
    /// Different answers, or one answered and the other refused.
    Disagreed(Vec<Difference>),
    /// The implementation could not answer.
    ImplementationError(String),
    /// The implementation ran past the per-case timeout.
    TimedOut,
}

/// Judges `implementation`'s reply against tally's.
pub fn judge(tally: &Reply, implementation: &Reply) -> Verdict {
    match (tally, implementation) {
        (_, Reply::TimedOut) => Verdict::TimedOut,
        (_, Reply::Failed(reason)) => Verdict::ImplementationError(reason.clone()),
        (Reply::Failed(reason), _) => {
            Verdict::ImplementationError(format!("tally could not answer: {reason}"))
        }
        (Reply::TimedOut, _) => Verdict::ImplementationError("tally timed out".into()),
        (Reply::Rejected(_), Reply::Rejected(_)) => Verdict::RejectedByBoth,
        (Reply::Answer(ours), Reply::Answer(theirs)) => {
            let found = differences(ours, theirs);
            if found.is_empty() { Verdict::Agreed } else { Verdict::Disagreed(found) }
        }
        (ours, theirs) => Verdict::Disagreed(vec![Difference {
            path: String::new(),
            tally: Some(reply_value(ours)),
            implementation: Some(reply_value(theirs)),
        }]),
    }
}

fn reply_value(reply: &Reply) -> Value {
    match reply {
        Reply::Answer(value) => value.clone(),
        Reply::Rejected(message) => serde_json::json!({ "error": message }),
        Reply::Failed(reason) => serde_json::json!({ "failed": reason }),
        Reply::TimedOut => serde_json::json!({ "timed_out": true }),
    }
}

/// The fields where `theirs` differs from `ours`, in document order:
/// objects key by key (tally's keys first), lists index by index. Numbers
/// compare as JSON values, so `1` and `1.0` differ.
///
/// ```
/// use serde_json::json;
/// let found = tally_conformance::differences(
///     &json!({"busy_ns": 5, "rows": [1, 2]}),
///     &json!({"busy_ns": 5.0, "rows": [1]}),
/// );
/// let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
/// assert_eq!(paths, ["busy_ns", "rows[1]"]);
/// ```
pub fn differences(ours: &Value, theirs: &Value) -> Vec<Difference> {
    let mut found = Vec::new();
    walk(String::new(), Some(ours), Some(theirs), &mut found);
    found
}

fn walk(path: String, ours: Option<&Value>, theirs: Option<&Value>, found: &mut Vec<Difference>) {
    match (ours, theirs) {
        (Some(Value::Object(left)), Some(Value::Object(right))) => {
            for (key, value) in left {
                walk(join(&path, key), Some(value), right.get(key), found);
            }
            for (key, value) in right {
                if !left.contains_key(key) {
                    walk(join(&path, key), None, Some(value), found);
                }
            }
        }
        (Some(Value::Array(left)), Some(Value::Array(right))) => {
            for index in 0..left.len().max(right.len()) {
                walk(format!("{path}[{index}]"), left.get(index), right.get(index), found);
            }
        }
        (left, right) if left == right => {}
        (left, right) => {
            found.push(Difference { path, tally: left.cloned(), implementation: right.cloned() })
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

/// At most `limit` differences, one a line, and how many more there are.
pub fn short_diff(found: &[Difference], limit: usize) -> String {
    let mut text: String = found.iter().take(limit).map(|difference| format!("  {difference}\n")).collect();
    if found.len() > limit {
        text.push_str(&format!("  ... and {} more\n", found.len() - limit));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_and_floats_differ_and_missing_keys_are_named() {
        let found = differences(&json!({"a": 1, "b": {"c": [1, 2]}}), &json!({"a": 1.0, "b": {"d": 3}}));
        let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["a", "b.c", "b.d"]);
        assert_eq!(found[1].implementation, None);
        assert_eq!(found[2].tally, None);
    }

    #[test]
    fn a_rejection_against_an_answer_is_a_disagreement() {
        let verdict = judge(&Reply::Rejected("bad".into()), &Reply::Answer(json!({})));
        assert!(matches!(verdict, Verdict::Disagreed(found) if found.len() == 1));
        assert_eq!(
            judge(&Reply::Rejected("a".into()), &Reply::Rejected("b".into())),
            Verdict::RejectedByBoth
        );
        assert_eq!(judge(&Reply::Answer(json!([1])), &Reply::TimedOut), Verdict::TimedOut);
    }
}
