//! Two runs' breakdowns side by side (`tally diff A B`): per device clock
//! and category the change in busy and exposed time, and the kernels that
//! appeared, disappeared or changed most in summed time.
//!
//! Device clocks are paired by their key (`device_uuid`, `clock_domain`,
//! `clock_kind`) where both runs have it; the rest are paired in order
//! (imported traces name their clock domains and made-up UUIDs after the
//! trace file, so two traces of one job share no key), and what is left
//! over is listed as unmatched. Kernels are paired by name and category.
//! Changes are signed nanoseconds; percentages (floats, output only) are
//! relative to A and absent where A is zero.

use serde::{Deserialize, Serialize};
use tally_core::ClockKind;

use crate::breakdown::{Breakdown, Categories, DeviceBreakdown, KernelRow};
use crate::category::Category;

/// A figure in A and B.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// A's figure.
    pub a_ns: u128,
    /// B's figure.
    pub b_ns: u128,
    /// B minus A.
    pub change_ns: i128,
    /// The change over A, in percent; `None` when A is zero.
    pub change_pct: Option<f64>,
}

impl Change {
    /// The change from `a` to `b`.
    pub fn of(a: u128, b: u128) -> Self {
        // Both are at most 2^64 · 2^32 (summed time of u32::MAX activities),
        // so they fit an i128.
        let change_ns = i128::try_from(b).unwrap_or(i128::MAX) - i128::try_from(a).unwrap_or(i128::MAX);
        Self { a_ns: a, b_ns: b, change_ns, change_pct: (a > 0).then(|| change_ns as f64 * 100.0 / a as f64) }
    }
}

/// Which device clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockRef {
    /// The device.
    pub device_uuid: String,
    /// The clock domain.
    pub clock_domain: String,
    /// The clock kind.
    pub clock_kind: ClockKind,
}

impl ClockRef {
    fn of(device: &DeviceBreakdown) -> Self {
        Self {
            device_uuid: device.device_uuid.clone(),
            clock_domain: device.clock_domain.clone(),
            clock_kind: device.clock_kind,
        }
    }
}

/// One category's changes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CategoryChange {
    /// Busy time.
    pub busy_ns: Change,
    /// Summed time.
    pub summed_ns: Change,
}

/// Per category.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CategoryChanges {
    /// Compute.
    pub compute: CategoryChange,
    /// Communication.
    pub communication: CategoryChange,
    /// Memory.
    pub memory: CategoryChange,
    /// Other.
    pub other: CategoryChange,
}

impl CategoryChanges {
    fn of(a: &Categories, b: &Categories) -> Self {
        let of = |category: Category| {
            let (a, b) = (a.get(category), b.get(category));
            CategoryChange {
                busy_ns: Change::of(u128::from(a.busy_ns), u128::from(b.busy_ns)),
                summed_ns: Change::of(a.summed_ns, b.summed_ns),
            }
        };
        Self {
            compute: of(Category::Compute),
            communication: of(Category::Communication),
            memory: of(Category::Memory),
            other: of(Category::Other),
        }
    }
}

/// A kernel of one run only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelPresence {
    /// Its name.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// How many activities.
    pub count: u64,
    /// Their summed time.
    pub summed_ns: u128,
}

impl KernelPresence {
    fn of(row: &KernelRow) -> Self {
        Self { name: row.name.clone(), category: row.category, count: row.count, summed_ns: row.summed_ns }
    }
}

/// A kernel of both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelChange {
    /// Its name.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// Activities in A.
    pub count_a: u64,
    /// Activities in B.
    pub count_b: u64,
    /// Summed time.
    pub summed_ns: Change,
    /// Busy time.
    pub busy_ns: Change,
}

/// One pair of device clocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceDiff {
    /// A's clock.
    pub a: ClockRef,
    /// B's clock.
    pub b: ClockRef,
    /// `clock` (the same key) or `position` (paired in order).
    pub matched_by: String,
    /// Device busy time.
    pub busy_ns: Change,
    /// Communication with no compute running.
    pub exposed_communication_ns: Change,
    /// Memory activity with no compute running.
    pub exposed_memory_ns: Change,
    /// Communication hidden behind compute.
    pub overlapped_communication_ns: Change,
    /// Idle time inside the envelope.
    pub idle_ns: Change,
    /// Per category.
    pub categories: CategoryChanges,
    /// Kernels only B has, by summed time, longest first.
    pub kernels_appeared: Vec<KernelPresence>,
    /// Kernels only A has, by summed time, longest first.
    pub kernels_disappeared: Vec<KernelPresence>,
    /// Kernels of both, by the size of the change in summed time, largest
    /// first.
    pub kernels_changed: Vec<KernelChange>,
}

/// Two runs' breakdowns compared: the object `tally diff --format json`
/// prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakdownDiff {
    /// A's run.
    pub run_a: Option<String>,
    /// B's run.
    pub run_b: Option<String>,
    /// Paired device clocks.
    pub devices: Vec<DeviceDiff>,
    /// A's device clocks without a partner.
    pub unmatched_a: Vec<ClockRef>,
    /// B's device clocks without a partner.
    pub unmatched_b: Vec<ClockRef>,
}

/// Compares two breakdowns (see the module docs).
pub fn diff(a: &Breakdown, b: &Breakdown) -> BreakdownDiff {
    let key = |device: &DeviceBreakdown| ClockRef::of(device);
    let mut taken_b = vec![false; b.devices.len()];
    let mut pairs: Vec<(usize, usize, &'static str)> = Vec::new();
    let mut left_a: Vec<usize> = Vec::new();
    for (index, device) in a.devices.iter().enumerate() {
        match b.devices.iter().position(|candidate| key(candidate) == key(device)) {
            Some(partner) => {
                taken_b[partner] = true;
                pairs.push((index, partner, "clock"));
            }
            None => left_a.push(index),
        }
    }
    let mut left_b = (0..b.devices.len()).filter(|&index| !taken_b[index]);
    let mut unmatched_a = Vec::new();
    for index in left_a {
        match left_b.next() {
            Some(partner) => pairs.push((index, partner, "position")),
            None => unmatched_a.push(key(&a.devices[index])),
        }
    }
    let unmatched_b = left_b.map(|index| key(&b.devices[index])).collect();
    pairs.sort_unstable();
    BreakdownDiff {
        run_a: a.run_id.clone(),
        run_b: b.run_id.clone(),
        devices: pairs
            .into_iter()
            .map(|(x, y, matched_by)| device_diff(&a.devices[x], &b.devices[y], matched_by))
            .collect(),
        unmatched_a,
        unmatched_b,
    }
}

fn device_diff(a: &DeviceBreakdown, b: &DeviceBreakdown, matched_by: &str) -> DeviceDiff {
    let change = |x: u64, y: u64| Change::of(u128::from(x), u128::from(y));
    let key = |row: &KernelRow| (row.name.clone(), row.category);
    let in_b: std::collections::BTreeMap<_, &KernelRow> =
        b.kernels.iter().map(|row| (key(row), row)).collect();
    let in_a: std::collections::BTreeMap<_, &KernelRow> =
        a.kernels.iter().map(|row| (key(row), row)).collect();
    let mut changed: Vec<KernelChange> = a
        .kernels
        .iter()
        .filter_map(|row| {
            let theirs = in_b.get(&key(row))?;
            Some(KernelChange {
                name: row.name.clone(),
                category: row.category,
                count_a: row.count,
                count_b: theirs.count,
                summed_ns: Change::of(row.summed_ns, theirs.summed_ns),
                busy_ns: change(row.busy_ns, theirs.busy_ns),
            })
        })
        .collect();
    changed.sort_by(|x, y| {
        y.summed_ns
            .change_ns
            .unsigned_abs()
            .cmp(&x.summed_ns.change_ns.unsigned_abs())
            .then_with(|| (&x.name, x.category).cmp(&(&y.name, y.category)))
    });
    // Kernel lists are sorted by summed time already.
    let appeared =
        b.kernels.iter().filter(|row| !in_a.contains_key(&key(row))).map(KernelPresence::of).collect();
    let disappeared =
        a.kernels.iter().filter(|row| !in_b.contains_key(&key(row))).map(KernelPresence::of).collect();
    DeviceDiff {
        a: ClockRef::of(a),
        b: ClockRef::of(b),
        matched_by: matched_by.to_owned(),
        busy_ns: change(a.busy_ns, b.busy_ns),
        exposed_communication_ns: change(a.exposed_communication_ns, b.exposed_communication_ns),
        exposed_memory_ns: change(a.exposed_memory_ns, b.exposed_memory_ns),
        overlapped_communication_ns: change(
            a.overlap_ns.communication_compute,
            b.overlap_ns.communication_compute,
        ),
        idle_ns: change(a.idle.idle_ns, b.idle.idle_ns),
        categories: CategoryChanges::of(&a.categories, &b.categories),
        kernels_appeared: appeared,
        kernels_disappeared: disappeared,
        kernels_changed: changed,
    }
}
