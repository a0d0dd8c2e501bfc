//! An embedded Python interpreter that sees the reference Python's
//! packages, for the suites of the adapters over Python frameworks
//! (tally-jax, tally-tensorflow, tally-keras, tally-torch's Python side).
//!
//! A test binary that links libpython starts the interpreter of the
//! library it was linked with, whose `sys.path` knows nothing of the venv
//! the frameworks were installed into. [`embedded_python`] asks the
//! reference Python (`TALLY_PYTHON`) for its `sys.path` and puts the
//! entries the embedded interpreter lacks at its end, so `import
//! tensorflow` finds the venv's TensorFlow.
//!
//! The binary must load the very libpython of the reference's base
//! interpreter: another library of the same name (a system Python of
//! another patch version) would pair with the reference's standard library
//! and fail on its compiled modules. Build with the reference first on
//! `PATH` (pyo3 links the first `python3` it finds; `cargo xtask test` puts
//! the venv there) and give the crate a `build.rs` that calls
//! `pyo3_build_config::add_libpython_rpath_link_args()` (tally-tensorflow
//! does), which points the tests at the linked library's directory. A
//! mismatch panics with this advice rather than skipping.
//!
//! ```text
//! [build-dependencies]
//! pyo3-build-config.workspace = true
//! [dev-dependencies]
//! tally-testkit = { workspace = true, features = ["python"] }
//! ```
//!
//! A test then starts with the guard [`embedded_python`] returns, and
//! holds it to its end:
//!
//! ```no_run
//! use pyo3::prelude::*;
//! let _python = match tally_testkit::python::embedded_python(&["numpy"]) {
//!     Ok(guard) => guard,
//!     Err(why) => return tally_testkit::skip(why),
//! };
//! Python::attach(|py| assert!(py.import("numpy").is_ok()));
//! ```
//!
//! The guard makes a binary's Python tests run one at a time, each on its
//! own thread as the test harness gives it: a framework whose runtime has
//! its own threads (TensorFlow's) then sees what a Python program shows
//! it, one thread of Python at a time, not several test threads importing
//! it and dropping their thread states concurrently.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::{PYTHON_VARIABLE, reference_python, run_python};

/// What the reference Python reports: its `major.minor.micro` and `sys.path`,
/// one entry a line after the version (paths hold no newline in practice;
/// one that did would only be split, never run).
const REPORT: &str = "import sys\nprint('%d.%d.%d' % sys.version_info[:3])\nprint('\\n'.join(sys.path))\n";

/// The once-per-process set-up's outcome: the interpreter is initialized
/// and sees the reference's paths, or why it cannot.
static SETUP: OnceLock<Result<(), String>> = OnceLock::new();

/// Held by the test that runs Python now.
static ONE_TEST: Mutex<()> = Mutex::new(());

/// The calling test's turn to run Python (see the module's documentation):
/// hold it to the test's end. A test holding it must not wait for another
/// thread that calls [`embedded_python`], which would wait for it.
#[must_use = "the test's Python work must run while the guard is held"]
pub struct EmbeddedPython {
    _turn: MutexGuard<'static, ()>,
}

/// Starts the embedded interpreter (once per process) with the reference
/// Python's `sys.path` entries added, waits for the other tests' Python
/// work to end, imports each of `modules` in it and returns the guard of
/// this test's turn.
///
/// The error says why the calling test cannot run, ready for
/// [`skip`](crate::skip): `TALLY_PYTHON` is unset or does not start, or
/// the reference cannot import one of `modules` (the framework is not
/// installed).
///
/// # Panics
///
/// When the set-up is broken, which a skip would hide: the embedded
/// interpreter is another Python version than the reference (the test
/// loaded another libpython than the reference's: see the module's
/// documentation), or the reference imports `modules` and the embedded
/// interpreter cannot.
pub fn embedded_python(modules: &[&str]) -> Result<EmbeddedPython, String> {
    // Unset, it says which modules the test wanted; set, the modules are
    // first imported here, and only a failure asks the reference (slow
    // for a framework: a second interpreter imports it).
    if std::env::var_os(PYTHON_VARIABLE).is_none_or(|value| value.is_empty()) {
        reference_python(modules)?;
    }
    let python = reference_python(&[])?;
    // A test that panicked while holding the turn left nothing half-done
    // that the next one relies on.
    let turn = ONE_TEST.lock().unwrap_or_else(PoisonError::into_inner);
    SETUP
        .get_or_init(|| {
            let output = run_python(&python, REPORT, b"");
            if !output.status.success() {
                return Err(format!(
                    "{PYTHON_VARIABLE}={} cannot report its sys.path: {}",
                    python.display(),
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
            }
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            let mut lines = stdout.lines();
            let reference_version = lines.next().unwrap_or_default().to_owned();
            let paths: Vec<String> = lines.filter(|line| !line.is_empty()).map(str::to_owned).collect();
            Python::initialize();
            let embedded_version = Python::attach(version).map_err(|error| error.to_string())?;
            assert_eq!(
                embedded_version,
                reference_version,
                "{PYTHON_VARIABLE}={} is another Python than the libpython this test loaded: its \
                 packages and standard library would not load. Build with the reference first on PATH \
                 (or PYO3_PYTHON set to it), and give the crate a build.rs calling \
                 pyo3_build_config::add_libpython_rpath_link_args(), so the test loads the libpython \
                 it was linked with rather than another of the same name.",
                python.display()
            );
            Python::attach(|py| add_to_path(py, &paths)).map_err(|error| error.to_string())
        })
        .clone()?;
    let failed = Python::attach(|py| {
        modules.iter().find_map(|module| py.import(*module).err().map(|error| (*module, error.to_string())))
    });
    if let Some((module, error)) = failed {
        // Missing from the reference too: the framework is not installed,
        // a reason to skip. Importable there: the embedding is broken.
        reference_python(modules)?;
        panic!(
            "{PYTHON_VARIABLE}={} imports {module} but the embedded interpreter cannot: {error}",
            python.display()
        );
    }
    Ok(EmbeddedPython { _turn: turn })
}

/// The embedded interpreter's `major.minor.micro`.
fn version(py: Python<'_>) -> PyResult<String> {
    let info = py.import("sys")?.getattr("version_info")?;
    let part = |index: usize| -> PyResult<u32> { info.get_item(index)?.extract() };
    Ok(format!("{}.{}.{}", part(0)?, part(1)?, part(2)?))
}

/// Appends to `sys.path` each of `paths` it lacks, in order.
fn add_to_path(py: Python<'_>, paths: &[String]) -> PyResult<()> {
    let path = py.import("sys")?.getattr("path")?.cast_into::<PyList>()?;
    for entry in paths {
        if !path.contains(entry)? {
            path.append(entry)?;
        }
    }
    Ok(())
}
