//! With the `libtorch` feature: compiles the C++ shim against the libtorch
//! that torch-sys found, and makes this crate's tests and examples find
//! libtorch at run time. Without it (the `python` feature alone) there is
//! nothing native to build, and this does nothing.
//!
//! torch-sys (`links = "tch"`) tells direct dependents where libtorch's
//! libraries are through `DEP_TCH_LIBTORCH_LIB`. Its headers are beside them
//! (`<torch>/lib` and `<torch>/include`, both for a Python install and for a
//! libtorch zip), unless `LIBTORCH_INCLUDE` says otherwise, as torch-sys reads it.

use std::env;
#[cfg(feature = "libtorch")]
use std::path::{Path, PathBuf};
#[cfg(feature = "libtorch")]
use std::process::Command;

fn main() {
    // Cargo sets CARGO_FEATURE_<NAME> for the build script's run; the cfg
    // only keeps `cc` (an optional build dependency) out of a build without
    // the feature.
    if env::var_os("CARGO_FEATURE_LIBTORCH").is_some() {
        #[cfg(feature = "libtorch")]
        build_shim();
    } else {
        // Without this, cargo would rerun the script on any change in the crate.
        println!("cargo:rerun-if-changed=build.rs");
    }
}

#[cfg(feature = "libtorch")]
fn build_shim() {
    println!("cargo:rerun-if-changed=csrc/shim.cpp");
    for name in ["LIBTORCH_INCLUDE", "LIBTORCH_CXX11_ABI", "LIBTORCH_USE_PYTORCH", "VIRTUAL_ENV", "PATH"] {
        println!("cargo:rerun-if-env-changed={name}");
    }
    let Some(lib_dir) = env::var_os("DEP_TCH_LIBTORCH_LIB").map(PathBuf::from) else {
        // torch-sys only reports the directory on Linux and macOS; elsewhere
        // the shim cannot be built against a known libtorch.
        panic!("torch-sys did not report DEP_TCH_LIBTORCH_LIB (tally-torch supports Linux and macOS)");
    };
    let include_root = match env::var_os("LIBTORCH_INCLUDE") {
        Some(root) => PathBuf::from(root).join("include"),
        None => lib_dir.parent().unwrap_or(Path::new("/")).join("include"),
    };
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(&include_root)
        .include(include_root.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag(format!("-D_GLIBCXX_USE_CXX11_ABI={}", cxx11_abi()))
        .flag("-DGLOG_USE_GLOG_EXPORT")
        .file("csrc/shim.cpp")
        .compile("tally_torch_shim");

    let lib = lib_dir.display();
    // Without an rpath, test binaries exit 127 (libtorch_cpu.so not found).
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    // rustc links with --as-needed; libtorch.so is only a set of NEEDED
    // entries (torch_cpu, torch_cuda), so keep it or CUDA is never registered.
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("macos") {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch,--as-needed");
    }
    // The umbrella crate reads this as DEP_TALLY_TORCH_LIBTORCH_LIB to give
    // the `tally` binary the same rpath.
    println!("cargo:libtorch_lib={lib}");
}

/// The C++ ABI libtorch was built with, found as torch-sys finds it.
#[cfg(feature = "libtorch")]
fn cxx11_abi() -> String {
    if let Ok(abi) = env::var("LIBTORCH_CXX11_ABI") {
        return abi;
    }
    if env::var_os("LIBTORCH_USE_PYTORCH").is_some() {
        let python = if env::var_os("VIRTUAL_ENV").is_some() { "python" } else { "python3" };
        let output = Command::new(python)
            .args(["-c", "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"])
            .output();
        if let Ok(output) = output
            && output.status.success()
        {
            let abi = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if abi == "0" || abi == "1" {
                return abi;
            }
        }
        panic!("could not ask {python} for torch._C._GLIBCXX_USE_CXX11_ABI (is torch installed there?)");
    }
    "1".to_owned()
}
