//! The host side of clock alignment: the monotonic clock and its name.

use std::sync::OnceLock;

/// `CLOCK_MONOTONIC` in nanoseconds: the clock Python's `time.monotonic_ns`
/// reads on Linux, so host timestamps written here and by stormlog's
/// producers on the same boot are on one clock.
///
/// ```
/// let first = tally_cuda::host_monotonic_ns();
/// assert!(tally_cuda::host_monotonic_ns() >= first);
/// ```
#[allow(unsafe_code, reason = "clock_gettime has no safe wrapper in std")]
pub fn host_monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the pointer is to a live, writable timespec; CLOCK_MONOTONIC
    // exists on every Linux kernel and macOS.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    if status != 0 {
        // Cannot happen for CLOCK_MONOTONIC with a valid pointer; a zero
        // reading would show in any bracket as an impossible width.
        return 0;
    }
    let seconds = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
    seconds.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// The host's name: `/proc/sys/kernel/hostname`, or `unknown-host`.
pub fn host_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        read_trimmed("/proc/sys/kernel/hostname")
            .or_else(|| std::env::var("HOSTNAME").ok().filter(|name| !name.is_empty()))
            .unwrap_or_else(|| "unknown-host".to_owned())
    })
}

/// The boot ID (`/proc/sys/kernel/random/boot_id`), or `unknown-boot`, as
/// stormlog names a host boot.
pub fn boot_id() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        read_trimmed("/proc/sys/kernel/random/boot_id").unwrap_or_else(|| "unknown-boot".to_owned())
    })
}

/// The host monotonic clock's domain, `{host}/{boot}/monotonic_ns`: the name
/// stormlog's producers give it, so alignments to it join their evidence.
///
/// ```
/// assert!(tally_cuda::host_clock_domain().ends_with("/monotonic_ns"));
/// ```
pub fn host_clock_domain() -> String {
    format!("{}/{}/monotonic_ns", host_name(), boot_id())
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
