//! `python::embedded_python`: the embedded interpreter sees the reference
//! Python's packages, and a module the reference lacks is a reason to skip.

use pyo3::prelude::*;
use tally_testkit::python::embedded_python;
use tally_testkit::{reference_python, skip};

#[test]
fn the_embedded_interpreter_imports_from_the_reference_paths() {
    let Ok(reference) = reference_python(&["numpy"]) else {
        return skip("TALLY_PYTHON is not set or lacks numpy");
    };
    let _python =
        embedded_python(&["numpy"]).expect("the reference imports numpy, so the embedded interpreter does");
    let output = tally_testkit::run_python(&reference, "import numpy; print(numpy.__file__)", b"");
    let theirs = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let ours =
        Python::attach(|py| -> PyResult<String> { py.import("numpy")?.getattr("__file__")?.extract() });
    assert_eq!(ours.expect("numpy.__file__"), theirs, "the same numpy as the reference's");
}

#[test]
fn a_module_the_reference_lacks_is_a_reason_to_skip() {
    if reference_python(&[]).is_err() {
        return skip("TALLY_PYTHON is not set");
    }
    let Err(why) = embedded_python(&["tally_testkit_no_such_module"]) else {
        panic!("no such module, yet no reason to skip");
    };
    assert!(why.contains("cannot import tally_testkit_no_such_module"), "{why}");
}
