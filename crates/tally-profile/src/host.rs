//! Host memory: the process's resident set over the profile window.
//!
//! vertebrae samples RSS with a fresh thread every 10 ms inside each call, so
//! it misses any peak shorter than a sampling period and pays a thread per
//! call. On Linux tally asks the kernel instead: `VmHWM` in
//! `/proc/self/status` is the exact high-water mark of the resident set, and
//! writing `5` to `/proc/self/clear_refs` resets it to the current RSS, which
//! opens the window. Where that write is refused, a window can still be
//! opened exactly when the process sits at its high-water mark already
//! (`VmHWM == VmRSS`); otherwise a sampler thread that lives for the whole
//! profile (not one per call) reads RSS at the configured interval.
//!
//! # Cost per call
//!
//! Reading `/proc/self/status` costs 7 to 20 µs, too much for every call.
//! The same high-water mark is available from `getrusage(RUSAGE_SELF)
//! .ru_maxrss` for ~0.5 µs, with one catch: the kernel reports the maximum of
//! this process's mark and the mark of the image it replaced at `exec` (for a
//! child started with `vfork` or `posix_spawn`, its parent's). Right after
//! the reset that maximum is read as a threshold `T`. Any later reading above
//! `T` is this process's own mark; a reading at or below `T` can only matter
//! while the known peak is still below `T`. Only then, and only if a page
//! fault happened since the last exact reading (the resident set grows by
//! faulting pages in; the same `getrusage` counts them), is
//! `/proc/self/status` read. Growth without a fault by this process's hand
//! (pages populated by the kernel on its behalf, e.g. `MAP_POPULATE`, or
//! merged into huge pages by `khugepaged`) is seen at the next exact reading
//! instead of at the call where it happened; it is never seen at all only
//! when the process started below its parent's mark, stays below it, and no
//! page is faulted in again before the window closes.
//!
//! # Precision
//!
//! The kernel keeps each RSS counter (file, anon, shmem) per CPU and folds
//! a CPU's share into the total every `max(32, 2 * CPUs)` pages; the
//! high-water mark is taken from the folded totals. It can therefore lag the
//! true peak by up to `3 * CPUs * max(32, 2 * CPUs)` pages (768 KiB on two
//! CPUs; a touched 256 MiB buffer measures 256 MiB minus 3 to 34 pages on
//! the development machine). A 10 ms sampler misses a short peak entirely.
//!
//! # Several profilers in one process
//!
//! The mark is process-wide: a second profiler resetting it would erase
//! what the first has not read yet. Every reset therefore first hands the
//! current mark to each open window, under one process-wide lock.
//!
//! # The window
//!
//! It opens when the first call is measured and closes when the last one
//! returns. Unlike vertebrae, which looks only inside calls, the time
//! between measured calls is inside the window (the kernel's mark cannot be
//! paused); vertebrae's device-memory window is the same.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sys;

tally_core::string_enum!(
    /// How host memory was measured, written to the profile's
    /// `context.host_memory_method`.
    HostMemoryMethod, "host_memory_method",
    "host_memory_method must be vmhwm_clear_refs, vmhwm_at_high_water or rss_sampler", {
        /// The kernel's high-water mark, reset through `/proc/self/clear_refs`.
        VmHwmClearRefs = "vmhwm_clear_refs",
        /// The kernel's high-water mark, not reset because the process was at its
        /// high-water mark when the window opened.
        VmHwmAtHighWater = "vmhwm_at_high_water",
        /// A sampling thread reading RSS at the configured interval.
        RssSampler = "rss_sampler",
    }
);

/// Which host-memory methods the profiler may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostMemoryMode {
    /// The kernel's high-water mark where possible, else the sampler.
    #[default]
    Auto,
    /// Always the sampler (e.g. to compare the two).
    Sampler,
}

/// Open windows, each with the mark it has been handed by later resets.
static OPEN_WINDOWS: Mutex<Vec<Weak<AtomicU64>>> = Mutex::new(Vec::new());

const KIB: u64 = 1024;

/// `(VmRSS, VmHWM)` in KiB from `/proc/self/status`.
fn read_status(status: &File, buffer: &mut Vec<u8>) -> Option<(u64, u64)> {
    buffer.resize(16 * 1024, 0);
    let read = status.read_at(buffer, 0).ok()?;
    let text = std::str::from_utf8(&buffer[..read]).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|number| number.trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Current RSS in bytes from `/proc/self/statm` (resident pages, field 2).
fn read_statm(statm: &File, page: u64) -> Option<u64> {
    let mut buffer = [0u8; 128];
    let read = statm.read_at(&mut buffer, 0).ok()?;
    let text = std::str::from_utf8(&buffer[..read]).ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages.saturating_mul(page))
}

/// One open host-memory window.
pub(crate) struct HostWindow {
    method: HostMemoryMethod,
    baseline_bytes: u64,
    peak_bytes: u64,
    source: Source,
}

enum Source {
    Kernel(Kernel),
    Sampler(Sampler),
}

struct Kernel {
    status: File,
    buffer: Vec<u8>,
    /// `ru_maxrss` right after the reset: above it, `ru_maxrss` is exact.
    threshold_kib: u64,
    /// Page faults counted at the last exact reading.
    faults: Option<u64>,
    peak_kib: u64,
    /// The mark later resets handed this window, in KiB.
    carried_kib: Arc<AtomicU64>,
}

struct Sampler {
    statm: File,
    page: u64,
    shared: Arc<SamplerShared>,
    thread: Option<JoinHandle<()>>,
}

struct SamplerShared {
    peak_bytes: AtomicU64,
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl HostWindow {
    /// Opens a window: the kernel's mark when `mode` allows and the system
    /// permits, else a sampler. `None` when neither can read RSS.
    pub(crate) fn open(mode: HostMemoryMode, interval: Duration) -> Option<Self> {
        if mode == HostMemoryMode::Auto
            && let Some(window) = Self::open_kernel()
        {
            return Some(window);
        }
        Self::open_sampler(interval)
    }

    fn open_kernel() -> Option<Self> {
        let status = File::open("/proc/self/status").ok()?;
        let mut buffer = Vec::new();
        let (baseline_kib, _) = read_status(&status, &mut buffer)?;
        let carried_kib = Arc::new(AtomicU64::new(0));
        let mut open = OPEN_WINDOWS.lock().unwrap_or_else(PoisonError::into_inner);
        let (rss_kib, mark_kib) = read_status(&status, &mut buffer)?;
        open.retain(|window| match window.upgrade() {
            Some(carried) => {
                carried.fetch_max(mark_kib, Ordering::Relaxed);
                true
            }
            None => false,
        });
        let reset = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/self/clear_refs")
            .and_then(|mut clear_refs| clear_refs.write_all(b"5"))
            .is_ok();
        let (method, start_mark_kib) = if reset {
            let (_, mark_after) = read_status(&status, &mut buffer)?;
            (HostMemoryMethod::VmHwmClearRefs, mark_after)
        } else if mark_kib == rss_kib {
            (HostMemoryMethod::VmHwmAtHighWater, mark_kib)
        } else {
            return None;
        };
        // Read after the reset: the exec-inherited mark, if higher, is in it.
        let usage = sys::usage();
        let threshold_kib = usage.map_or(u64::MAX, |usage| usage.max_rss_kib);
        let faults = usage.map(|usage| usage.faults);
        open.push(Arc::downgrade(&carried_kib));
        drop(open);
        let peak_kib = baseline_kib.max(start_mark_kib);
        let kernel = Kernel { status, buffer, threshold_kib, faults, peak_kib, carried_kib };
        Some(Self {
            method,
            baseline_bytes: baseline_kib.saturating_mul(KIB),
            peak_bytes: peak_kib.saturating_mul(KIB),
            source: Source::Kernel(kernel),
        })
    }

    fn open_sampler(interval: Duration) -> Option<Self> {
        let statm = File::open("/proc/self/statm").ok()?;
        let page = sys::page_size()?;
        let baseline = read_statm(&statm, page)?;
        let shared = Arc::new(SamplerShared {
            peak_bytes: AtomicU64::new(baseline),
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        });
        let thread_statm = statm.try_clone().ok()?;
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("tally-rss-sampler".into())
            .spawn(move || sample(&thread_statm, page, &thread_shared, interval))
            .ok()?;
        let sampler = Sampler { statm, page, shared, thread: Some(thread) };
        Some(Self {
            method: HostMemoryMethod::RssSampler,
            baseline_bytes: baseline,
            peak_bytes: baseline,
            source: Source::Sampler(sampler),
        })
    }

    /// Folds everything up to now into the peak; called when a call returns.
    pub(crate) fn observe(&mut self) {
        match &mut self.source {
            Source::Kernel(kernel) => {
                // The mark alone first (the cheap call); the fault count,
                // which needs every thread's counters, only when it decides.
                let decided = match sys::max_rss_kib() {
                    Some(max_rss) if max_rss > kernel.threshold_kib => {
                        kernel.peak_kib = kernel.peak_kib.max(max_rss);
                        true
                    }
                    // At or below the threshold, max_rss bounds this process's
                    // mark from above: nothing new unless the peak is lower.
                    Some(_) => kernel.threshold_kib <= kernel.peak_kib,
                    None => false,
                };
                if !decided {
                    let usage = sys::usage();
                    match usage {
                        Some(usage) if usage.max_rss_kib > kernel.threshold_kib => {
                            kernel.peak_kib = kernel.peak_kib.max(usage.max_rss_kib);
                        }
                        Some(_) if kernel.threshold_kib <= kernel.peak_kib => {}
                        // No page faulted in since the last exact reading: the
                        // resident set cannot have grown past it.
                        Some(usage) if kernel.faults == Some(usage.faults) => {}
                        _ => {
                            if let Some((_, mark)) = read_status(&kernel.status, &mut kernel.buffer) {
                                kernel.peak_kib = kernel.peak_kib.max(mark);
                                kernel.faults = usage.map(|usage| usage.faults);
                            }
                        }
                    }
                }
                let carried = kernel.carried_kib.load(Ordering::Relaxed);
                kernel.peak_kib = kernel.peak_kib.max(carried);
                self.peak_bytes = kernel.peak_kib.saturating_mul(KIB);
            }
            Source::Sampler(sampler) => {
                let sampled = sampler.shared.peak_bytes.load(Ordering::Relaxed);
                let now = read_statm(&sampler.statm, sampler.page).unwrap_or(0);
                self.peak_bytes = self.peak_bytes.max(sampled).max(now);
            }
        }
    }

    pub(crate) fn method(&self) -> HostMemoryMethod {
        self.method
    }

    pub(crate) fn baseline_bytes(&self) -> u64 {
        self.baseline_bytes
    }

    pub(crate) fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }
}

fn sample(statm: &File, page: u64, shared: &SamplerShared, interval: Duration) {
    let mut stopped = shared.stopped.lock().unwrap_or_else(PoisonError::into_inner);
    while !*stopped {
        if let Some(rss) = read_statm(statm, page) {
            shared.peak_bytes.fetch_max(rss, Ordering::Relaxed);
        }
        stopped = shared.wake.wait_timeout(stopped, interval).unwrap_or_else(PoisonError::into_inner).0;
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        *self.shared.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A sampler that panicked has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

/// The current RSS and high-water mark of this process in bytes, from
/// `/proc/self/status` (Linux); `None` elsewhere.
pub fn current_rss_and_hwm() -> Option<(u64, u64)> {
    let status = File::open("/proc/self/status").ok()?;
    let (rss, hwm) = read_status(&status, &mut Vec::new())?;
    Some((rss.saturating_mul(KIB), hwm.saturating_mul(KIB)))
}
