//! Paths as Python takes and reports them: one path or several, opened
//! with the errors Python's `open` raises.

use std::fs::File;
use std::path::{Path, PathBuf};

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// The longest artifact line the Python API reads. stormlog reads a line
/// of any length, so the limit is far past any real record (the command's
/// default is much lower: it guards shared machines against hostile
/// input); the reader touches a long line's pages only as it reads them.
pub const MAX_RECORD_BYTES: usize = 1 << 30;

/// An error opening or reading `path` as Python raises it: the `OSError`
/// subclass of its errno (`FileNotFoundError`, `PermissionError`,
/// `IsADirectoryError`, ...) with `errno`, `strerror` and `filename`, as
/// `OSError(errno, strerror, filename)` picks it.
pub fn os_error(error: &std::io::Error, path: &Path) -> PyErr {
    let filename = path.to_string_lossy().into_owned();
    match error.raw_os_error() {
        Some(code) => {
            // std words an OS error as libc's strerror text (Python's
            // `os.strerror`) followed by " (os error N)".
            let text = error.to_string();
            let strerror = text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_owned();
            PyOSError::new_err((code, strerror, filename))
        }
        None => PyOSError::new_err(format!("{filename}: {error}")),
    }
}

/// Opens `path` for reading as Python's `open` would: a directory is
/// `IsADirectoryError` (Linux opens one, then fails at the first read).
pub fn open(path: &Path) -> PyResult<File> {
    let file = File::open(path).map_err(|error| os_error(&error, path))?;
    if file.metadata().is_ok_and(|metadata| metadata.is_dir()) {
        return Err(os_error(&std::io::Error::from_raw_os_error(libc::EISDIR), path));
    }
    Ok(file)
}

/// Checks that `path` could be created for writing, as Python's
/// `open(path, "w")` checks it: not a directory, in a directory that
/// exists. tally writes through a temporary file beside `path`, whose own
/// error would name that file instead.
pub fn check_writable(path: &Path) -> PyResult<()> {
    if path.is_dir() {
        return Err(os_error(&std::io::Error::from_raw_os_error(libc::EISDIR), path));
    }
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(os_error(&std::io::Error::from_raw_os_error(libc::ENOENT), path));
    }
    Ok(())
}

/// One path (`str` or `os.PathLike`) or an iterable of them, the one rule
/// of every function that takes "a path or paths" (tally's own
/// `account_paths` and `import_trace`; stormlog has none). A function
/// that takes one path takes a `PathBuf`, which reads a path the same way
/// (`str` or `os.PathLike`, as stormlog's `Path(path)`; `bytes` is one
/// path here too, refused with the same `TypeError`), and an adapter's
/// `artifacts` are vertebrae's sequence, iterated as vertebrae iterates it
/// (`adapters::artifacts_from`).
pub fn one_or_many(value: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if value.cast::<PyString>().is_ok() || value.cast::<PyBytes>().is_ok() || value.hasattr("__fspath__")? {
        return Ok(vec![value.extract()?]);
    }
    value.try_iter()?.map(|item| item?.extract()).collect()
}
