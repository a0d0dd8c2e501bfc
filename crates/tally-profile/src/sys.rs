//! The two system calls std has no wrapper for. Everything else about host
//! memory is read from `/proc` without `unsafe`.

/// What one `getrusage(RUSAGE_SELF)` says about memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Usage {
    /// `ru_maxrss` in KiB: the kernel's high-water mark of this process, or
    /// the one inherited across `exec` when that was higher (see `host.rs`).
    pub(crate) max_rss_kib: u64,
    /// Minor plus major page faults of all threads so far.
    pub(crate) faults: u64,
}

/// Reading `/proc/self/status` costs ~7 µs; this costs ~0.5 µs, which is what
/// keeps the profiler's per-call cost under 2 µs with host memory on.
/// `None` when the call fails.
#[allow(unsafe_code, reason = "getrusage has no safe wrapper in std")]
pub(crate) fn usage() -> Option<Usage> {
    // SAFETY: rusage is plain old data, for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live, writable local of the right type.
    let result = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if result != 0 {
        return None;
    }
    let faults = u64::try_from(usage.ru_minflt).ok()?.saturating_add(u64::try_from(usage.ru_majflt).ok()?);
    Some(Usage { max_rss_kib: u64::try_from(usage.ru_maxrss).ok()?, faults })
}

/// `ru_maxrss` in KiB alone, from `getrusage(RUSAGE_THREAD)`: on Linux the
/// thread's answer carries the process-wide high-water mark (the kernel reads
/// it from the address space), and it is about 40% cheaper than
/// `RUSAGE_SELF`, which sums every thread's counters. This is the one system
/// call the profiler makes after each measured call, so it is what a ~1 ms
/// call pays. Elsewhere it is `RUSAGE_SELF`'s.
#[allow(unsafe_code, reason = "getrusage has no safe wrapper in std")]
pub(crate) fn max_rss_kib() -> Option<u64> {
    #[cfg(target_os = "linux")]
    const WHO: libc::c_int = libc::RUSAGE_THREAD;
    #[cfg(not(target_os = "linux"))]
    const WHO: libc::c_int = libc::RUSAGE_SELF;
    // SAFETY: rusage is plain old data, for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live, writable local of the right type.
    let result = unsafe { libc::getrusage(WHO, &mut usage) };
    if result != 0 {
        return None;
    }
    u64::try_from(usage.ru_maxrss).ok()
}

/// The page size, for `/proc/self/statm` (which counts pages).
#[allow(unsafe_code, reason = "sysconf has no safe wrapper in std")]
pub(crate) fn page_size() -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|size| *size > 0)
}
