//! The tests embed Python: they must load the libpython pyo3 linked them
//! with (the reference venv's base interpreter), not another library of the
//! same name the system's search path finds first, whose patch version
//! would not match the standard library the interpreter then imports. An
//! rpath to its directory does that; a library crate's link arguments
//! reach only its own tests, never a dependent's binaries.
fn main() {
    pyo3_build_config::add_libpython_rpath_link_args();
}
