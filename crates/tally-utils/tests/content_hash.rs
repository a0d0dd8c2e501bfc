//! ContentHasher's promises: values Python finds equal hash alike, and
//! values that differ (short strings, long ones hashed by lanes, their
//! lengths) hash apart.

use proptest::prelude::*;
use serde_json::{Value, json};
use tally_utils::content_hash::{ContentHasher, metadata_hash};

fn hash(value: &Value) -> u128 {
    let mut hasher = ContentHasher::default();
    hasher.json_value(value);
    hasher.finish128()
}

proptest! {
    /// Strings of any length around the long-string threshold and the
    /// 32-byte steps: equal ones hash alike, a change anywhere (one byte,
    /// one byte more or less) hashes apart.
    #[test]
    fn strings_hash_apart_when_they_differ(text in "[a-z0-9_:<>]{0,200}", at in any::<usize>(), byte in 0u8..128) {
        prop_assert_eq!(hash(&json!(text)), hash(&json!(text.clone())));
        let mut changed = text.clone().into_bytes();
        if !changed.is_empty() {
            let index = at % changed.len();
            if changed[index] != byte {
                changed[index] = byte;
                let changed = String::from_utf8(changed).expect("ASCII with one ASCII byte replaced");
                prop_assert_ne!(hash(&json!(text)), hash(&json!(changed)));
            }
        }
        prop_assert_ne!(hash(&json!(text)), hash(&json!(format!("{text}x"))));
        if let Some(shorter) = text.get(..text.len().saturating_sub(1)).filter(|_| !text.is_empty()) {
            prop_assert_ne!(hash(&json!(text)), hash(&json!(shorter)));
        }
    }
}

proptest! {
    /// Short strings (one step of each lane, read as two overlapping words)
    /// of every length to 17 bytes: two hash alike exactly when they are
    /// equal, as values and as keys, and a key never hashes as the same
    /// text as a value.
    #[test]
    fn short_strings_hash_alike_only_when_equal(a in "[ab\\x00]{0,17}", b in "[ab\\x00]{0,17}") {
        prop_assert_eq!(hash(&json!(a)) == hash(&json!(b)), a == b);
        prop_assert_eq!(hash(&json!({&a: 1})) == hash(&json!({&b: 1})), a == b);
        if a != b {
            prop_assert_ne!(hash(&json!({&a: &b})), hash(&json!({&b: &a})));
        }
        prop_assert_ne!(hash(&json!([&a])), hash(&json!({&a: null})));
    }
}

proptest! {
    /// Integers hash apart when they differ, within i64 and past it, and
    /// apart from their spelling as strings and from arrays that hold
    /// more.
    #[test]
    fn integers_hash_alike_only_when_equal(a in any::<i64>(), b in any::<i64>(), wide in any::<u64>()) {
        prop_assert_eq!(hash(&json!(a)) == hash(&json!(b)), a == b);
        let wide = wide | (1 << 63);
        prop_assert_ne!(hash(&json!(wide)), hash(&json!(a)));
        prop_assert_ne!(hash(&json!([a])), hash(&json!([a, null])));
        prop_assert_ne!(hash(&json!(a)), hash(&json!(a.to_string())));
        // A float that holds an integer is that integer to Python.
        let exact = a >> 11;
        prop_assert_eq!(hash(&json!(exact)), hash(&json!(exact as f64)));
    }
}

#[test]
fn python_equal_metadata_hashes_alike() {
    let long =
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T2, T3)";
    let a = json!({"first_name": long, "event_count": 1, "ratio": 1.0});
    let b = json!({"ratio": 1, "event_count": true, "first_name": long});
    let (Value::Object(a), Value::Object(b)) = (a, b) else { unreachable!("objects above") };
    assert_eq!(metadata_hash(&a), metadata_hash(&b));
    let mut c = a.clone();
    c.insert("first_name".into(), Value::from(format!("{long} ")));
    assert_ne!(metadata_hash(&a), metadata_hash(&c));
}
