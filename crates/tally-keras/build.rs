//! The tests embed Python: they must load the libpython pyo3 linked them
//! with (the reference venv's base interpreter), not another library of the
//! same name the system's search path finds first, whose patch version
//! would not match the standard library the interpreter then imports. An
//! rpath to its directory does that; a library crate's link arguments
//! reach only its own tests, never a dependent's binaries.
//!
//! A workspace build with every feature also turns tally-torch's `libtorch`
//! on, and the tests then link libtorch too: tally-torch reports its
//! directory as `DEP_TALLY_TORCH_LIBTORCH_LIB`, which gets an rpath as well.
fn main() {
    pyo3_build_config::add_libpython_rpath_link_args();
    println!("cargo:rerun-if-env-changed=DEP_TALLY_TORCH_LIBTORCH_LIB");
    if let Some(lib) = std::env::var_os("DEP_TALLY_TORCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", std::path::PathBuf::from(lib).display());
    }
}
