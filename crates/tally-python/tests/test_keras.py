"""tally's KerasResourceProfileAdapter on each Keras backend: keras fixes
its backend at import, so keras_backend_suite.py runs once per backend in a
pytest process of its own (tensorflow, jax and torch delegate to those
adapters; numpy is a backend vertebrae does not profile devices on)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("keras", reason="keras is not installed in the venv (python/requirements.txt installs it)")

SUITE = Path(__file__).with_name("keras_backend_suite.py")


def run_suite(backend, *selection):
    environment = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-x", *selection, str(SUITE)],
        env=environment,
        capture_output=True,
        text=True,
        cwd=SUITE.parent,
    )


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch", "numpy"])
def test_keras_adapter_agrees_with_vertebraes_on_backend(backend):
    run = run_suite(backend, "-m", "not gpu")
    assert run.returncode == 0, f"Keras on {backend}:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    # The child's own summary: it ran tests and none failed.
    assert " passed" in run.stdout.splitlines()[-1], run.stdout[-2000:]


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_keras_device_memory_on_a_gpu_backend(backend):
    run = run_suite(backend, "-m", "gpu")
    assert run.returncode == 0, f"Keras on {backend}:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    summary = run.stdout.splitlines()[-1]
    if " passed" not in summary:
        reasons = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
        pytest.skip(f"Keras on {backend}: {reasons[0] if reasons else summary}")
