//! The profiler's overhead on a real libtorch call, by the paired method of
//! [`super::paired_overhead`]: the `torch_overhead` example of tally-tests
//! (feature `torch`) builds
//! the MLP with tch::nn on the CPU and profiles it with the Torch adapter
//! over its VarStore; the reference is vertebrae's
//! `TorchResourceProfileAdapter` on the same network and batch.
//!
//! Skipped with a message when no Python with torch==2.13.0 is found to
//! build libtorch code against.

use super::BenchContext;
use super::paired_overhead::PairedOverhead;
use crate::gpu_check::torch::{path_with_python_first, torch_python};
use crate::workspace_root;

/// The reference's torch part: the same MLP on the threads given as the
/// first argument, and the extractor vertebrae's adapter reads.
const VERTEBRAE_TORCH: &str = r#"
import torch
from vertebrae.profiling import TorchResourceProfileAdapter

torch.set_num_threads(int(sys.argv[1]))
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers).eval()
x = torch.ones(batch, 512)

def call():
    with torch.no_grad():
        return model(x)

class Extractor:
    def __init__(self):
        self.model = model
    def get_resource_profile_adapter(self):
        return TorchResourceProfileAdapter(self)
"#;

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let Some(torch) = torch_python(&workspace_root()) else {
        println!(
            "torch: skipped: no python with torch==2.13.0 (TALLY_PYTHON, .venv, python3) to build \
             tally-torch against; let `cargo xtask test` install it into .venv"
        );
        return Ok(());
    };
    let path = path_with_python_first(&torch);
    let example = ctx.release_example_with("tally-tests", "torch_overhead", &["torch"], |cargo| {
        cargo.env("PATH", &path);
    })?;
    PairedOverhead {
        framework: "torch",
        example: &example,
        example_args: Vec::new(),
        vertebrae_setup: VERTEBRAE_TORCH,
        vertebrae_args: vec!["1".into()],
        target: None,
    }
    .run(ctx)
}
