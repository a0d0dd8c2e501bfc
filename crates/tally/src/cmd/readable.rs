//! Figures for people, shared by the profile tables of `tally profile` and
//! `tally aggregate`, so that both print a profile's parts alike.

use std::fmt::Write as _;

use tally_profile::profile::ModelFootprint;

use super::account::readable_ns;

/// Seconds as [`readable_ns`] prints nanoseconds; `-` when absent, negative
/// or not finite.
pub(crate) fn seconds(value: Option<f64>) -> String {
    match value {
        Some(seconds) if seconds.is_finite() && seconds >= 0.0 => {
            readable_ns((seconds * 1e9).round() as u128)
        }
        _ => "-".to_owned(),
    }
}

/// Bytes for people: exact below a KiB, else binary units with the exact
/// count beside them.
pub(crate) fn readable_bytes(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (scale, unit) in UNITS {
        if bytes >= scale {
            return format!("{:.2} {unit} ({bytes} B)", bytes as f64 / scale as f64);
        }
    }
    format!("{bytes} B")
}

/// [`readable_bytes`], or `-` when absent.
pub(crate) fn optional_bytes(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "-".to_owned(), readable_bytes)
}

/// `STATUS: N parameters, BYTES (DTYPES)`, with `-` for what is unknown.
pub(crate) fn model_summary(model: &ModelFootprint) -> String {
    format!(
        "{}: {} parameters, {} ({})",
        model.status,
        model.parameter_count.map_or_else(|| "-".to_owned(), |count| count.to_string()),
        optional_bytes(model.parameter_bytes),
        if model.weight_dtypes.is_empty() { "-".to_owned() } else { model.weight_dtypes.join(", ") }
    )
}

/// A blank line, `warnings` and one `  - WARNING` line each; nothing when
/// there are none.
pub(crate) fn write_warnings(out: &mut String, warnings: &[String]) {
    if warnings.is_empty() {
        return;
    }
    // Writing to a String cannot fail.
    let _ = writeln!(out, "\nwarnings");
    for warning in warnings {
        let _ = writeln!(out, "  - {warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(readable_bytes(712), "712 B");
        assert_eq!(readable_bytes(8464), "8.27 KiB (8464 B)");
        assert_eq!(readable_bytes(3 << 20), "3.00 MiB (3145728 B)");
        assert_eq!(optional_bytes(None), "-");
    }

    #[test]
    fn warnings_follow_a_blank_line() {
        let mut out = String::new();
        write_warnings(&mut out, &[]);
        assert_eq!(out, "");
        write_warnings(&mut out, &["a".to_owned(), "b".to_owned()]);
        assert_eq!(out, "\nwarnings\n  - a\n  - b\n");
    }

    #[test]
    fn seconds_need_a_finite_non_negative_value() {
        assert_eq!(seconds(None), "-");
        assert_eq!(seconds(Some(-1.0)), "-");
        assert_eq!(seconds(Some(f64::NAN)), "-");
        assert_eq!(seconds(Some(2e-6)), readable_ns(2000));
    }
}
