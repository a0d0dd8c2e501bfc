"""tally's KerasResourceProfileAdapter against vertebrae's on one Keras
backend: the one ``KERAS_BACKEND`` names. Keras fixes its backend at import,
so test_keras.py runs this module once per backend, each in its own pytest
process; it is not collected on its own (its name does not start with
``test_``)."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

BACKEND = os.environ.get("KERAS_BACKEND")
if not BACKEND:
    pytest.fail("keras_backend_suite.py runs under test_keras.py, which sets KERAS_BACKEND", pytrace=False)

keras = pytest.importorskip("keras", reason="keras is not installed in the venv (python/requirements.txt installs it)")

import tally.profiling as tp  # noqa: E402
import vertebrae.profiling as vp  # noqa: E402
from vertebrae.config import ResourceProfilingConfig as VertebraeConfig  # noqa: E402
from vertebrae_parity import HOOKS, answer, assert_profiles_agree  # noqa: E402


def test_keras_runs_on_the_backend_asked_for():
    assert keras.backend.backend() == BACKEND


def dense_model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2, activation="relu")])


def normalized_model():
    # BatchNormalization's moving statistics are non-trainable weights, and a
    # float16 layer adds a second dtype.
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(5)(inputs)
    hidden = keras.layers.BatchNormalization()(hidden)
    outputs = keras.layers.Dense(2, dtype="float16")(hidden)
    return keras.Model(inputs, outputs)


def shared_model():
    # One layer applied twice: its weights appear once.
    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,))
    shared = keras.layers.Dense(3)
    return keras.Model(inputs, shared(shared(inputs)))


def frozen_model():
    model = dense_model()
    model.layers[0].trainable = False
    return model


MODELS = {
    "dense": dense_model,
    "normalized": normalized_model,
    "shared": shared_model,
    "frozen": frozen_model,
}
# Building a Keras model is most of a hook test's time; the adapters only
# read a model, so the hook tests share one of each.
BUILT = {}


def built(name):
    if name not in BUILT:
        BUILT[name] = MODELS[name]()
    return BUILT[name]


class ByModel:
    def __init__(self, model):
        self.model = model


class ByPrivateModel:
    def __init__(self, model):
        self._model = model


class WithoutModel:
    pass


class WithLoader:
    """An extractor that hands the adapter its own Keras module."""

    def __init__(self, model):
        self.model = model
        self.loads = 0

    def _load_keras(self):
        self.loads += 1
        return keras


EXTRACTORS = {
    "model": ByModel,
    "private": ByPrivateModel,
    "loader": WithLoader,
}

DEVICES = (None, "cpu", "CPU:0", "/device:CPU:0", "GPU:0", "cuda:0")


CASES = [(model, extractor, device) for model in MODELS for extractor in EXTRACTORS for device in DEVICES]


@pytest.mark.parametrize("model,extractor,device", CASES)
@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_answers_as_vertebraes(model, extractor, device, hook):
    kwargs = {} if device is None else {"profiling_device": device}
    ours = tp.KerasResourceProfileAdapter(EXTRACTORS[extractor](built(model)), **kwargs)
    theirs = vp.KerasResourceProfileAdapter(EXTRACTORS[extractor](built(model)), **kwargs)
    assert answer(ours, hook) == answer(theirs, hook)


@pytest.mark.parametrize("hook", HOOKS)
def test_an_extractor_without_a_model_answers_as_vertebraes(hook):
    assert answer(tp.KerasResourceProfileAdapter(WithoutModel()), hook) == answer(
        vp.KerasResourceProfileAdapter(WithoutModel()), hook
    )


def test_the_backend_is_asked_of_the_extractors_keras_once():
    for module in (tp, vp):
        extractor = WithLoader(dense_model())
        adapter = module.KerasResourceProfileAdapter(extractor)
        for hook in HOOKS:
            getattr(adapter, hook)()
        assert extractor.loads == 1, module.__name__


def test_metadata_names_the_keras_backend():
    model = dense_model()
    metadata = tp.KerasResourceProfileAdapter(ByModel(model)).metadata()
    assert metadata.backend == f"keras-{BACKEND}"
    # One dtype, spelled as the backend's variables spell it ("float32",
    # "torch.float32", "<dtype: 'float32'>"), as vertebrae reports it.
    assert len(metadata.weight_dtypes) == 1 and "float32" in metadata.weight_dtypes[0]
    assert metadata.weight_dtypes == vp.KerasResourceProfileAdapter(ByModel(model)).metadata().weight_dtypes


def test_artifacts_are_measured_as_vertebrae_measures_them(tmp_path):
    model = dense_model()
    saved = tmp_path / "model.keras"
    model.save(saved)
    declared = [str(saved), vp.DeploymentArtifact(str(tmp_path), role="bundle", recursive=True)]
    ours_declared = [str(saved), tp.DeploymentArtifact(str(tmp_path), role="bundle", recursive=True)]
    ours = tp.KerasResourceProfileAdapter(ByModel(model), ours_declared)
    theirs = vp.KerasResourceProfileAdapter(ByModel(model), declared)
    assert answer(ours, "deployment_artifacts") == answer(theirs, "deployment_artifacts")
    assert [item.role for item in ours.deployment_artifacts()] == ["checkpoint", "bundle"]


def to_backend(array):
    if BACKEND == "torch":
        import torch

        return torch.from_numpy(array)
    return array


def profile(module, config, model_name, device):
    model = MODELS[model_name]()

    class KerasExtractor:
        def __init__(self):
            self.model = model

        def get_resource_profile_adapter(self):
            kwargs = {} if device is None else {"profiling_device": device}
            return module.KerasResourceProfileAdapter(self, **kwargs)

        def __call__(self, batch):
            return keras.ops.convert_to_numpy(self.model(to_backend(batch)))

    extractor = KerasExtractor()
    profiler = module.ResourceProfiler(config, extractor, streaming=False)
    width = model.inputs[0].shape[-1]
    for size in (4, 8, 8):
        batch = np.ones((size, width), dtype="float32")
        profiler.measure_call(lambda: extractor(batch), samples=size, call_type="batch")
    return dataclasses.asdict(profiler.finish())


@pytest.mark.parametrize("model_name", ["dense", "normalized"])
@pytest.mark.parametrize("device", [None, "cpu"])
def test_profiles_with_the_keras_adapter_agree_with_vertebraes(model_name, device):
    ours = profile(tp, tp.ResourceProfilingConfig(enabled=True), model_name, device)
    theirs = profile(vp, VertebraeConfig(enabled=True), model_name, device)
    assert_profiles_agree(ours, theirs, "KerasResourceProfileAdapter", host_status="measured")


@pytest.mark.gpu
def test_device_memory_on_a_gpu_backend():
    visible = {
        "tensorflow": lambda: __import__("tensorflow").config.list_logical_devices("GPU"),
        "torch": lambda: __import__("torch").cuda.is_available(),
        "jax": lambda: [d for d in __import__("jax").devices() if d.platform == "gpu"],
    }.get(BACKEND, lambda: False)()
    if not visible:
        pytest.skip(f"no GPU visible to Keras's {BACKEND} backend: the device-memory window is checked by cargo xtask gpu-check")
    model = dense_model()
    ours = tp.KerasResourceProfileAdapter(ByModel(model))
    theirs = vp.KerasResourceProfileAdapter(ByModel(model))
    assert answer(ours, "reset_peak_device_memory") == answer(theirs, "reset_peak_device_memory")
    model(to_backend(np.ones((64, 4), dtype="float32")))
    ours_peak, theirs_peak = ours.peak_device_memory(), theirs.peak_device_memory()
    assert ours_peak.status == theirs_peak.status
    assert ours_peak.backend == f"keras-{BACKEND}"
