//! A missing or wrong ONNX Runtime library is an error naming the path,
//! never a panic. Its own test binary (process), since a process can load
//! ONNX Runtime only once: the failures come first, then the real library.

mod common;

use std::path::{Path, PathBuf};

use tally_onnx::{LibraryPath, LibrarySource, LoadError, OnnxRuntime};

/// Some shared library that is not ONNX Runtime: the provider bridge beside
/// the wheel's runtime, else the C math library.
fn other_shared_library(runtime: Option<&Path>) -> Option<PathBuf> {
    let sibling = runtime.and_then(Path::parent).map(|dir| dir.join("libonnxruntime_providers_shared.so"));
    let system = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
        "/usr/lib64/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
    ];
    sibling.into_iter().chain(system.iter().map(PathBuf::from)).find(|path| path.is_file())
}

#[test]
fn wrong_libraries_are_errors_then_the_right_one_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let explicit = |path: &Path| LibraryPath { path: path.to_path_buf(), origin: LibrarySource::Explicit };

    let missing = dir.path().join("libonnxruntime.so.missing");
    let error = OnnxRuntime::load(Some(&missing)).expect_err("missing");
    assert!(matches!(error, LoadError::NotFound { .. }), "{error}");
    assert!(error.to_string().contains(&missing.display().to_string()), "names the path: {error}");

    let error = OnnxRuntime::load(Some(dir.path())).expect_err("directory");
    assert!(matches!(error, LoadError::NotAFile { .. }), "{error}");

    let model = common::fixture("mlp_f32_f16.onnx");
    let error = OnnxRuntime::load(Some(&model)).expect_err("not a library");
    assert!(matches!(error, LoadError::NotALibrary { .. }), "{error}");

    if cfg!(target_os = "linux") {
        let fake = dir.path().join("libfake.so");
        std::fs::write(&fake, b"\x7fELF garbage that is not a shared object").expect("write");
        let error = OnnxRuntime::load_from(&explicit(&fake)).expect_err("bad ELF");
        assert!(matches!(error, LoadError::NotALibrary { .. }), "{error}");
    }

    let runtime = common::runtime_library();
    match other_shared_library(runtime.as_deref()) {
        Some(other) => {
            let error = OnnxRuntime::load(Some(&other)).expect_err("not ONNX Runtime");
            assert!(matches!(error, LoadError::NotOnnxRuntime { .. }), "{other:?}: {error}");
            assert!(error.to_string().contains("OrtGetApiBase"), "{error}");
        }
        None => tally_testkit::skip("no other shared library found to load as a wrong runtime"),
    }

    let Some(library) = runtime else { return };
    let loaded = OnnxRuntime::load(Some(&library)).expect("the real library loads after the failures");
    assert!(tally_onnx::runtime::version_supported(
        loaded.version(),
        tally_onnx::runtime::REQUIRED_MINOR_VERSION
    ));
    let again = OnnxRuntime::load(Some(&library)).expect("loading again returns the same runtime");
    assert_eq!(again.library(), loaded.library());
    if let Some(other) = other_shared_library(Some(&library)) {
        let error = OnnxRuntime::load(Some(&other)).expect_err("a second runtime");
        assert!(matches!(error, LoadError::AlreadyLoaded { .. }), "{error}");
    }
}

#[test]
fn locate_prefers_the_explicit_path() {
    let explicit = LibraryPath::locate(Some(Path::new("/opt/ort/libonnxruntime.so"))).expect("explicit");
    assert_eq!(explicit.origin, LibrarySource::Explicit);
    match std::env::var_os(tally_onnx::ORT_DYLIB_PATH).filter(|value| !value.is_empty()) {
        Some(value) => {
            let located = LibraryPath::locate(None).expect("from the environment");
            assert_eq!(located.origin, LibrarySource::Environment);
            assert_eq!(located.path, PathBuf::from(value));
        }
        None => {
            let error = LibraryPath::locate(None).expect_err("nothing configured");
            assert_eq!(error, LoadError::NotConfigured);
            assert!(error.to_string().contains("ORT_DYLIB_PATH"));
        }
    }
}
