//! Shared by the integration tests: fixture paths, finding the runtime
//! library, and the fixture networks computed in plain Rust.

#![allow(dead_code, reason = "each test binary uses part of this module")]

pub mod reference;

use std::path::{Path, PathBuf};

/// The fixture folder; this module is also compiled into the `tally`
/// crate's tests, hence the path through the crates folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tally-onnx/tests/fixtures")
}

pub fn fixture(name: &str) -> PathBuf {
    fixtures().join(name)
}

pub fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("expected.json")).expect("expected.json is committed");
    serde_json::from_str(&text).expect("expected.json is JSON")
}

/// The ONNX Runtime library: `ORT_DYLIB_PATH`, else the repository venv's
/// onnxruntime wheel. `None` (after saying the calling test skipped) when
/// there is none.
pub fn runtime_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found = venv_library(&workspace.join(".venv"));
    if found.is_none() {
        tally_testkit::skip("no ONNX Runtime library (ORT_DYLIB_PATH unset, none in .venv)");
    }
    found
}

fn venv_library(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    for python in lib.flatten() {
        let capi = python.path().join("site-packages/onnxruntime/capi");
        let Ok(entries) = std::fs::read_dir(&capi) else { continue };
        let mut candidates: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name().and_then(|name| name.to_str()).is_some_and(|name| {
                    name.starts_with("libonnxruntime.so.") || name == "libonnxruntime.dylib"
                })
            })
            .collect();
        candidates.sort();
        if let Some(last) = candidates.pop() {
            return Some(last);
        }
    }
    None
}
