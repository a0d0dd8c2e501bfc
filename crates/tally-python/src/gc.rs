//! Python's cyclic garbage collector, paused while many objects are made at
//! once.
//!
//! Every PyO3 class is tracked by the collector, and while hundreds of
//! thousands of them are created (an artifact's events, a graph's tables)
//! the collector would run over all of them again and again, though none
//! of them can form a cycle. It is paused for the duration and restored to
//! the state it was in, whatever happens.

use pyo3::prelude::*;
use pyo3::types::PyModule;

/// Pauses the collector until dropped (a no-op if it was off already).
pub struct Pause<'py> {
    gc: Bound<'py, PyModule>,
    was_enabled: bool,
}

impl<'py> Pause<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        let gc = py.import("gc")?;
        let was_enabled = gc.call_method0("isenabled")?.is_truthy()?;
        if was_enabled {
            gc.call_method0("disable")?;
        }
        Ok(Self { gc, was_enabled })
    }
}

impl Drop for Pause<'_> {
    fn drop(&mut self) {
        if self.was_enabled {
            // Enabling cannot fail; were it to, the collector would only
            // stay off, which loses nothing.
            let _ = self.gc.call_method0("enable");
        }
    }
}
