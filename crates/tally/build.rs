//! With the `torch` feature, the `tally` binary (and this crate's tests)
//! link libtorch dynamically: give them an rpath to its directory, which
//! tally-torch reports as `DEP_TALLY_TORCH_LIBTORCH_LIB`, and keep
//! `libtorch.so` (only NEEDED entries, dropped by --as-needed) so that its
//! CUDA half registers where there is a GPU. Without the feature this
//! does nothing.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TALLY_TORCH_LIBTORCH_LIB");
    if let Some(lib) = std::env::var_os("DEP_TALLY_TORCH_LIBTORCH_LIB") {
        let lib = std::path::PathBuf::from(lib);
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
        if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("macos") {
            println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch,--as-needed");
        }
    }
}
