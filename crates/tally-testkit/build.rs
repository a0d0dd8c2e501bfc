//! With the `python` feature, this crate's embedded-interpreter test must
//! load the libpython pyo3 linked it with, not another library of the same
//! name found first on the system's search path: an rpath to its directory.
fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::add_libpython_rpath_link_args();
}
