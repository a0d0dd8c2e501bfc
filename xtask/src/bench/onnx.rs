//! The profiler's overhead on a real ONNX Runtime call, by the paired
//! method of [`super::paired_overhead`]: the `onnx_overhead` example of
//! tally-tests writes the MLP as an ONNX model and runs it with the ONNX adapter;
//! the reference is vertebrae's `ONNXResourceProfileAdapter` on the same
//! model file and batch, where the reference Python has `onnxruntime`.
//!
//! Target (issue 5): under 1% for a call of 1 ms or more. Skipped with a
//! message when no ONNX Runtime library is found (`ORT_DYLIB_PATH`, else
//! the onnxruntime wheel in `.venv`).

use std::path::PathBuf;

use super::BenchContext;
use super::paired_overhead::PairedOverhead;
use crate::workspace_root;

/// The reference's ONNX part: the session on the example's model file (the
/// first argument), one thread, and the extractor vertebrae's adapter reads.
const VERTEBRAE_ONNX: &str = r#"
import onnxruntime
from vertebrae.profiling import ONNXResourceProfileAdapter

model_path = sys.argv[1]
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = 1
session = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
feeds = {"x": np.random.RandomState(0).uniform(-1, 1, (batch, 512)).astype(np.float32)}

def call():
    return session.run(None, feeds)

class Extractor:
    def __init__(self):
        self._session = session
        self.model_path = model_path
    def get_resource_profile_adapter(self):
        return ONNXResourceProfileAdapter(self)
"#;

/// `ORT_DYLIB_PATH`, else the venv's onnxruntime wheel.
fn runtime_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(path));
    }
    crate::test::onnxruntime_library(&workspace_root().join(".venv/bin/python"))
}

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let Some(library) = runtime_library() else {
        println!(
            "onnx: skipped: no ONNX Runtime library (set ORT_DYLIB_PATH, or let `cargo xtask test` \
             install onnxruntime into .venv)"
        );
        return Ok(());
    };
    let example = ctx.release_example("tally-tests", "onnx_overhead")?;
    let dir = ctx.scratch_dir().join("onnx");
    PairedOverhead {
        framework: "onnx",
        example: &example,
        example_args: vec!["--lib".into(), library.into(), "--dir".into(), dir.clone().into()],
        vertebrae_setup: VERTEBRAE_ONNX,
        // The example wrote the model there.
        vertebrae_args: vec![dir.join("overhead_mlp.onnx").into()],
        target: Some("target < 1%"),
    }
    .run(ctx)
}
