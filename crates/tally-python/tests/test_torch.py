"""tally's TorchResourceProfileAdapter (tally-torch's `python` feature,
through the package) against vertebrae's on the same real torch objects
(CPU, plus the meta device and device hints naming CUDA and MPS, which
torch accepts without either): every hook's answer, then the profile each
library's profiler builds with its adapter. The CUDA allocator window and
MPS synchronization on real devices run only where torch sees one."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed in the venv (python/requirements.txt installs it)")
nn = torch.nn

import tally.profiling as tp  # noqa: E402
import vertebrae.profiling as vp  # noqa: E402
from vertebrae.config import ResourceProfilingConfig as VertebraeConfig  # noqa: E402
from vertebrae_parity import HOOKS, answer, answer_to, assert_profiles_agree  # noqa: E402


# Models: parameters and buffers of several dtypes, tied and frozen
# weights, none at all, and state on the meta device (no allocator).


class Tied(nn.Module):
    """A language-model head sharing the embedding's weight."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight


class Buffers(nn.Module):
    """Buffers of every dtype vertebrae's dtype list has to sort."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3, dtype=torch.float16))
        self.register_buffer("f32", torch.zeros(5, dtype=torch.float32))
        self.register_buffer("f16", torch.zeros(2, 3, dtype=torch.float16))
        self.register_buffer("bf16", torch.zeros(7, dtype=torch.bfloat16))
        self.register_buffer("i64", torch.zeros(4, dtype=torch.int64))


class Repeating:
    """Not a Module: hands the same tensors out twice, as a hand-written
    model object may (vertebrae deduplicates them by identity)."""

    def __init__(self):
        self.weight = nn.Parameter(torch.ones(6, 2))
        self.frozen = nn.Parameter(torch.ones(3), requires_grad=False)
        self.running = torch.zeros(4, dtype=torch.int64)

    def parameters(self):
        return [self.weight, self.frozen, self.weight, self.frozen]

    def buffers(self):
        return iter([self.running, self.running])


class KerasLike:
    """A Keras-on-torch model: no parameters(), weights holding variables
    whose `.value` is the tensor."""

    class Variable:
        def __init__(self, value):
            self.value = value

    def __init__(self, device="cpu"):
        self.weights = [self.Variable(torch.ones(2, 2, device=device)), self.Variable(torch.zeros(3, device=device))]


class Devices:
    """An object that says only which device it lives on."""

    def __init__(self, device):
        self.device = device


class Split(nn.Module):
    """State on two devices (the meta device needs no hardware)."""

    def __init__(self):
        super().__init__()
        self.here = nn.Linear(2, 2)
        self.there = nn.Linear(2, 2, device="meta")


def frozen_mlp():
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    model[2].weight.requires_grad_(False)
    return model.eval()


MODELS = {
    "none": lambda: None,
    "mlp": frozen_mlp,
    "tied": Tied,
    "buffers": Buffers,
    "repeating": Repeating,
    "no_parameters": lambda: nn.Sequential(nn.ReLU(), nn.Identity()),
    "meta": lambda: nn.Linear(3, 2, device="meta"),
    "split": Split,
    "keras_like": KerasLike,
    "device_only": lambda: Devices("meta"),
}


# Extractors as vertebrae's adapter reads them: `.model` or `._model`,
# `.device`, `._device(torch)`, `_load_torch()`.


class Extractor:
    def __init__(self, model=None, **attributes):
        self.model = model
        for name, value in attributes.items():
            setattr(self, name, value)


class Private:
    """Keeps the model in `_model`, the device as a resolver `_device`."""

    def __init__(self, model, device=None):
        self._model = model
        if device is not None:
            self._device = lambda torch_module: torch_module.device(device)


class Loading:
    """Brings its own torch through `_load_torch`, counting the loads."""

    def __init__(self, model):
        self.model = model
        self.loads = 0

    def _load_torch(self):
        self.loads += 1
        return torch


EXTRACTORS = {
    "model": lambda model: Extractor(model),
    "private": lambda model: Private(model),
    "private_resolver": lambda model: Private(model, device="meta"),
    "device_cpu": lambda model: Extractor(model, device="cpu"),
    "device_object": lambda model: Extractor(model, device=torch.device("cpu")),
    "device_meta": lambda model: Extractor(model, device="meta"),
    "device_cuda": lambda model: Extractor(model, device="cuda:0"),
    "device_mps": lambda model: Extractor(model, device="mps"),
    "load_torch": lambda model: Loading(model),
}

# Adapter arguments beyond the extractor.
OPTIONS = {
    "plain": {},
    "resolver_meta": {"device_resolver": lambda torch_module: "meta"},
    "resolver_cpu": {"device_resolver": lambda torch_module: torch_module.device("cpu")},
    "resolver_none": {"device_resolver": lambda torch_module: None},
    "resolver_cuda": {"device_resolver": lambda torch_module: "cuda:1"},
    "loader": {"torch_loader": lambda: torch},
}


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    return {name: make() for name, make in MODELS.items()}


def pair(make_adapter):
    """The same adapter built by both libraries."""
    return make_adapter(tp), make_adapter(vp)


def assert_hooks_agree(ours, theirs):
    for hook in HOOKS:
        assert answer(ours, hook) == answer(theirs, hook), hook


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("extractor", EXTRACTORS)
def test_every_hook_answers_as_vertebraes_for_each_model_and_extractor(models, model, extractor):
    value = models[model]
    made = EXTRACTORS[extractor](value)
    assert_hooks_agree(*pair(lambda module: module.TorchResourceProfileAdapter(made)))


@pytest.mark.parametrize("model", ["none", "mlp", "meta", "split", "no_parameters"])
@pytest.mark.parametrize("options", OPTIONS)
def test_every_hook_answers_as_vertebraes_with_each_option(models, model, options):
    made = Extractor(models[model], device="cpu")
    assert_hooks_agree(*pair(lambda module: module.TorchResourceProfileAdapter(made, **OPTIONS[options])))


def test_the_device_resolutions_are_vertebraes_names(models):
    """Each resolution name is reached (so the comparisons above are not
    all of one kind), with tally's answer equal to vertebrae's."""
    cases = {
        "model_state": (Extractor(models["mlp"]), {}),
        "multi_device_model": (Extractor(models["split"]), {}),
        "model_state_conflicts_with_profiling_hint": (Extractor(models["mlp"], device="meta"), {}),
        "extractor_resolver": (Extractor(None), {"device_resolver": lambda torch_module: "meta"}),
        "explicit": (Extractor(None, device="meta"), {}),
        "default_cpu": (Extractor(None), {}),
    }
    for expected, (extractor, options) in cases.items():
        ours, theirs = pair(lambda module: module.TorchResourceProfileAdapter(extractor, **options))
        assert ours.metadata().device_resolution == expected
        assert dataclasses.asdict(ours.metadata()) == dataclasses.asdict(theirs.metadata())
    # A resolver overrides the extractor's device as the hint, even when it
    # agrees with the model; answering None falls through to the extractor.
    agreeing = Extractor(models["mlp"], device="meta")
    ours = tp.TorchResourceProfileAdapter(agreeing, device_resolver=lambda torch_module: "cpu")
    assert ours.metadata().device_resolution == "model_state"
    ours = tp.TorchResourceProfileAdapter(Private(None, device="meta"), device_resolver=lambda torch_module: None)
    assert (ours.metadata().device, ours.metadata().device_resolution) == ("meta", "extractor_resolver")


def test_the_footprint_counts_tied_and_repeated_tensors_once(models):
    tied = tp.TorchResourceProfileAdapter(Extractor(models["tied"])).model_footprint()
    assert (tied.parameter_count, tied.parameter_bytes) == (40, 160)
    repeating = tp.TorchResourceProfileAdapter(Extractor(models["repeating"])).model_footprint()
    assert (repeating.parameter_count, repeating.trainable_parameter_count) == (15, 12)
    assert (repeating.buffer_bytes, repeating.in_memory_bytes) == (32, 15 * 4 + 32)
    buffers = tp.TorchResourceProfileAdapter(Extractor(models["buffers"])).model_footprint()
    assert buffers.weight_dtypes == ("torch.bfloat16", "torch.float16", "torch.float32", "torch.int64")
    assert buffers.buffer_bytes == 5 * 4 + 6 * 2 + 7 * 2 + 4 * 8
    mlp = tp.TorchResourceProfileAdapter(Extractor(models["mlp"])).model_footprint()
    assert mlp.trainable_parameter_count == mlp.parameter_count - 6
    empty = tp.TorchResourceProfileAdapter(Extractor(models["no_parameters"])).model_footprint()
    assert (empty.status, empty.unavailable_reason) == ("unavailable", "The model exposes no parameters or buffers.")


def test_the_model_getter_is_called_as_vertebrae_calls_it(models):
    calls = {"tally.profiling": 0, "vertebrae.profiling": 0}

    def make(module):
        def getter():
            calls[module.__name__] += 1
            return models["mlp"]

        # The extractor's own model is never read when there is a getter.
        return module.TorchResourceProfileAdapter(Extractor(models["tied"]), model_getter=getter)

    ours, theirs = pair(make)
    assert_hooks_agree(ours, theirs)
    assert calls["tally.profiling"] == calls["vertebrae.profiling"] > 0
    assert ours.model_footprint().parameter_count == sum(p.numel() for p in models["mlp"].parameters())


def test_torch_comes_from_the_loader_then_the_extractor_then_import(models):
    for module in (tp, vp):
        extractor = Loading(models["mlp"])
        adapter = module.TorchResourceProfileAdapter(extractor)
        adapter.metadata()
        adapter.synchronize()
        assert extractor.loads == 2, module.__name__
        loaded = []
        adapter = module.TorchResourceProfileAdapter(extractor, torch_loader=lambda: loaded.append(1) or torch)
        adapter.metadata()
        assert (loaded, extractor.loads) == ([1], 2), module.__name__


def test_failures_raise_the_same_exceptions(models):
    def broken_getter():
        raise RuntimeError("the checkpoint is still downloading")

    cases = [
        (Extractor(None, device="not-a-device"), {}),
        (Extractor(None), {"device_resolver": lambda torch_module: 12.5}),
        (Extractor(None), {"model_getter": broken_getter}),
        (Extractor(None), {"torch_loader": lambda: None}),
        (Extractor(models["mlp"]), {"device_resolver": lambda torch_module: "nowhere:0"}),
        (Private(None), {}),
    ]
    for extractor, options in cases:
        assert_hooks_agree(*pair(lambda module: module.TorchResourceProfileAdapter(extractor, **options)))
    ours = tp.TorchResourceProfileAdapter(Extractor(None), model_getter=broken_getter)
    with pytest.raises(RuntimeError, match="still downloading"):
        ours.metadata()


def test_artifacts_are_normalized_as_vertebrae_normalizes_them(tmp_path):
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"weights")
    # Each library with its own DeploymentArtifact class (vertebrae
    # stringifies any other object, tally's too).
    cases = [
        lambda module: [],
        lambda module: [str(checkpoint)],
        lambda module: [checkpoint, tmp_path],
        lambda module: (str(checkpoint), module.DeploymentArtifact(str(tmp_path), role="tokenizer", recursive=True)),
        lambda module: iter([module.DeploymentArtifact(str(checkpoint), role="adapter")]),
    ]
    for artifacts in cases:
        ours, theirs = pair(lambda module: module.TorchResourceProfileAdapter(Extractor(None), artifacts(module)))
        assert answer(ours, "deployment_artifacts") == answer(theirs, "deployment_artifacts")
    ours = tp.TorchResourceProfileAdapter(Extractor(None), [checkpoint])
    assert [type(item) for item in ours.deployment_artifacts()] == [tp.DeploymentArtifact]
    # tally takes vertebrae's artifacts as its own (the profiler does too).
    theirs = vp.DeploymentArtifact(str(checkpoint), role="adapter", recursive=True)
    ours = tp.TorchResourceProfileAdapter(Extractor(None), [theirs]).deployment_artifacts()
    assert ours == (tp.DeploymentArtifact(str(checkpoint), role="adapter", recursive=True),)
    for bad in ([""], 3):
        expected = answer_to(lambda: vp.TorchResourceProfileAdapter(Extractor(None), bad))
        assert expected[0] == "error"
        assert answer_to(lambda: tp.TorchResourceProfileAdapter(Extractor(None), bad)) == expected


def test_the_class_takes_vertebraes_arguments(models):
    import inspect

    shape = lambda signature: [(p.name, p.kind, p.default) for p in signature.parameters.values()]
    assert shape(inspect.signature(tp.TorchResourceProfileAdapter)) == shape(
        inspect.signature(vp.TorchResourceProfileAdapter)
    )
    extractor = Extractor(models["mlp"])
    adapter = tp.TorchResourceProfileAdapter(extractor)
    assert adapter.extractor is extractor
    assert isinstance(adapter, tp.BaseResourceProfileAdapter)


# The CUDA allocator window, reached on this machine only as far as torch
# goes without a GPU: the baselines read 0, then the reset raises.


def test_a_cuda_device_without_a_gpu_fails_as_in_vertebrae():
    extractor = Extractor(None, device="cuda:0")
    ours, theirs = pair(lambda module: module.TorchResourceProfileAdapter(extractor))
    for hook in ("reset_peak_device_memory", "peak_device_memory", "synchronize", "metadata"):
        assert answer(ours, hook) == answer(theirs, hook), hook
    assert ours.metadata().synchronization_method == "torch.cuda.synchronize"


def cuda_or_skip():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device here: the allocator window needs one")


@pytest.mark.gpu
def test_the_cuda_allocator_window_is_vertebraes():
    cuda_or_skip()
    model = nn.Linear(256, 256).to("cuda:0")
    results = {}
    for module in (tp, vp):
        adapter = module.TorchResourceProfileAdapter(Extractor(model))
        reset = adapter.reset_peak_device_memory()
        scratch = torch.empty(1 << 20, device="cuda:0")
        peak = adapter.peak_device_memory()
        del scratch
        results[module.__name__] = (dataclasses.asdict(reset), dataclasses.asdict(peak))
    (our_reset, our_peak), (their_reset, their_peak) = results["tally.profiling"], results["vertebrae.profiling"]
    assert our_reset == their_reset == {"status": "succeeded", "reason": None}
    assert our_peak["status"] == their_peak["status"] == "measured"
    assert our_peak["measurement_scope"] == "profile_window"
    assert our_peak["peak_allocated_bytes"] >= our_peak["baseline_allocated_bytes"] + 4 * (1 << 20)
    for key in ("backend", "device", "baseline_allocated_bytes", "baseline_reserved_bytes"):
        assert our_peak[key] == their_peak[key], key


@pytest.mark.gpu
def test_a_changed_cuda_device_closes_the_window():
    cuda_or_skip()
    holder = Extractor(nn.Linear(2, 2).to("cuda:0"))
    for module in (tp, vp):
        adapter = module.TorchResourceProfileAdapter(holder)
        assert adapter.reset_peak_device_memory().status == "succeeded"
    holder.model = None
    holder.device = "cuda:0"
    ours, theirs = pair(lambda module: module.TorchResourceProfileAdapter(holder))
    assert answer(ours, "peak_device_memory") == answer(theirs, "peak_device_memory")
    assert ours.peak_device_memory().unavailable_reason.startswith("The active Torch device changed")


def test_mps_is_synchronized_once():
    if not torch.backends.mps.is_available():
        pytest.skip("torch sees no MPS device here: MPS synchronization needs Apple silicon")
    extractor = Extractor(nn.Linear(2, 2).to("mps"))
    ours, theirs = pair(lambda module: module.TorchResourceProfileAdapter(extractor))
    assert_hooks_agree(ours, theirs)
    assert ours.synchronize().status == "succeeded"


# Whole profiles.


def profile(module, config, model, artifacts):
    class TorchExtractor:
        def __init__(self):
            self.model = model

        def get_resource_profile_adapter(self):
            return module.TorchResourceProfileAdapter(self, artifacts)

    extractor = TorchExtractor()
    profiler = module.ResourceProfiler(config, extractor, streaming=False)
    for size in (4, 8, 8):
        batch = torch.ones(size, 4)
        profiler.measure_call(lambda: model(batch) if isinstance(model, nn.Sequential) else batch, samples=size, call_type="batch")
    return dataclasses.asdict(profiler.finish())


@pytest.mark.parametrize("model", ["mlp", "tied", "buffers", "none", "meta", "split"])
def test_profiles_with_the_torch_adapter_agree_with_vertebraes(models, model, tmp_path):
    checkpoint = tmp_path / "model.pt"
    torch.save({"w": torch.ones(8)}, checkpoint)
    artifacts = [str(checkpoint)]
    with torch.no_grad():
        ours = profile(tp, tp.ResourceProfilingConfig(enabled=True), models[model], artifacts)
        theirs = profile(vp, VertebraeConfig(enabled=True), models[model], artifacts)
    assert_profiles_agree(ours, theirs, "TorchResourceProfileAdapter")
    assert ours["model"]["checkpoint_bytes"] == checkpoint.stat().st_size


def test_a_conflicting_hint_warns_in_both_profiles(models):
    def run(module, config):
        class Hinted:
            model = models["mlp"]
            device = "meta"

            def get_resource_profile_adapter(self):
                return module.TorchResourceProfileAdapter(self)

        profiler = module.ResourceProfiler(config, Hinted(), streaming=False)
        profiler.measure_call(lambda: None, samples=1, call_type="batch")
        return dataclasses.asdict(profiler.finish())

    ours = run(tp, tp.ResourceProfilingConfig(enabled=True))
    theirs = run(vp, VertebraeConfig(enabled=True))
    assert ours["warnings"] == theirs["warnings"] != []
    assert ours["context"]["device_resolution"] == "model_state_conflicts_with_profiling_hint"
