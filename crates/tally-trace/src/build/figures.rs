//! Each device's figures for the summary: its busy time (the union of its
//! events), its launch span (that union with the spans of multi-event
//! launch records) and its summed time, through `tally_utils::interval` as
//! the accounting computes them.

use std::collections::BTreeMap;

use tally_utils::interval::UnionSweep;

use crate::collect::{GpuEvent, Rows};

/// A device's busy, launch-span and summed time, in ns.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct DeviceFigures {
    pub(super) busy: u64,
    pub(super) launch_span: u64,
    /// A sum of `u64` durations: exact in 128 bits, checked when written.
    pub(super) summed: u128,
}

/// Per device, from the rows sorted by start through an index (four bytes
/// a row, not a copy of the intervals): the union of the events, and the
/// union of the events with the spans of multi-event launch records.
pub(super) fn device_figures(
    gpu: &Rows<GpuEvent>,
    grouped: &[u32],
    runs: &[(u32, u32)],
) -> BTreeMap<(u64, u32), DeviceFigures> {
    // The spans of launch records that hold several events (`runs` of
    // `grouped`, as [`groups`](super::link::groups) gives them), by device: with the events
    // themselves, they make the launch span.
    let mut group_spans: Vec<((u64, u32), u64, u64)> = runs
        .iter()
        .filter(|&&(_, length)| length > 1)
        .map(|&(position, length)| {
            let members = &grouped[position as usize..(position + length) as usize];
            let first = &gpu[members[0] as usize];
            let start = members.iter().map(|&index| gpu[index as usize].start).min().unwrap_or(first.start);
            let end = members.iter().map(|&index| gpu[index as usize].end).max().unwrap_or(first.end);
            ((first.pid, first.device), start, end)
        })
        .collect();
    // Sums are u128 here; they are checked where they are written.
    let mut order: Vec<u32> = (0..gpu.len() as u32).collect();
    order.sort_unstable_by_key(|&index| {
        let row = &gpu[index as usize];
        (row.pid, row.device, row.start)
    });
    group_spans.sort_unstable();
    let mut figures: BTreeMap<(u64, u32), DeviceFigures> = BTreeMap::new();
    let mut position = 0;
    let mut spans = group_spans.iter().peekable();
    while position < order.len() {
        let first = &gpu[order[position] as usize];
        let key = (first.pid, first.device);
        let (mut busy, mut launch_span, mut summed) = (UnionSweep::default(), UnionSweep::default(), 0u128);
        while let Some(&index) = order.get(position).filter(|&&index| {
            let row = &gpu[index as usize];
            (row.pid, row.device) == key
        }) {
            let row = &gpu[index as usize];
            while let Some(&&(_, start, end)) =
                spans.peek().filter(|(span_key, start, _)| *span_key == key && *start <= row.start)
            {
                launch_span.push(start, end);
                spans.next();
            }
            busy.push(row.start, row.end);
            launch_span.push(row.start, row.end);
            summed += u128::from(row.end - row.start);
            position += 1;
        }
        while let Some(&&(_, start, end)) = spans.peek().filter(|(span_key, _, _)| *span_key == key) {
            launch_span.push(start, end);
            spans.next();
        }
        figures.insert(key, DeviceFigures { busy: busy.finish(), launch_span: launch_span.finish(), summed });
    }
    figures
}
