//! The arithmetic vertebrae's profiles are made of, reproduced operation for
//! operation so tally's floats equal vertebrae's bit for bit.
//!
//! vertebrae computes warm-call statistics with numpy 2 (`mean`, `median`,
//! `percentile(.., 95)` with the default linear method, `max`, `sum`) and
//! totals with Python's built-in `sum` and `/`. Floating-point addition is
//! not associative, so "the mean" is not enough: numpy sums with pairwise
//! summation in blocks of eight, Python's `sum` (3.11) adds left to right,
//! and Python divides two integers with a single correctly rounded division.
//! Each function here names the operation it reproduces.

/// Seconds as Python computes them from a nanosecond duration:
/// `ns / 1e9` (the integer converted to the nearest float, then one division).
///
/// ```
/// use tally_profile::profile::stats::ns_to_seconds;
/// assert_eq!(ns_to_seconds(1_500_000), 0.0015);
/// ```
pub fn ns_to_seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// numpy's pairwise summation (`DOUBLE_pairwise_sum`, `PW_BLOCKSIZE` 128):
/// below 8 values a plain loop, up to 128 eight interleaved accumulators,
/// above that the two halves (split at a multiple of 8) summed recursively.
fn pairwise_sum(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 8 {
        let mut sum = 0.0;
        for value in values {
            sum += value;
        }
        sum
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&values[..8]);
        let whole = n - n % 8;
        let mut i = 8;
        while i < whole {
            for (lane, accumulator) in r.iter_mut().enumerate() {
                *accumulator += values[i + lane];
            }
            i += 8;
        }
        let mut sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for value in &values[whole..] {
            sum += value;
        }
        sum
    } else {
        let mut half = n / 2;
        half -= half % 8;
        pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
    }
}

/// `float(np.asarray(values).sum())`: the reduction starts from `-0.0`
/// (numpy 2's identity for a non-empty float sum) and adds the pairwise sum.
pub fn numpy_sum(values: &[f64]) -> f64 {
    -0.0 + pairwise_sum(values)
}

/// `float(np.asarray(values).mean())`, `None` for no values.
pub fn numpy_mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| numpy_sum(values) / values.len() as f64)
}

/// `float(np.asarray(values).max())`, `None` for no values (NaN wins, as in numpy).
pub fn numpy_max(values: &[f64]) -> Option<f64> {
    let mut iter = values.iter().copied();
    let first = iter.next()?;
    Some(
        iter.fold(first, |max, value| if max.is_nan() || value.is_nan() { f64::NAN } else { max.max(value) }),
    )
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// `float(np.median(values))`, `None` for no values: the middle value, or
/// the numpy mean of the two middle values.
pub fn numpy_median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    if values.iter().any(|value| value.is_nan()) {
        return Some(f64::NAN);
    }
    let sorted = sorted(values);
    let half = sorted.len() / 2;
    let middle = if sorted.len() % 2 == 1 { &sorted[half..=half] } else { &sorted[half - 1..=half] };
    numpy_mean(middle)
}

/// `float(np.percentile(values, q))` with numpy's default `linear` method,
/// `None` for no values.
///
/// The virtual index is `(n - 1) * (q / 100)`; the result interpolates the
/// two neighbouring order statistics with numpy's `_lerp`, which computes
/// `b - (b - a) * (1 - t)` when `t >= 0.5` and `a + (b - a) * t` otherwise.
///
/// ```
/// use tally_profile::profile::stats::numpy_percentile;
/// let values = [1.0, 2.0, 3.0, 4.0];
/// assert_eq!(numpy_percentile(&values, 95.0), Some(3.8499999999999996));
/// ```
pub fn numpy_percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    if values.iter().any(|value| value.is_nan()) {
        return Some(f64::NAN);
    }
    let sorted = sorted(values);
    let n = sorted.len();
    let quantile = q / 100.0;
    let virtual_index = (n - 1) as f64 * quantile;
    let mut previous_index = virtual_index.floor();
    // numpy clamps both neighbours to the last element at or beyond it, and
    // its gamma is computed from the clamped index (-1), which only matters
    // through `b - a == 0`.
    let (previous, next) = if virtual_index >= (n - 1) as f64 {
        previous_index = -1.0;
        (sorted[n - 1], sorted[n - 1])
    } else if virtual_index < 0.0 {
        previous_index = 0.0;
        (sorted[0], sorted[0])
    } else {
        // floor of a value in [0, n - 1) indexes inside the slice.
        let index = previous_index as usize;
        (sorted[index], sorted[index + 1])
    };
    let gamma = virtual_index - previous_index;
    let difference = next - previous;
    Some(if gamma >= 0.5 { next - difference * (1.0 - gamma) } else { previous + difference * gamma })
}

/// Python 3.11's built-in `sum` over floats: left to right from `0`.
pub fn python_sum(values: &[f64]) -> f64 {
    let mut sum = 0.0;
    for value in values {
        sum += value;
    }
    sum
}

/// Python's `a / b` on two integers: the exact quotient rounded once to the
/// nearest float (ties to even), which `a as f64 / b as f64` is not when an
/// operand exceeds 2^53. `None` when `b` is 0 (Python raises).
///
/// ```
/// use tally_profile::profile::stats::int_true_div;
/// assert_eq!(int_true_div(1, 3), Some(1.0 / 3.0));
/// assert_eq!(int_true_div((1 << 60) + 1, 1 << 7), Some(((1u64 << 53) as f64) + 0.0));
/// assert_eq!(int_true_div(5, 0), None);
/// ```
pub fn int_true_div(a: u64, b: u64) -> Option<f64> {
    if b == 0 {
        return None;
    }
    const EXACT: u64 = 1 << 53;
    if a <= EXACT && b <= EXACT {
        return Some(a as f64 / b as f64);
    }
    if a == 0 {
        return Some(0.0);
    }
    // Scale the dividend so the integer quotient has at least 55 bits: then
    // its low bits sit below the rounding position and a sticky bit for a
    // non-zero remainder makes the one conversion round like the exact value.
    let a = u128::from(a);
    let b = u128::from(b);
    let shift = (55 + b.ilog2()).saturating_sub(a.ilog2()).min(127 - a.ilog2());
    let scaled = a << shift;
    let mut quotient = scaled / b;
    if scaled % b != 0 {
        quotient |= 1;
    }
    // 2^-shift built from its bits: shift <= 127, far from subnormals.
    let scale = f64::from_bits((1023 - u64::from(shift)) << 52);
    Some(quotient as f64 * scale)
}
