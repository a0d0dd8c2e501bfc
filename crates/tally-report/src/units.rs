//! Times as people read them: a figure in its largest fitting unit, and
//! the ticks of a time axis in round steps of one unit.

/// `nanoseconds` in the largest unit it reaches, to two decimals: `999 ns`,
/// `1.00 µs`, `12.35 ms`, `61.00 s` (the `tally` command's tables read the
/// same).
pub fn readable_ns(nanoseconds: u128) -> String {
    const UNITS: [(u128, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs")];
    for (scale, unit) in UNITS {
        if nanoseconds >= scale {
            let hundredths = (nanoseconds * 100 + scale / 2) / scale;
            return format!("{}.{:02} {unit}", hundredths / 100, hundredths % 100);
        }
    }
    format!("{nanoseconds} ns")
}

/// A signed time: [`readable_ns`] of its size, with `-` when negative (and
/// `+` when `plus` and positive).
pub fn signed_ns(value: i128, plus: bool) -> String {
    let text = readable_ns(value.unsigned_abs());
    if value < 0 {
        format!("-{text}")
    } else if plus && value > 0 {
        format!("+{text}")
    } else {
        text
    }
}

/// `part` of `whole` in percent with one decimal (`12.3%`), `-` when
/// `whole` is zero. Output only: the figures stay integers.
pub fn percent(part: u128, whole: u128) -> String {
    if whole == 0 {
        return "-".to_owned();
    }
    let tenths = (part * 1000 + whole / 2) / whole;
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// The step of a time axis over `span` nanoseconds: the round value (1, 2
/// or 5 times a power of ten nanoseconds) that gives at most `most` steps.
pub fn tick_step(span: u64, most: u64) -> u64 {
    let most = most.max(1);
    let mut scale: u64 = 1;
    loop {
        for factor in [1, 2, 5] {
            let step = scale.saturating_mul(factor);
            if span.div_ceil(step) <= most || step == u64::MAX {
                return step;
            }
        }
        scale = scale.saturating_mul(10);
    }
}

/// A tick's label: `value` nanoseconds in the unit of `step` (the largest
/// of s, ms, µs, ns that the step reaches): ticks of 200 µs read `0 µs`,
/// `200 µs`, ..., `1200 µs`. A value off the step's grid gets the decimals
/// it needs.
pub fn tick_label(value: u64, step: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns")];
    let (scale, unit) = UNITS.into_iter().find(|&(scale, _)| step >= scale).unwrap_or((1, "ns"));
    let whole = value / scale;
    let rest = value % scale;
    if rest == 0 {
        return format!("{whole} {unit}");
    }
    // The step is a multiple of scale / 10^k; write k decimals.
    let mut digits = 0;
    let mut unit_step = scale;
    while unit_step > 1 && !rest.is_multiple_of(unit_step) {
        unit_step /= 10;
        digits += 1;
    }
    let fraction = rest / unit_step.max(1);
    format!("{whole}.{fraction:0digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_in_their_largest_unit() {
        assert_eq!(readable_ns(0), "0 ns");
        assert_eq!(readable_ns(999), "999 ns");
        assert_eq!(readable_ns(1_000), "1.00 µs");
        assert_eq!(readable_ns(12_345), "12.35 µs");
        assert_eq!(readable_ns(4_560_000), "4.56 ms");
        assert_eq!(readable_ns(61_000_000_000), "61.00 s");
        assert_eq!(signed_ns(-1_500, false), "-1.50 µs");
        assert_eq!(signed_ns(1_500, true), "+1.50 µs");
        assert_eq!(signed_ns(0, true), "0 ns");
    }

    #[test]
    fn percentages_round_to_a_tenth() {
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(2, 3), "66.7%");
        assert_eq!(percent(5, 0), "-");
        assert_eq!(percent(7, 7), "100.0%");
    }

    #[test]
    fn ticks_step_by_one_two_or_five_of_a_power_of_ten() {
        assert_eq!(tick_step(1_000, 10), 100);
        assert_eq!(tick_step(1_001, 10), 200);
        assert_eq!(tick_step(4_000_000, 8), 500_000);
        assert_eq!(tick_step(0, 8), 1);
        assert_eq!(tick_step(u64::MAX, 8), 5_000_000_000_000_000_000);
    }

    #[test]
    fn tick_labels_use_the_unit_of_their_step() {
        assert_eq!(tick_label(0, 200_000), "0 µs");
        assert_eq!(tick_label(1_200_000, 200_000), "1200 µs");
        assert_eq!(tick_label(3_000_000, 1_000_000), "3 ms");
        assert_eq!(tick_label(2_500_000_000, 500_000_000), "2500 ms");
        assert_eq!(tick_label(2_500, 1_000), "2.5 µs");
        assert_eq!(tick_label(1_050_000, 50_000), "1050 µs");
        assert_eq!(tick_label(70, 10), "70 ns");
    }
}
