//! In what order, and on which threads, one trace's records are made: on
//! this thread in the records' order ([`in_order`]), or with the GPU
//! groups' records made on several emitter threads and passed on in order
//! ([`in_parallel`]); the GPU rows are grouped beside the linking
//! ([`Plan::make`]) and the device figures found beside the records. Every
//! thread a build starts is started here.
//!
//! These threads stay apart from [`crate::parallel`]'s, which import whole
//! files, because the two nest rather than repeat: each of its workers
//! builds its file through here (`emitters` threads per worker), and the
//! threads here share one trace's tables, contexts and activity numbering
//! (`Shared`, `Emitter`, `Tally`), which `parallel` never sees. Moving them
//! there would spread the build's own types over two modules.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};
use tally_core::EntityRef;

use super::Shared;
use super::batch::Batched;
use super::emit::{Emitter, GpuGroups, Out};
use super::figures::{DeviceFigures, device_figures};
use super::link::{self, LaunchIndex, Link, groups};
use super::summary::{SummaryCounts, Tally, processes};
use crate::collect::{GpuEvent, Rows, RuntimeRow};
use crate::error::TraceErrorKind;
use crate::parallel::RecordBatcher;

/// What a build made besides its records.
pub(super) struct Made {
    pub(super) summary: Map<String, Value>,
    pub(super) capabilities: BTreeSet<&'static str>,
}

/// What the activity records are made from, found before the first one:
/// the iterations, each runtime call's iteration, the launch index and the
/// GPU groups.
struct Plan {
    iterations: Vec<EntityRef>,
    runtime_links: Vec<Link>,
    launches: LaunchIndex,
    order: Vec<u32>,
    runs: Vec<(u32, u32)>,
}

impl Plan {
    /// The plan, the iteration records and the clock alignment emitted on
    /// the way (they come first, on `emitter`'s thread); with `beside`, the
    /// GPU rows are grouped on a thread of their own meanwhile.
    fn make(
        shared: &Shared<'_>,
        emitter: &mut Emitter<'_>,
        gpu: &Rows<GpuEvent>,
        runtime: &Rows<RuntimeRow>,
        out: &mut Out<'_>,
        beside: bool,
    ) -> Result<Self, TraceErrorKind> {
        let ((iterations, runtime_links, launches), (order, runs)) = if beside {
            std::thread::scope(|scope| {
                let grouped = scope.spawn(|| groups(gpu, shared.options.detail));
                let linked = link::linked(shared, emitter, gpu, runtime, out);
                // Grouping only sorts; a panic there is a bug, passed on.
                let grouped = grouped.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                linked.map(|linked| (linked, grouped))
            })?
        } else {
            (link::linked(shared, emitter, gpu, runtime, out)?, groups(gpu, shared.options.detail))
        };
        Ok(Self { iterations, runtime_links, launches, order, runs })
    }

    /// The GPU groups of this plan over the rows it was made from.
    fn groups<'a>(&'a self, gpu: &'a Rows<GpuEvent>, runtime: &'a Rows<RuntimeRow>) -> GpuGroups<'a> {
        GpuGroups {
            gpu,
            runtime,
            launches: &self.launches,
            runtime_links: &self.runtime_links,
            order: &self.order,
        }
    }
}

/// The records of one trace made on this thread in their order: the GPU
/// rows freed once their records are made, the runtime rows as theirs are.
pub(super) fn in_order(
    shared: &Shared<'_>,
    gpu: Rows<GpuEvent>,
    runtime: Rows<RuntimeRow>,
    out: &mut Out<'_>,
) -> Result<Made, TraceErrorKind> {
    let mut emitter = Emitter::new(shared);
    let plan = Plan::make(shared, &mut emitter, &gpu, &runtime, out, false)?;
    let groups = plan.groups(&gpu, &runtime);
    for &run in &plan.runs {
        emitter.gpu_group(&groups, run, &plan.iterations, out)?;
    }
    let Plan { iterations, runtime_links, launches, order, runs } = plan;
    drop(launches);
    let figures = device_figures(&gpu, &order, &runs);
    drop((order, runs));
    runtime_calls_then_summary(shared, emitter, gpu, runtime, &runtime_links, &iterations, figures, out)
}

/// The rest of a build once the GPU groups' records are made: the runtime
/// calls' records, in order on this thread (`emitter`'s activity count is
/// the groups'), then the summary. The GPU rows are freed first, each
/// block of runtime rows once its records are made.
#[allow(clippy::too_many_arguments, reason = "what both builds hold at this point")]
fn runtime_calls_then_summary(
    shared: &Shared<'_>,
    mut emitter: Emitter<'_>,
    gpu: Rows<GpuEvent>,
    runtime: Rows<RuntimeRow>,
    runtime_links: &[Link],
    iterations: &[EntityRef],
    figures: BTreeMap<(u64, u32), DeviceFigures>,
    out: &mut Out<'_>,
) -> Result<Made, TraceErrorKind> {
    let capabilities = shared.capabilities(&gpu);
    let gpu_events = gpu.len();
    drop(gpu);
    let processes = processes(&runtime);
    let runtime_calls = runtime.len();
    for (row, &link) in runtime.into_iter().zip(runtime_links) {
        emitter.emit_runtime(&row, link, iterations, out)?;
    }
    let summary = shared.summary_of(SummaryCounts {
        iterations: iterations.len(),
        gpu_events,
        runtime_calls,
        processes,
        activity_records: emitter.spelled.activity_count,
        tally: emitter.tally,
        figures,
    })?;
    Ok(Made { summary, capabilities })
}

/// GPU groups a chunk holds, in [`in_parallel`]: a few batches, so that
/// emitters work well apart and each chunk's batches are few.
const CHUNK_GROUPS: usize = 2048;

/// A chunk's batches and how the chunk ended.
type Chunk<B> = (Vec<B>, Result<(), TraceErrorKind>);

/// The records of one trace, the GPU groups' made on `emitters` threads
/// ([`build_batched`](super::build_batched)).
pub(super) fn in_parallel<R: RecordBatcher>(
    shared: &Shared<'_>,
    gpu: Rows<GpuEvent>,
    runtime: Rows<RuntimeRow>,
    batched: &mut Batched<'_, R>,
    emitters: usize,
) -> Result<Made, TraceErrorKind> {
    // The first records (iterations, the alignment) on this thread.
    let mut first = Emitter::new(shared);
    let plan = Plan::make(shared, &mut first, &gpu, &runtime, &mut |record| batched.add(record), true)?;
    batched.flush()?;
    let batcher = batched.batcher;
    let groups = plan.groups(&gpu, &runtime);
    let (runs, iterations, order) = (&plan.runs, &plan.iterations, &plan.order);
    let chunks = runs.len().div_ceil(CHUNK_GROUPS);
    let before = batched.records;
    let stop = AtomicBool::new(false);
    let (tallies, passed, figures) = std::thread::scope(|scope| {
        // The summary's device figures need no record: made beside them.
        let figures = scope.spawn(|| device_figures(&gpu, order, runs));
        let mut receivers = Vec::with_capacity(emitters);
        let mut handles = Vec::with_capacity(emitters);
        for which in 0..emitters.min(chunks) {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Chunk<R::Batch>>(2);
            receivers.push(receiver);
            let (groups, stop) = (&groups, &stop);
            handles.push(scope.spawn(move || {
                let mut emitter = Emitter::new(shared);
                for chunk in (which..chunks).step_by(emitters) {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let from = chunk * CHUNK_GROUPS;
                    let to = (from + CHUNK_GROUPS).min(runs.len());
                    // An activity's ID is its place among the activities.
                    emitter.spelled.activity_count = from as u64;
                    let mut batches = Vec::new();
                    let mut keep = |batch| {
                        batches.push(batch);
                        Ok(())
                    };
                    let mut chunk_batched = Batched::new(batcher, &mut keep, before + from as u64);
                    let made = runs[from..to].iter().try_for_each(|&run| {
                        emitter.gpu_group(groups, run, iterations, &mut |record| chunk_batched.add(record))
                    });
                    // Keeping a batch cannot fail.
                    let _ = chunk_batched.finish(&made);
                    let failed = made.is_err();
                    if sender.send((batches, made)).is_err() || failed {
                        break;
                    }
                }
                emitter.tally
            }));
        }
        // The chunks in order: chunk `c` comes from emitter `c % emitters`.
        let mut passed: Result<(), TraceErrorKind> = Ok(());
        'chunks: for chunk in 0..chunks {
            let Ok((batches, made)) = receivers[chunk % receivers.len()].recv() else {
                // An emitter that stopped early panicked: the scope passes
                // its panic on.
                break;
            };
            for batch in batches {
                if let Err(error) = (batched.send)(batch) {
                    passed = Err(TraceErrorKind::Sink(error));
                    break 'chunks;
                }
            }
            if let Err(error) = made {
                passed = Err(error);
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        drop(receivers);
        // Emitters and the figures only read and add; a panic there is a
        // bug, passed on.
        let tallies: Vec<Tally> = handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect();
        let figures = figures.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (tallies, passed, figures)
    });
    // The emitters' records were sent past this thread's count.
    batched.records += runs.len() as u64;
    passed?;
    let mut emitter = first;
    for tally in tallies {
        emitter.tally.merge(tally);
    }
    let Plan { iterations, runtime_links, launches, order, runs } = plan;
    drop((order, runs, launches));
    emitter.spelled.activity_count = batched.records - before;
    let out: &mut Out<'_> = &mut |record| batched.add(record);
    runtime_calls_then_summary(shared, emitter, gpu, runtime, &runtime_links, &iterations, figures, out)
}
