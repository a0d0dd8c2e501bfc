//! How long freed memory stays with the process: mimalloc's purge delay,
//! chosen by what a command keeps and frees (its default is a second).
//!
//! Most runs give freed memory back at once: a run frees hundreds of
//! megabytes of growing tables, read rows and transient buffers in pages
//! that its next allocations seldom land in again, so within that second
//! they count in the resident set: `tally breakdown` of the 501 MB bench
//! trace peaked at 197 MB with the default and 131 MB with no delay, in the
//! same time (the run makes a few hundred `madvise` calls in all). An
//! imported trace is such a run whatever the command: its rows and groups
//! are freed as its records are made, and kept a tenth of a second they
//! raised `tally account`'s peak on the 300 MB real-trace bench from under
//! 60 MB to 65-69 MB.
//!
//! Accounting artifacts alone keeps them a tenth of a second
//! ([`keep_freed_briefly`]). Their tables live to the end, and what they
//! free (the decoders' buffers, the resolver's indexes when it finishes)
//! is what their accounting and report allocate next: given back at once,
//! it cost a `madvise` on the way out and a page fault on the way back in,
//! a tenth of the serial tail of the 150 MB v4 bench artifact (best 152 ->
//! 142 ms, 7 MB more at the peak, 56 -> 63 MB). Accounting partials alone
//! keeps them too: their chunks are decoded and freed one after another,
//! each about the size of the next (`tally account` of the distributed
//! bench's 32 trace partials: 1.89 -> 1.50 s, 577 -> 642 MB).

/// `mi_option_purge_delay` in mimalloc.h (the same number in mimalloc 2 and
/// 3): the Rust bindings name no option, "for stability reasons".
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory goes back to the system at once: called in `main` before
/// the command starts any thread.
pub fn give_back_at_once() {
    set_purge_delay(0);
}

/// Freed memory stays a tenth of a second, for a run whose frees feed its
/// next allocations (see the module docs). Called once the inputs are
/// open and before any thread but the signal thread, which allocates
/// nothing while it waits, has started.
pub fn keep_freed_briefly() {
    set_purge_delay(100);
}

/// A `MIMALLOC_PURGE_DELAY` in the environment, which mimalloc has read by
/// now, is left to have its say.
#[allow(unsafe_code, reason = "mimalloc's options have no safe wrapper")]
fn set_purge_delay(milliseconds: std::ffi::c_long) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set is not thread safe; both callers run before any
    // thread that allocates has started (see them). The option is a plain
    // integer in milliseconds.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, milliseconds) }
}

#[cfg(test)]
mod tests {
    use super::MI_OPTION_PURGE_DELAY;

    /// The number is mimalloc's and not the bindings', so check that it
    /// reads the purge delay: the test harness never runs `main`, so the
    /// option still has mimalloc 3's default of 1000 ms, which no other
    /// option has.
    #[test]
    #[allow(unsafe_code, reason = "mimalloc's options have no safe wrapper")]
    fn the_purge_delay_option_number_reads_the_purge_delay() {
        let expected: std::ffi::c_long =
            std::env::var("MIMALLOC_PURGE_DELAY").ok().and_then(|value| value.parse().ok()).unwrap_or(1000);
        // SAFETY: reading an option is a plain integer load; no test of this
        // binary sets options.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, expected);
    }
}
