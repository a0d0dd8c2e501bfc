//! What an interrupted command leaves behind: nothing. Every file a
//! command writes goes to a temporary file beside its target first
//! (`tally_artifact::AtomicFile`); while one is open it is registered here,
//! and SIGINT or SIGTERM removes the registered files before the process
//! exits with the signal's usual status (128 + the signal). The target, if
//! it existed, stays as it was.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Temporary files being written now.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Starts the thread that waits for SIGINT and SIGTERM. Without it the
/// signals keep their default action (the process ends, leaving its
/// temporary files for the next run to remove as stale).
pub fn install() {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) else { return };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let pending = PENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for path in pending.iter() {
                let _ = std::fs::remove_file(path);
            }
            std::process::exit(128 + signal);
        }
    });
}

/// A temporary file registered for removal on interruption while this
/// lives.
pub struct Pending(PathBuf);

impl Pending {
    /// Registers `path`.
    pub fn new(path: &Path) -> Self {
        PENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(path.to_path_buf());
        Self(path.to_path_buf())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut pending = PENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(index) = pending.iter().position(|path| *path == self.0) {
            pending.swap_remove(index);
        }
    }
}
