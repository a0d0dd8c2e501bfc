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
        None => match LibraryPath::locate(None) {
            // The python3 on PATH may have the onnxruntime package.
            Ok(located) => {
                assert_eq!(located.origin, LibrarySource::PythonPackage);
                assert!(located.path.is_file(), "{}", located.path.display());
            }
            Err(error) => {
                assert_eq!(error, LoadError::NotConfigured);
                assert!(error.to_string().contains("ORT_DYLIB_PATH"));
                assert!(!error.to_string().contains("--"), "a library error names no flag: {error}");
            }
        },
    }
}

#[test]
fn the_onnxruntime_package_of_a_python_is_found() {
    let python = match tally_testkit::reference_python(&["onnxruntime"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(format!("no Python with onnxruntime: {why}")),
    };
    let found = tally_onnx::python_package_library(&python).expect("the wheel's library");
    let name = found.file_name().and_then(|name| name.to_str()).expect("a file name");
    assert!(name.starts_with("libonnxruntime.so."), "{}", found.display());
    assert_eq!(found.parent().and_then(|capi| capi.file_name()), Some(std::ffi::OsStr::new("capi")));
    // The runtime it names loads, and is the one the wheel reports.
    let version =
        OnnxRuntime::load_from(&LibraryPath { path: found.clone(), origin: LibrarySource::PythonPackage })
            .map(|runtime| runtime.version().to_owned());
    if let Ok(version) = version {
        let reported =
            tally_testkit::run_python(&python, "import onnxruntime; print(onnxruntime.__version__)", b"");
        assert_eq!(String::from_utf8_lossy(&reported.stdout).trim(), version);
    }
    // An interpreter that does not exist finds nothing, and says nothing.
    assert_eq!(tally_onnx::python_package_library(Path::new("/nonexistent/python3")), None);
}
