"""tally's ONNXResourceProfileAdapter (tally-onnx's `python` feature,
through the package) against vertebrae's on the same real
onnxruntime.InferenceSession objects (CPU): every hook's answer for
extractors with a live session, with configured providers only, and with
neither, then the profile each library's profiler builds with its adapter
over the same runs."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed in the venv")
onnx = pytest.importorskip("onnx", reason="onnx is not installed in the venv (python/requirements.txt installs it)")
ort = pytest.importorskip(
    "onnxruntime", reason="onnxruntime is not installed in the venv (python/requirements.txt installs it)"
)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tally.profiling as tp  # noqa: E402
import vertebrae.profiling as vp  # noqa: E402
from vertebrae.config import ResourceProfilingConfig as VertebraeConfig  # noqa: E402
from vertebrae_parity import HOOKS, answer, answer_to, assert_profiles_agree  # noqa: E402


def write_model(path, *, external):
    """y = relu(x @ w + b), x float32 [2, 8]; with `external`, w is stored
    in `<name>.data` beside the model."""
    rng = np.random.RandomState(0)
    weight = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    bias = numpy_helper.from_array(np.zeros(4, dtype=np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["z"]),
            helper.make_node("Relu", ["z"], ["y"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [weight, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    if external:
        onnx.save_model(
            model, str(path), save_as_external_data=True, location=path.name + ".data", size_threshold=0
        )
        return path, path.with_name(path.name + ".data")
    onnx.save_model(model, str(path))
    return path, None


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("onnx")
    inline, _ = write_model(folder / "inline.onnx", external=False)
    split, data = write_model(folder / "split.onnx", external=True)
    return {"inline": (inline, None), "split": (split, data)}


@pytest.fixture(scope="module")
def sessions(models):
    return {
        name: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for name, (path, _) in models.items()
    }


class Live:
    """An extractor with a live session (`_session`), as vertebrae's ONNX
    extractors keep it."""

    def __init__(self, path, session):
        self.model_path = path
        self._session = session

    def __call__(self):
        return self._session.run(None, {"x": np.ones((2, 8), dtype=np.float32)})


class Configured:
    """Before loading: the providers it will ask for, no session yet."""

    def __init__(self, path, providers):
        self.model_path = path
        self.providers = providers


class Bare:
    """Neither a session nor providers."""

    def __init__(self, path):
        self.model_path = path


class NoProviders:
    """A session object without get_providers (vertebrae falls back to the
    configured providers, still naming the session active)."""


class Pathless:
    """No model_path at all."""

    providers = ["CPUExecutionProvider"]


def extractors(models, sessions):
    path, _ = models["inline"]
    return {
        "live": Live(path, sessions["inline"]),
        "live_split": Live(models["split"][0], sessions["split"]),
        "live_str_path": Live(str(path), sessions["inline"]),
        "configured": Configured(path, ["CUDAExecutionProvider", "CPUExecutionProvider"]),
        "configured_empty": Configured(path, []),
        "configured_none": Configured(path, None),
        "configured_tuple": Configured(path, ("DmlExecutionProvider",)),
        "configured_generator": Configured(path, (name for name in ["ROCMExecutionProvider"])),
        # vertebrae's list() of a string: its first character is the device.
        "configured_string": Configured(path, "CPUExecutionProvider"),
        "session_none": type("SessionNone", (Configured,), {"_session": None})(path, ["OpenVINOExecutionProvider"]),
        "session_without_providers": type("Odd", (Configured,), {"_session": NoProviders()})(path, ["X"]),
        "bare": Bare(path),
        "empty_path": Bare(""),
        "pathless": Pathless(),
    }


EXTRACTORS = [
    "live",
    "live_split",
    "live_str_path",
    "configured",
    "configured_empty",
    "configured_none",
    "configured_tuple",
    "configured_generator",
    "configured_string",
    "session_none",
    "session_without_providers",
    "bare",
    "empty_path",
    "pathless",
]


@pytest.mark.parametrize("name", EXTRACTORS)
def test_every_hook_answers_as_vertebraes(models, sessions, name):
    # Fresh extractors per library: a generator of providers is read once.
    ours = tp.ONNXResourceProfileAdapter(extractors(models, sessions)[name])
    theirs = vp.ONNXResourceProfileAdapter(extractors(models, sessions)[name])
    for hook in HOOKS:
        assert answer(ours, hook) == answer(theirs, hook), hook


def test_the_answers_are_the_ones_vertebrae_documents(models, sessions):
    found = extractors(models, sessions)
    live = tp.ONNXResourceProfileAdapter(found["live"]).metadata()
    assert (live.backend, live.device, live.device_resolution) == ("onnxruntime", "CPUExecutionProvider", "active_provider")
    assert (live.asynchronous, live.synchronization_method) == (False, "InferenceSession.run")
    configured = tp.ONNXResourceProfileAdapter(found["configured"]).metadata()
    assert (configured.device, configured.device_resolution) == ("CUDAExecutionProvider", "configured_provider")
    assert tp.ONNXResourceProfileAdapter(found["bare"]).metadata().device == "CPUExecutionProvider"
    adapter = tp.ONNXResourceProfileAdapter(found["live"])
    assert adapter.synchronize().status == "succeeded"
    assert adapter.reset_peak_device_memory().reason == "ONNX Runtime does not expose a portable allocator peak API."
    footprint = adapter.model_footprint()
    assert (footprint.status, footprint.unavailable_reason) == (
        "unavailable",
        "ONNX parameters are not parsed without the optional onnx package.",
    )
    assert tp.ONNXResourceProfileAdapter(found["configured_string"]).metadata().device == "C"


def test_external_artifacts_follow_the_model_as_external_weights(models, sessions, tmp_path):
    path, data = models["split"]
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text("{}")
    cases = [
        lambda module: (),
        lambda module: [data],
        lambda module: [str(data), tokenizer],
        lambda module: (module.DeploymentArtifact(str(tmp_path), role="assets", recursive=True), str(data)),
        lambda module: iter([str(data)]),
    ]
    for external in cases:
        ours = tp.ONNXResourceProfileAdapter(Live(path, sessions["split"]), external(tp))
        theirs = vp.ONNXResourceProfileAdapter(Live(path, sessions["split"]), external(vp))
        assert answer(ours, "deployment_artifacts") == answer(theirs, "deployment_artifacts")
    declared = tp.ONNXResourceProfileAdapter(Live(path, sessions["split"]), [data]).deployment_artifacts()
    assert [(item.path, item.role) for item in declared] == [(str(path), "checkpoint"), (str(data), "external_weights")]
    for bad in ([""], 7):
        expected = answer_to(lambda: vp.ONNXResourceProfileAdapter(Bare(path), bad))
        assert expected[0] == "error"
        assert answer_to(lambda: tp.ONNXResourceProfileAdapter(Bare(path), bad)) == expected


def test_a_provider_that_is_not_a_name_is_refused():
    """onnxruntime takes `(name, options)` pairs as providers; vertebrae
    reports the pair itself as the device, which tally's
    ResourceAdapterMetadata (a device name or None) cannot hold, so tally
    raises instead (docs/PARITY.md)."""
    configured = Configured("model.onnx", [("CUDAExecutionProvider", {"device_id": 0})])
    assert vp.ONNXResourceProfileAdapter(configured).metadata().device == ("CUDAExecutionProvider", {"device_id": 0})
    with pytest.raises(TypeError, match="provider name"):
        tp.ONNXResourceProfileAdapter(configured).metadata()


def test_the_class_takes_vertebraes_arguments(models, sessions):
    shape = lambda signature: [(p.name, p.kind, p.default) for p in signature.parameters.values()]
    assert shape(inspect.signature(tp.ONNXResourceProfileAdapter)) == shape(
        inspect.signature(vp.ONNXResourceProfileAdapter)
    )
    extractor = Live(*models["inline"][:1], sessions["inline"])
    adapter = tp.ONNXResourceProfileAdapter(extractor)
    assert adapter.extractor is extractor
    assert isinstance(adapter, tp.BaseResourceProfileAdapter)


# Whole profiles.


def profile(module, config, extractor_class, *arguments):
    class Profiled(extractor_class):
        def get_resource_profile_adapter(self):
            return module.ONNXResourceProfileAdapter(self, self.external)

    extractor = Profiled(*arguments[:-1])
    extractor.external = arguments[-1]
    profiler = module.ResourceProfiler(config, extractor, streaming=False)
    for _ in range(3):
        profiler.measure_call(extractor if callable(extractor) else (lambda: None), samples=2, call_type="batch")
    return dataclasses.asdict(profiler.finish())


@pytest.mark.parametrize("case", ["inline", "split", "configured", "bare"])
def test_profiles_with_the_onnx_adapter_agree_with_vertebraes(models, sessions, case):
    path, data = models["split" if case == "split" else "inline"]
    arguments = {
        "inline": (Live, path, sessions["inline"], []),
        "split": (Live, path, sessions["split"], [str(data)]),
        "configured": (Configured, path, ["CUDAExecutionProvider"], []),
        "bare": (Bare, path, []),
    }[case]
    ours = profile(tp, tp.ResourceProfilingConfig(enabled=True), *arguments)
    theirs = profile(vp, VertebraeConfig(enabled=True), *arguments)
    assert_profiles_agree(ours, theirs, "ONNXResourceProfileAdapter")
    declared = [path] + ([data] if case == "split" else [])
    assert ours["model"]["checkpoint_bytes"] == sum(item.stat().st_size for item in declared)
    roles = [artifact["role"] for artifact in ours["model"]["artifacts"]]
    assert roles == ["checkpoint", "external_weights"][: len(declared)]
