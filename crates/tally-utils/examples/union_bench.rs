//! Times `union_ns` on N generated intervals (default ten million), once in
//! random order and once already sorted, on the calling thread only; prints
//! one JSON line. `cargo xtask bench account` runs it in release mode.
//!
//! ```sh
//! cargo run --release -p tally-utils --example union_bench -- 10000000
//! ```

use std::time::Instant;

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|arg| arg.parse().ok()).unwrap_or(10_000_000);
    let mut random = tally_utils::xorshift::XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let mut next = move || random.next_u64();
    // Kernels of up to 20 µs, started on average every 1 µs over a device
    // clock near 1.7e18 ns: heavy overlap, like a busy GPU's trace.
    let base = 1_700_000_000_000_000_000u64;
    let span = count as u64 * 1_000;
    let shuffled: Vec<(u64, u64)> = (0..count)
        .map(|_| {
            let start = base + next() % span;
            (start, start + next() % 20_000)
        })
        .collect();

    let mut work = shuffled.clone();
    let started = Instant::now();
    let busy = tally_utils::interval::union_ns(&mut work);
    let shuffled_seconds = started.elapsed().as_secs_f64();

    // `work` is now sorted by start.
    let started = Instant::now();
    let again = tally_utils::interval::union_ns(&mut work);
    let sorted_seconds = started.elapsed().as_secs_f64();
    assert_eq!(busy, again, "the union does not depend on order");
    drop(shuffled);
    println!(
        "{{\"intervals\": {count}, \"busy_ns\": {busy}, \"shuffled_seconds\": {shuffled_seconds:.6}, \
         \"sorted_seconds\": {sorted_seconds:.6}}}"
    );
}
