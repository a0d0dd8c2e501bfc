"""tally's TensorFlowResourceProfileAdapter (tally-tensorflow, through the
package) against vertebrae's on the same real TensorFlow objects (CPU):
every hook's answer for each model, extractor shape, profiling hint and
artifact list, and the profile each library's profiler builds with its
adapter over the same calls."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

# Keras picks its backend when it is imported; these tests are about the
# TensorFlow backend whatever the environment says.
os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

tf = pytest.importorskip("tensorflow", reason="tensorflow is not installed in the venv (python/requirements.txt installs it)")

# Two logical CPUs, so a model can really sit on two devices. TensorFlow
# accepts this only before its runtime starts: when an earlier test module
# of the session started it, the test that needs two devices re-runs in a
# fresh interpreter (see test_a_model_on_two_devices_is_ambiguous_as_in_vertebrae).
try:
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0],
        [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()],
    )
    TWO_CPUS = True
except RuntimeError:
    TWO_CPUS = False

keras = pytest.importorskip("keras", reason="keras is not installed in the venv (python/requirements.txt installs it)")
np = pytest.importorskip("numpy")

import tally.profiling as tp  # noqa: E402
import vertebrae.profiling as vp  # noqa: E402
from vertebrae.config import ResourceProfilingConfig as VertebraeConfig  # noqa: E402
from vertebrae_parity import HOOKS, answer, assert_profiles_agree  # noqa: E402

assert keras.backend.backend() == "tensorflow", "KERAS_BACKEND was read before this module set it"

GPUS = tf.config.list_logical_devices("GPU")


def tf_module():
    """A tf.Module with trainable and frozen variables of several dtypes;
    `alias` is `kernel` again (tf.Module lists it once)."""
    module = tf.Module()
    module.kernel = tf.Variable(tf.ones((4, 3), tf.float32))
    module.half = tf.Variable(tf.zeros((3,), tf.float16))
    module.brain = tf.Variable(tf.zeros((2, 2), tf.bfloat16))
    module.steps = tf.Variable(tf.zeros((5,), tf.int32), trainable=False)
    module.scale = tf.Variable(tf.ones((), tf.float64), trainable=False)
    module.alias = module.kernel
    return module


class SharedWeights:
    """A model object listing one variable twice in both lists, as a model
    with a tied embedding does: vertebrae counts each object once."""

    def __init__(self):
        tied = tf.Variable(tf.ones((6, 2), tf.float32))
        frozen = tf.Variable(tf.zeros((3,), tf.int32), trainable=False)
        self.trainable_weights = [tied, tied]
        self.weights = [tied, frozen, tied]


class WeightsOnly:
    """A model object with `weights` and no trainable list: all of them
    count as trainable."""

    def __init__(self):
        self.weights = [tf.Variable(tf.ones((2, 5), tf.float16)), tf.Variable(tf.ones((7,), tf.int32))]


class Frozen:
    """A model whose trainable lists exist and are empty."""

    def __init__(self):
        self.trainable_variables = []
        self.variables = [tf.Variable(tf.ones((4,), tf.float32), trainable=False)]


class BrokenWeights:
    """A model whose `weights` property fails (not with AttributeError)."""

    @property
    def weights(self):
        raise RuntimeError("weights are still loading")


class HiddenWeights:
    """A model whose `weights` property raises AttributeError: Python's
    getattr reads that as absent and falls back to `variables`."""

    variables = [tf.Variable(tf.ones((3, 3), tf.float32))]

    @property
    def weights(self):
        raise AttributeError("no weights here")


def unknown_shape():
    module = tf.Module()
    module.v = tf.Variable(tf.ones((2,)), shape=tf.TensorShape(None))
    return module


def keras_model():
    """A Keras 3 model on the TensorFlow backend: Dense kernels and biases
    (trainable), BatchNormalization's moving statistics (not)."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()])
    return model


def keras_half():
    """A Keras model whose layers keep float16 and bfloat16 weights."""
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(2, dtype="float16")(inputs)
    outputs = keras.layers.Dense(2, dtype="bfloat16")(hidden)
    return keras.Model(inputs, outputs)


def empty_module():
    return tf.Module()


MODELS = {
    "module": tf_module(),
    "shared": SharedWeights(),
    "weights_only": WeightsOnly(),
    "frozen": Frozen(),
    "broken": BrokenWeights(),
    "hidden": HiddenWeights(),
    "unknown_shape": unknown_shape(),
    "keras": keras_model(),
    "keras_half": keras_half(),
    "empty": empty_module(),
    "none": None,
}


class ModelExtractor:
    """An extractor exposing `.model` (vertebrae's first choice)."""

    def __init__(self, model):
        self.model = model


class PrivateExtractor:
    """An extractor exposing `._model` only."""

    def __init__(self, model):
        self._model = model


class NoModelExtractor:
    """An extractor with neither."""


class NoneModelExtractor:
    """`.model` is None: vertebrae falls back to `._model`."""

    def __init__(self, model):
        self.model = None
        self._model = model


# Where the extractor keeps its model; "getter" gives it through
# model_getter instead, "nothing" has none at all.
EXTRACTORS = {"model": ModelExtractor, "private": PrivateExtractor, "none_then_private": NoneModelExtractor}


def extractor_and_options(model_name, shape):
    model = MODELS[model_name]
    if shape == "nothing":
        return NoModelExtractor(), {}
    if shape == "getter":
        return NoModelExtractor(), {"model_getter": lambda: model}
    return EXTRACTORS[shape](model), {}


HINTS = (None, "", "GPU:0", "/device:CPU:0", "cpu:0")

CASES = [(model, "model", hint) for model in MODELS for hint in HINTS] + [
    (model, shape, None) for model in ("module", "keras", "none") for shape in ("private", "none_then_private", "getter", "nothing")
]


def make(module, model_name, shape, hint, artifacts=(), **extra):
    extractor, options = extractor_and_options(model_name, shape)
    if hint is not None:
        options["profiling_device"] = hint
    options.update(extra)
    return module.TensorFlowResourceProfileAdapter(extractor, artifacts, **options)


@pytest.mark.parametrize("model,shape,hint", CASES, ids=[f"{m}-{s}-{h!r}" for m, s, h in CASES])
def test_every_hook_answers_as_vertebraes(model, shape, hint):
    ours, theirs = make(tp, model, shape, hint), make(vp, model, shape, hint)
    for hook in HOOKS:
        assert answer(ours, hook) == answer(theirs, hook), hook


def test_the_cases_reach_every_resolution_and_footprint_outcome():
    """The parametrized cases are not vacuous: they see each resolution
    vertebrae can give on this machine and each footprint outcome."""
    resolutions, statuses, errors = set(), set(), set()
    for model, shape, hint in CASES:
        adapter = make(vp, model, shape, hint)
        kind, _, value = answer(adapter, "metadata")
        if kind == "ok":
            resolutions.add(value["device_resolution"])
        kind, _, value = answer(adapter, "model_footprint")
        (statuses if kind == "ok" else errors).add(value["status"] if kind == "ok" else value)
    expected = {"model_state", "model_state_conflicts_with_profiling_hint", "explicit_profiling_hint"}
    expected.add("default_cpu" if not GPUS else "single_visible_gpu" if len(GPUS) == 1 else "ambiguous_visible_devices")
    assert expected <= resolutions
    assert statuses == {"measured", "unavailable"}
    assert "weights are still loading" in errors
    assert "Cannot iterate over a shape with unknown rank." in errors


def test_footprint_figures_are_the_variables_once_each():
    # Hand-checked against vertebrae's, so a shared mistake would show.
    module = dataclasses.asdict(make(tp, "module", "model", None).model_footprint())
    # kernel 12 x 4, half 3 x 2, brain 4 x 2; steps 5 x 4, scale 1 x 8.
    assert (module["parameter_count"], module["parameter_bytes"]) == (12 + 3 + 4 + 5 + 1, 48 + 6 + 8 + 20 + 8)
    assert (module["trainable_parameter_count"], module["trainable_parameter_bytes"]) == (19, 62)
    assert module["weight_dtypes"] == ("unknown",), "a tf.Variable's value is a method: vertebrae names it unknown"
    shared = dataclasses.asdict(make(tp, "shared", "model", None).model_footprint())
    assert (shared["parameter_count"], shared["parameter_bytes"]) == (15, 60)
    assert (shared["trainable_parameter_count"], shared["trainable_parameter_bytes"]) == (12, 48)
    weights_only = dataclasses.asdict(make(tp, "weights_only", "model", None).model_footprint())
    assert weights_only["trainable_parameter_count"] == weights_only["parameter_count"] == 17
    frozen = dataclasses.asdict(make(tp, "frozen", "model", None).model_footprint())
    assert (frozen["trainable_parameter_count"], frozen["parameter_count"]) == (0, 4)
    half = dataclasses.asdict(make(tp, "keras_half", "model", None).model_footprint())
    assert half["weight_dtypes"] == ("<dtype: 'bfloat16'>", "<dtype: 'float16'>")
    assert half["parameter_bytes"] == (4 * 2 + 2) * 2 + (2 * 2 + 2) * 2


def artifact_lists(module, tmp_path):
    (tmp_path / "weights.h5").write_bytes(b"\0" * 300)
    shards = tmp_path / "saved_model"
    (shards / "variables").mkdir(parents=True, exist_ok=True)
    (shards / "saved_model.pb").write_bytes(b"\1" * 40)
    (shards / "variables" / "variables.data").write_bytes(b"\2" * 200)
    return {
        "strings": [str(tmp_path / "weights.h5"), str(shards)],
        "objects": (
            module.DeploymentArtifact(str(shards), role="saved_model", recursive=True),
            module.DeploymentArtifact(str(tmp_path / "weights.h5")),
        ),
        "mixed": [str(tmp_path / "missing.ckpt"), module.DeploymentArtifact(str(tmp_path / "weights.h5"), role="weights")],
        "pathlike": [tmp_path / "weights.h5"],
    }


@pytest.mark.parametrize("kind", ["strings", "objects", "mixed", "pathlike"])
def test_artifacts_answer_as_vertebraes(kind, tmp_path):
    ours = make(tp, "keras", "model", None, artifact_lists(tp, tmp_path)[kind])
    theirs = make(vp, "keras", "model", None, artifact_lists(vp, tmp_path)[kind])
    assert answer(ours, "deployment_artifacts") == answer(theirs, "deployment_artifacts")
    assert answer(ours, "deployment_artifacts")[1] == "tuple"
    assert all(type(item) is tp.DeploymentArtifact for item in ours.deployment_artifacts())


def test_vertebraes_artifact_objects_are_accepted_as_tallys():
    artifact = vp.DeploymentArtifact("/tmp/model.keras", role="keras")
    ours = tp.TensorFlowResourceProfileAdapter(ModelExtractor(None), [artifact])
    assert [dataclasses.asdict(item) for item in ours.deployment_artifacts()] == [dataclasses.asdict(artifact)]


def test_bad_artifacts_raise_as_vertebraes():
    for artifacts in ([""], 5):
        outcomes = []
        for module in (tp, vp):
            try:
                module.TensorFlowResourceProfileAdapter(ModelExtractor(None), artifacts)
                outcomes.append(None)
            except Exception as error:
                outcomes.append(type(error).__name__)
        assert outcomes[0] == outcomes[1] and outcomes[0] is not None, (artifacts, outcomes)


def test_attributes_and_defaults_are_vertebraes():
    extractor = ModelExtractor(MODELS["keras"])
    ours = tp.TensorFlowResourceProfileAdapter(extractor)
    theirs = vp.TensorFlowResourceProfileAdapter(extractor)
    for name in ("extractor", "backend", "profiling_device"):
        assert getattr(ours, name) is getattr(theirs, name) or getattr(ours, name) == getattr(theirs, name), name
    assert ours.extractor is extractor
    assert isinstance(ours, tp.BaseResourceProfileAdapter)
    custom = dict(backend="keras-tensorflow", profiling_device="gpu:1")
    ours = tp.TensorFlowResourceProfileAdapter(extractor, **custom)
    theirs = vp.TensorFlowResourceProfileAdapter(extractor, **custom)
    assert (ours.backend, ours.profiling_device) == ("keras-tensorflow", "gpu:1")
    for hook in HOOKS:
        assert answer(ours, hook) == answer(theirs, hook), hook


def test_the_model_getter_is_asked_as_often_as_vertebraes_asks():
    counts = {}

    def counting(name):
        def getter():
            counts[name] = counts.get(name, 0) + 1
            return MODELS["keras"]

        return getter

    for module in (tp, vp):
        adapter = module.TensorFlowResourceProfileAdapter(NoModelExtractor(), model_getter=counting(module.__name__))
        for hook in HOOKS:
            getattr(adapter, hook)()
    assert counts["tally.profiling"] == counts["vertebrae.profiling"] > 0


def test_a_failing_model_getter_raises_its_own_exception():
    def broken():
        raise LookupError("no model yet")

    for hook in HOOKS:
        ours = answer(tp.TensorFlowResourceProfileAdapter(NoModelExtractor(), model_getter=broken), hook)
        theirs = answer(vp.TensorFlowResourceProfileAdapter(NoModelExtractor(), model_getter=broken), hook)
        assert ours == theirs, hook
    assert answer(tp.TensorFlowResourceProfileAdapter(NoModelExtractor(), model_getter=broken), "metadata")[0] == "error"


def test_a_user_subclass_overrides_a_hook():
    class Pinned(tp.TensorFlowResourceProfileAdapter):
        def model_footprint(self):
            return tp.ModelFootprintMeasurement(status="unavailable", unavailable_reason="pinned")

    adapter = Pinned(ModelExtractor(MODELS["keras"]))
    assert adapter.model_footprint().unavailable_reason == "pinned"
    assert adapter.metadata().backend == "tensorflow"


def two_device_model():
    with tf.device("/CPU:1"):
        first = keras.layers.Dense(2)
        first.build((None, 3))
    second = keras.layers.Dense(2)
    second.build((None, 2))
    inputs = keras.Input((3,))
    return keras.Model(inputs, second(first(inputs)))


def test_a_model_on_two_devices_is_ambiguous_as_in_vertebrae():
    if not TWO_CPUS:
        # TensorFlow started before this module could split the CPU: run
        # this test alone in a fresh interpreter, where it can.
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{test_a_model_on_two_devices_is_ambiguous_as_in_vertebrae.__name__}"]
        result = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
        assert result.returncode == 0, result.stdout + result.stderr
        assert "1 passed" in result.stdout, result.stdout
        return
    model = two_device_model()
    for hint in (None, "GPU:0", "CPU:1"):
        ours = tp.TensorFlowResourceProfileAdapter(ModelExtractor(model), profiling_device=hint)
        theirs = vp.TensorFlowResourceProfileAdapter(ModelExtractor(model), profiling_device=hint)
        for hook in HOOKS:
            assert answer(ours, hook) == answer(theirs, hook), (hint, hook)
    resolution = tp.TensorFlowResourceProfileAdapter(ModelExtractor(model)).metadata().device_resolution
    assert resolution == "ambiguous_model_devices"
    assert tp.TensorFlowResourceProfileAdapter(ModelExtractor(model)).reset_peak_device_memory().status == "unavailable"


@pytest.mark.gpu
def test_the_gpu_memory_window_measures_as_vertebraes():
    if not GPUS:
        pytest.skip("no GPU visible to TensorFlow (tf.config.list_logical_devices('GPU') is empty): the memory-info window is GPU-only")
    with tf.device(GPUS[0].name):
        model = keras_model()
        batch = tf.ones((16, 4))
    device = vp._normalize_tensorflow_device(GPUS[0].name)
    results = {}
    for module in (tp, vp):
        adapter = module.TensorFlowResourceProfileAdapter(ModelExtractor(model))
        reset = dataclasses.asdict(adapter.reset_peak_device_memory())
        with tf.device(GPUS[0].name):
            model(batch).numpy()
        results[module.__name__] = (reset, dataclasses.asdict(adapter.peak_device_memory()), dataclasses.asdict(adapter.metadata()))
    ours, theirs = results["tally.profiling"], results["vertebrae.profiling"]
    assert ours[0] == theirs[0] == {"status": "succeeded", "reason": None}
    assert ours[2] == theirs[2]
    assert ours[2]["device"] == device
    for key in ("status", "backend", "device", "measurement_scope", "unavailable_reason"):
        assert ours[1][key] == theirs[1][key], key
    assert ours[1]["status"] == "measured"
    assert isinstance(ours[1]["peak_allocated_bytes"], int) and ours[1]["peak_allocated_bytes"] > 0
    assert isinstance(ours[1]["baseline_allocated_bytes"], int)


class Allocator:
    """TensorFlow's GPU allocator statistics as `tf.config.experimental`
    reports them, for a machine without a GPU: the real TensorFlow module
    answers with these three functions replaced (and `list_logical_devices`
    listing `gpus` logical GPUs), so the window's bookkeeping of both
    adapters runs. The real window is test_the_gpu_memory_window_measures_as_vertebraes."""

    def __init__(self, current=1000, peak=5000, keys=("current", "peak")):
        self.current, self.peak, self.keys = current, peak, keys
        self.calls = []

    def get_memory_info(self, device):
        self.calls.append(("get_memory_info", device))
        return {key: getattr(self, key) for key in self.keys}

    def reset_memory_stats(self, device):
        self.calls.append(("reset_memory_stats", device))
        self.peak = self.current


def stand_in_gpus(monkeypatch, allocator, gpus=1, without=()):
    devices = [tf.config.LogicalDevice(name=f"/device:GPU:{index}", device_type="GPU") for index in range(gpus)]
    real = tf.config.list_logical_devices
    monkeypatch.setattr(tf.config, "list_logical_devices", lambda kind=None: devices if kind == "GPU" else real(kind))
    for name in ("get_memory_info", "reset_memory_stats"):
        if name in without:
            monkeypatch.delattr(tf.config.experimental, name)
        else:
            monkeypatch.setattr(tf.config.experimental, name, getattr(allocator, name))


WINDOWS = {
    "one_gpu": {},
    "two_gpus": {"gpus": 2},
    "no_reset": {"without": ("reset_memory_stats",)},
    "no_memory_info": {"without": ("get_memory_info", "reset_memory_stats")},
    "negative_baseline": {"allocator": {"current": -1}},
    "no_peak_key": {"allocator": {"keys": ("current",)}},
}


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("hint", [None, "gpu:0", "GPU:1"])
def test_the_memory_window_bookkeeping_is_vertebraes(window, hint, monkeypatch):
    spec = WINDOWS[window]
    answers = {}
    for module in (tp, vp):
        allocator = Allocator(**spec.get("allocator", {}))
        with monkeypatch.context() as patch:
            stand_in_gpus(patch, allocator, spec.get("gpus", 1), spec.get("without", ()))
            adapter = module.TensorFlowResourceProfileAdapter(ModelExtractor(MODELS["module"]), profiling_device=hint)
            before = answer(adapter, "peak_device_memory")
            reset = answer(adapter, "reset_peak_device_memory")
            allocator.peak = max(allocator.peak, 0) + 7000  # the calls' allocations
            after = answer(adapter, "peak_device_memory")
            metadata = answer(adapter, "metadata")
        answers[module.__name__] = (before, reset, after, metadata, allocator.calls)
    assert answers["tally.profiling"] == answers["vertebrae.profiling"]
    if window == "one_gpu" and hint != "GPU:1":
        before, reset, after, metadata, calls = answers["tally.profiling"]
        assert before[2]["unavailable_reason"].startswith("The active TensorFlow device changed")
        assert reset == ("ok", "AdapterOperationResult", {"status": "succeeded", "reason": None})
        assert (after[2]["status"], after[2]["baseline_allocated_bytes"], after[2]["peak_allocated_bytes"]) == ("measured", 1000, 8000)
        assert after[2]["measurement_scope"] == "profile_window" and after[2]["device"] == "GPU:0"
        assert ("reset_memory_stats", "GPU:0") in calls


def test_a_window_opened_on_another_device_is_not_measured(monkeypatch):
    """The visible GPU changes between the reset and the reading."""
    answers = {}
    for module in (tp, vp):
        allocator = Allocator()
        with monkeypatch.context() as patch:
            stand_in_gpus(patch, allocator)
            adapter = module.TensorFlowResourceProfileAdapter(ModelExtractor(MODELS["module"]))
            reset = answer(adapter, "reset_peak_device_memory")
            other = [tf.config.LogicalDevice(name="/device:GPU:3", device_type="GPU")]
            patch.setattr(tf.config, "list_logical_devices", lambda kind=None: other)
            answers[module.__name__] = (reset, answer(adapter, "peak_device_memory"))
    assert answers["tally.profiling"] == answers["vertebrae.profiling"]
    assert answers["tally.profiling"][1][2]["device"] == "GPU:3"
    assert answers["tally.profiling"][1][2]["status"] == "unavailable"


def test_profiles_over_the_memory_window_agree_with_vertebraes(monkeypatch):
    sections = {}
    for module, config in ((tp, tp.ResourceProfilingConfig(enabled=True)), (vp, VertebraeConfig(enabled=True))):
        with monkeypatch.context() as patch:
            stand_in_gpus(patch, Allocator())
            sections[module.__name__] = {
                key: value for key, value in profile(module, config, "module", ()).items() if key in ("device_memory", "warnings")
            }
    assert sections["tally.profiling"] == sections["vertebrae.profiling"]
    assert sections["tally.profiling"]["device_memory"]["status"] == "measured"


def profile(module, config, model_name, artifacts):
    model = MODELS[model_name]

    class TensorFlowExtractor:
        def __init__(self):
            self.model = model

        def get_resource_profile_adapter(self):
            return module.TensorFlowResourceProfileAdapter(self, artifacts)

        def __call__(self, rows):
            if isinstance(model, keras.Model):
                return model(tf.ones((rows, 4)), training=False).numpy()
            return tf.matmul(tf.ones((rows, 4)), model.kernel).numpy()

    extractor = TensorFlowExtractor()
    profiler = module.ResourceProfiler(config, extractor, streaming=False)
    for rows in (4, 8, 8):
        profiler.measure_call(lambda: extractor(rows), samples=rows, call_type="batch")
    return dataclasses.asdict(profiler.finish())


@pytest.mark.parametrize("model,artifacts", [("keras", "strings"), ("module", "objects"), ("keras_half", None)])
def test_profiles_with_the_tensorflow_adapter_agree_with_vertebraes(model, artifacts, tmp_path):
    ours_artifacts = artifact_lists(tp, tmp_path)[artifacts] if artifacts else ()
    theirs_artifacts = artifact_lists(vp, tmp_path)[artifacts] if artifacts else ()
    ours = profile(tp, tp.ResourceProfilingConfig(enabled=True), model, ours_artifacts)
    theirs = profile(vp, VertebraeConfig(enabled=True), model, theirs_artifacts)
    assert_profiles_agree(ours, theirs, "TensorFlowResourceProfileAdapter")
    assert ours["model"]["parameter_status"] == "measured"
    if artifacts:
        assert ours["model"]["checkpoint_bytes"] > 0


def test_vertebraes_adapter_works_in_tallys_profiler():
    model = MODELS["keras"]

    class Mixed:
        def get_resource_profile_adapter(self):
            return vp.TensorFlowResourceProfileAdapter(self, model_getter=lambda: model)

    profiler = tp.ResourceProfiler(tp.ResourceProfilingConfig(enabled=True), Mixed(), streaming=False)
    profiler.measure_call(lambda: model(tf.ones((2, 4))).numpy(), samples=2, call_type="batch")
    result = dataclasses.asdict(profiler.finish())
    assert result["model"]["parameter_count"] == 4 * 3 + 3 + 4 * 3, result["warnings"]
    assert result["context"]["synchronization_method"] == "extractor_output_to_numpy"
