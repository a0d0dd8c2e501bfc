"""``tally.profiling`` against vertebrae 1.1.0's ``vertebrae.profiling``, live.

Every expectation comes from vertebrae itself: the same classes are built,
the same extractors are profiled and the same dicts are loaded by both
libraries, and the results are compared field by field. What differs on
purpose (docs/PARITY.md) is asserted as such, never skipped:

- host memory: tally reads the kernel's exact high-water mark, so the RSS
  figures differ; ``host_memory.sample_interval_seconds`` is ``None`` unless
  tally's fallback sampler measured; ``ResourceProfiler.host_memory_method``
  names the method (the context stays vertebrae's, key for key);
- timing: durations are integer nanoseconds converted once, so the seconds
  differ run to run (they are checked for consistency instead);
- ``context.resource_adapter`` is ``module.Class`` of the adapter object, so
  the two libraries' own ``BaseResourceProfileAdapter`` differ by module;
- fields are typed: a value of the wrong type that vertebrae stores
  unchecked is a ``ValueError`` in tally (``TYPED_FIELDS``).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import pickle
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import vertebrae.config as vertebrae_config
import vertebrae.profiling as V

import tally.profiling as T

from conftest import outcome
from vertebrae_parity import TALLY_ONLY_CONTEXT_KEYS, TIMINGS

ROOT = Path(__file__).resolve().parents[3]
ONNX_FIXTURES = ROOT / "crates" / "tally-onnx" / "tests" / "fixtures"

HOST_MEMORY_METHODS = {"vmhwm_clear_refs", "vmhwm_at_high_water", "rss_sampler"}

#: Host memory figures, measured by another method (the timings that differ
#: run to run are vertebrae_parity's TIMINGS); their presence, type and
#: consistency are checked instead, as the timings' are.
HOST_FIELDS = {"baseline_rss_bytes", "peak_rss_bytes", "peak_increase_bytes", "sample_interval_seconds"}


# --------------------------------------------------------------------------
# The schema: names, fields, defaults, factories, frozenness


def vertebrae_dataclasses() -> list[str]:
    return sorted(
        name
        for name, value in vars(V).items()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and value.__module__ == "vertebrae.profiling"
        and not name.startswith("_")
    )


def test_every_public_dataclass_of_vertebrae_is_offered():
    names = vertebrae_dataclasses()
    assert len(names) == 15, names
    missing = [name for name in names if not hasattr(T, name)]
    assert missing == []
    assert V.ResourceProfilingConfig is vertebrae_config.ResourceProfilingConfig
    for name in names + ["ResourceProfilingConfig"]:
        assert dataclasses.is_dataclass(getattr(T, name)), name


def field_signature(field: dataclasses.Field) -> tuple:
    return (
        field.name,
        field.default,
        field.default_factory,
        field.init,
        field.repr,
        field.compare,
        field.hash,
        field.kw_only,
    )


PAIRS = [(name, getattr(V, name), getattr(T, name)) for name in vertebrae_dataclasses()] + [
    ("ResourceProfilingConfig", vertebrae_config.ResourceProfilingConfig, T.ResourceProfilingConfig)
]


@pytest.mark.parametrize("name, theirs, ours", PAIRS, ids=[pair[0] for pair in PAIRS])
def test_dataclass_fields_and_params_are_vertebraes(name, theirs, ours):
    assert [field_signature(f) for f in dataclasses.fields(ours)] == [
        field_signature(f) for f in dataclasses.fields(theirs)
    ]
    for param in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert getattr(ours.__dataclass_params__, param) == getattr(theirs.__dataclass_params__, param), param
    assert ours.__name__ == ours.__qualname__ == name
    assert ours.__module__ == "tally.profiling"
    assert getattr(T, name) is ours
    assert ours.__match_args__ == theirs.__match_args__


def all_defaulted(cls: type) -> bool:
    return all(
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        for f in dataclasses.fields(cls)
    )


DEFAULTED = [item for item in PAIRS if all_defaulted(item[1])]


@pytest.mark.parametrize("name, theirs, ours", DEFAULTED, ids=[pair[0] for pair in DEFAULTED])
def test_defaults_build_equal_instances(name, theirs, ours):
    assert dataclasses.asdict(ours()) == dataclasses.asdict(theirs())
    assert repr(ours()).replace("tally.profiling.", "") == repr(theirs()).replace("vertebrae.profiling.", "")


# --------------------------------------------------------------------------
# Construction checks (the __post_init__ rules)

CONSTRUCTION = {
    "AdapterOperationResult": [
        {"status": "succeeded"},
        {"status": "not_applicable", "reason": "CPU"},
        {"status": "unavailable", "reason": None},
        {"status": "bogus"},
        {"status": ""},
        {"status": "Succeeded"},
        {},
        {"reason": "x"},
        {"status": "succeeded", "other": 1},
    ],
    "ResourceAdapterMetadata": [
        {},
        {"backend": "torch", "device": "cuda:0", "device_resolution": "explicit", "asynchronous": True,
         "synchronization_method": "torch.cuda.synchronize", "weight_dtypes": ("torch.float32",)},
        {"weight_dtypes": ["a", "b"]},
        {"device_resolution": ""},
        {"device_resolution": "model_state_conflicts_with_profiling_hint"},
    ],
    "DeviceMemoryMeasurement": [
        {"status": "unavailable"},
        {"status": "not_applicable", "unavailable_reason": "CPU"},
        {"status": "measured", "peak_allocated_bytes": 1, "measurement_scope": "profile_window"},
        {"status": "measured", "peak_allocated_bytes": 0, "baseline_allocated_bytes": 0, "baseline_reserved_bytes": 3,
         "peak_reserved_bytes": 4, "measurement_scope": "profile_window", "backend": "b", "device": "d"},
        {"status": "measured", "peak_allocated_bytes": np.int64(7), "measurement_scope": "profile_window"},
        {"status": "x"},
        {"status": "measured"},
        {"status": "measured", "peak_allocated_bytes": 1},
        {"status": "measured", "peak_allocated_bytes": 1, "measurement_scope": "window"},
        {"status": "measured", "measurement_scope": "profile_window"},
        {"status": "unavailable", "measurement_scope": "profile_window"},
        {"status": "not_applicable", "measurement_scope": "x"},
        {"status": "unavailable", "baseline_allocated_bytes": -1},
        {"status": "unavailable", "baseline_reserved_bytes": -1},
        {"status": "unavailable", "peak_reserved_bytes": -1},
        {"status": "measured", "peak_allocated_bytes": -5, "measurement_scope": "profile_window"},
        {"status": "unavailable", "peak_reserved_bytes": -1, "baseline_allocated_bytes": -2},
        {"status": "x", "baseline_allocated_bytes": -2},
        {"status": "measured", "baseline_allocated_bytes": -1},
    ],
    "ModelFootprintMeasurement": [
        {"status": "unavailable"},
        {"status": "unavailable", "unavailable_reason": "no model", "trainable_parameter_count": 5},
        {"status": "measured", "parameter_count": 1},
        {"status": "measured", "parameter_bytes": 1},
        {"status": "measured", "in_memory_bytes": 0},
        {"status": "measured", "parameter_count": 4, "parameter_bytes": 16, "trainable_parameter_count": 4,
         "trainable_parameter_bytes": 16, "buffer_bytes": 8, "in_memory_bytes": 24, "weight_dtypes": ("f32",)},
        {"status": "measured", "parameter_count": np.int64(3)},
        {"status": "x"},
        {"status": "not_applicable"},
        {"status": "measured"},
        {"status": "measured", "buffer_bytes": 1},
        {"status": "measured", "trainable_parameter_count": 1},
        {"status": "measured", "parameter_count": 1, "trainable_parameter_count": 2},
        {"status": "measured", "parameter_bytes": 1, "trainable_parameter_bytes": 2},
        {"status": "unavailable", "in_memory_bytes": -1},
        {"status": "measured", "parameter_count": -1},
        {"status": "measured", "parameter_count": 1, "buffer_bytes": -1},
        {"status": "x", "parameter_count": -1},
    ],
    "DeploymentArtifact": [
        {"path": "a"},
        {"path": "a", "role": "bundle", "recursive": True},
        {"path": ""},
        {"path": "a", "role": ""},
        {"path": "", "role": ""},
        {},
    ],
    "DeviceMemoryProfile": [
        {"status": "disabled"},
        {"status": "not_measured", "unavailable_reason": "No extractor calls were measured."},
        {"status": "measured", "measurement_scope": "profile_window", "peak_allocated_bytes": 5},
        {"status": "measured"},
        {"status": "measured", "measurement_scope": "other"},
        {"status": "unavailable", "measurement_scope": "profile_window"},
        {},
    ],
    "ResourceProfilingConfig": [
        {},
        {"enabled": True, "host_memory": False, "device_memory": False, "persisted_storage": False},
        {"host_sample_interval_seconds": 1},
        {"host_sample_interval_seconds": np.float64(0.5)},
        {"quality_tolerance": 0},
        {"enabled": 1},
        {"host_memory": "x"},
        {"device_memory": 0},
        {"persisted_storage": None},
        {"enabled": np.bool_(True)},
        {"host_sample_interval_seconds": 0},
        {"host_sample_interval_seconds": -1},
        {"host_sample_interval_seconds": float("nan")},
        {"host_sample_interval_seconds": float("inf")},
        {"host_sample_interval_seconds": "1"},
        {"host_sample_interval_seconds": True},
        {"quality_tolerance": -0.1},
        {"quality_tolerance": True},
        {"quality_tolerance": float("-inf")},
        {"quality_tolerance": None},
        {"enabled": "yes", "quality_tolerance": -1},
    ],
}

THEIR_CLASSES = {name: getattr(V, name, None) for name in CONSTRUCTION}
THEIR_CLASSES["ResourceProfilingConfig"] = vertebrae_config.ResourceProfilingConfig

CONSTRUCTION_CASES = [(name, kwargs) for name, table in CONSTRUCTION.items() for kwargs in table]


def normalized(result: tuple[str, Any]) -> tuple[str, Any]:
    """An outcome with the instance replaced by its fields (``asdict``)."""
    kind, value = result
    return (kind, dataclasses.asdict(value)) if kind == "ok" else (kind, value)


@pytest.mark.parametrize(
    "name, kwargs", CONSTRUCTION_CASES, ids=[f"{name}-{index}" for index, (name, _) in enumerate(CONSTRUCTION_CASES)]
)
def test_construction_accepts_and_rejects_as_vertebrae(name, kwargs):
    theirs = normalized(outcome(lambda: THEIR_CLASSES[name](**kwargs)))
    ours = normalized(outcome(lambda: getattr(T, name)(**kwargs)))
    if theirs[0] == "error":
        # A missing argument names the class's __init__ (same qualname).
        assert ours == theirs
    else:
        assert ours[0] == "ok", f"tally rejects what vertebrae accepts: {ours[1]}"
        assert ours[1] == theirs[1]


def test_every_checked_class_has_valid_and_invalid_cases():
    for name, table in CONSTRUCTION.items():
        results = [outcome(lambda: THEIR_CLASSES[name](**kwargs))[0] for kwargs in table]
        assert "ok" in results and "error" in results, name


def test_positional_construction_and_frozenness():
    assert T.AdapterOperationResult("unavailable", "why") == T.AdapterOperationResult(status="unavailable", reason="why")
    assert T.DeploymentArtifact("p", "r", True).recursive is True
    for name in vertebrae_dataclasses():
        theirs, ours = getattr(V, name), getattr(T, name)
        assert ours.__dataclass_params__.frozen == theirs.__dataclass_params__.frozen
    frozen = T.DeviceMemoryMeasurement(status="unavailable")
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.status = "measured"  # type: ignore[misc]
    mutable = T.InferenceProfile(status="not_measured")
    mutable.warm_call_count = 3
    assert mutable.warm_call_count == 3
    assert hash(T.AdapterOperationResult("succeeded")) == hash(T.AdapterOperationResult("succeeded"))


#: "Fields are typed" (docs/PARITY.md): vertebrae stores these wrong-typed
#: values unchecked (or rejects them by its value rule); tally's types reject
#: them with a ValueError naming the type.
TYPED_FIELDS = [
    ("AdapterOperationResult", {"status": "succeeded", "reason": 3}),
    ("AdapterOperationResult", {"status": None}),
    ("AdapterOperationResult", {"status": 1}),
    ("ResourceAdapterMetadata", {"backend": 1}),
    ("ResourceAdapterMetadata", {"device_resolution": None}),
    ("ResourceAdapterMetadata", {"asynchronous": 1}),
    ("ResourceAdapterMetadata", {"weight_dtypes": "ab"}),
    ("DeviceMemoryMeasurement", {"status": "measured", "peak_allocated_bytes": 1.5, "measurement_scope": "profile_window"}),
    ("DeviceMemoryMeasurement", {"status": "measured", "peak_allocated_bytes": True, "measurement_scope": "profile_window"}),
    ("DeploymentArtifact", {"path": None}),
    ("DeploymentArtifact", {"path": "a", "role": None}),
    # Closed enums and u64 sizes.
    ("DeviceMemoryProfile", {"status": "bogus"}),
    ("DeviceMemoryProfile", {"status": "not_measured", "peak_allocated_bytes": -1}),
]


@pytest.mark.parametrize("name, kwargs", TYPED_FIELDS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(TYPED_FIELDS)])
def test_typed_fields_are_a_documented_difference(name, kwargs):
    theirs = outcome(lambda: THEIR_CLASSES[name](**kwargs))
    ours = outcome(lambda: getattr(T, name)(**kwargs))
    assert ours[0] == "error" and ours[1][0] == "ValueError", ours
    # vertebrae either stores the value or rejects it by a value rule.
    assert theirs[0] == "ok" or theirs[1][0] == "ValueError", theirs
    if theirs[0] == "error":
        assert ours[1][1] != theirs[1][1]


# --------------------------------------------------------------------------
# Profiles: the same extractor profiled by both libraries


class Lib:
    def __init__(self, name: str, module: Any, config: Any) -> None:
        self.name, self.module, self.config = name, module, config

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.module, attribute)

    def __repr__(self) -> str:
        return self.name


VERTEBRAE = Lib("vertebrae", V, vertebrae_config.ResourceProfilingConfig)
TALLY = Lib("tally", T, T.ResourceProfilingConfig)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("artifacts")
    weights = root / "weights.bin"
    weights.write_bytes(b"w" * 1000)
    bundle = root / "bundle"
    (bundle / "sub").mkdir(parents=True)
    (bundle / "a.bin").write_bytes(b"a" * 50)
    (bundle / "sub" / "b.bin").write_bytes(b"b" * 70)
    os.symlink(bundle / "a.bin", bundle / "link.bin")  # inside the bundle: counted once
    escaping = root / "escaping"
    escaping.mkdir()
    (escaping / "c.bin").write_bytes(b"c" * 30)
    os.symlink(weights, escaping / "out.bin")  # out of the root: skipped, so partial
    return {
        "root": str(root), "weights": str(weights), "bundle": str(bundle), "escaping": str(escaping),
        "missing": str(root / "missing.bin"),
    }


def fake_adapter(lib: Lib, paths: dict[str, str], **overrides: Callable) -> Any:
    """A ``BaseResourceProfileAdapter`` subclass of ``lib`` answering every
    hook as a CUDA-like backend would; ``overrides`` replace hooks."""

    class FakeAdapter(lib.BaseResourceProfileAdapter):
        def metadata(self):
            return lib.ResourceAdapterMetadata(
                backend="fake", device="cuda:0", device_resolution="explicit", asynchronous=True,
                synchronization_method="fake.synchronize", weight_dtypes=("float32", "int8"),
            )

        def synchronize(self):
            return lib.AdapterOperationResult("succeeded")

        def reset_peak_device_memory(self):
            return lib.AdapterOperationResult("succeeded")

        def peak_device_memory(self):
            return lib.DeviceMemoryMeasurement(
                status="measured", backend="fake", device="cuda:0", baseline_allocated_bytes=100,
                baseline_reserved_bytes=200, peak_allocated_bytes=150, peak_reserved_bytes=180,
                measurement_scope="profile_window",
            )

        def model_footprint(self):
            return lib.ModelFootprintMeasurement(
                status="measured", parameter_count=10, parameter_bytes=40, trainable_parameter_count=5,
                trainable_parameter_bytes=20, buffer_bytes=8, weight_dtypes=("float32",),
            )

        def deployment_artifacts(self):
            return (
                lib.DeploymentArtifact(paths["weights"]),
                lib.DeploymentArtifact(paths["bundle"], role="bundle", recursive=True),
            )

    for hook, body in overrides.items():
        setattr(FakeAdapter, hook, body)
    return FakeAdapter()


class Extractor:
    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def get_resource_profile_adapter(self):
        return self.make()


def raises(error: Exception) -> Callable:
    def hook(self):
        raise error

    return hook


# Adapter scenarios: each gives, for a library and the artifact paths, the
# extractor to profile.
def with_fake(**overrides: Callable[[Lib, dict], Callable]) -> Callable[[Lib, dict], Any]:
    def make(lib: Lib, paths: dict) -> Any:
        hooks = {hook: build(lib, paths) for hook, build in overrides.items()}
        return Extractor(lambda: fake_adapter(lib, paths, **hooks))

    return make


def hook_returning(value: Callable[[Lib, dict], Any]) -> Callable[[Lib, dict], Callable]:
    return lambda lib, paths: (lambda self: value(lib, paths))


def hook_raising(error: Exception) -> Callable[[Lib, dict], Callable]:
    return lambda lib, paths: raises(error)


class NoneFactory:
    def get_resource_profile_adapter(self):
        return None


class RaisingFactory:
    def get_resource_profile_adapter(self):
        raise KeyError("no adapter registered")


class NotCallableFactory:
    get_resource_profile_adapter = 5


HOOKS = ["metadata", "synchronize", "reset_peak_device_memory", "peak_device_memory", "model_footprint", "deployment_artifacts"]

ADAPTERS: dict[str, Callable[[Lib, dict], Any]] = {
    "no_adapter": lambda lib, paths: object(),
    "factory_returns_none": lambda lib, paths: NoneFactory(),
    "factory_raises": lambda lib, paths: RaisingFactory(),
    "factory_not_callable": lambda lib, paths: NotCallableFactory(),
    "base_adapter": lambda lib, paths: Extractor(lib.BaseResourceProfileAdapter),
    "full": with_fake(),
    **{f"{hook}_raises": with_fake(**{hook: hook_raising(RuntimeError(f"{hook} broke"))}) for hook in HOOKS},
    **{f"{hook}_wrong_type": with_fake(**{hook: hook_returning(lambda lib, paths: "nope")}) for hook in HOOKS},
    **{f"{hook}_returns_none": with_fake(**{hook: hook_returning(lambda lib, paths: None)}) for hook in HOOKS},
    "artifacts_list": with_fake(deployment_artifacts=hook_returning(lambda lib, p: [lib.DeploymentArtifact(p["weights"])])),
    "artifacts_generator": with_fake(
        deployment_artifacts=hook_returning(lambda lib, p: (item for item in [lib.DeploymentArtifact(p["weights"])]))
    ),
    "artifacts_of_strings": with_fake(deployment_artifacts=hook_returning(lambda lib, p: [p["weights"]])),
    "artifacts_mixed": with_fake(
        deployment_artifacts=hook_returning(
            lambda lib, p: [
                lib.DeploymentArtifact(p["weights"]),
                lib.DeploymentArtifact(p["weights"], role="again"),
                lib.DeploymentArtifact(p["bundle"]),
                lib.DeploymentArtifact(p["missing"]),
                lib.DeploymentArtifact(p["bundle"], role="bundle", recursive=True),
                lib.DeploymentArtifact(p["escaping"], role="bundle", recursive=True),
            ]
        )
    ),
    "artifacts_missing_only": with_fake(deployment_artifacts=hook_returning(lambda lib, p: [lib.DeploymentArtifact(p["missing"])])),
    "model_unavailable_no_artifacts": with_fake(
        model_footprint=hook_returning(lambda lib, p: lib.ModelFootprintMeasurement(status="unavailable", unavailable_reason="lazy")),
        deployment_artifacts=hook_returning(lambda lib, p: ()),
    ),
    "model_parameters_only": with_fake(
        model_footprint=hook_returning(lambda lib, p: lib.ModelFootprintMeasurement(status="measured", parameter_bytes=64, buffer_bytes=4)),
    ),
    "synchronize_unavailable": with_fake(synchronize=hook_returning(lambda lib, p: lib.AdapterOperationResult("unavailable", "no queue"))),
    "cpu_reset_not_applicable": with_fake(
        metadata=hook_returning(lambda lib, p: lib.ResourceAdapterMetadata(backend="fake", device="cpu")),
        reset_peak_device_memory=hook_returning(lambda lib, p: lib.AdapterOperationResult("not_applicable")),
    ),
    "gpu_reset_not_applicable": with_fake(
        reset_peak_device_memory=hook_returning(lambda lib, p: lib.AdapterOperationResult("not_applicable")),
    ),
    "reset_unavailable_with_reason": with_fake(
        reset_peak_device_memory=hook_returning(lambda lib, p: lib.AdapterOperationResult("unavailable", "driver too old")),
    ),
    "peak_unavailable_without_reason": with_fake(
        peak_device_memory=hook_returning(lambda lib, p: lib.DeviceMemoryMeasurement(status="unavailable")),
    ),
    "peak_not_applicable_backend_fallback": with_fake(
        peak_device_memory=hook_returning(lambda lib, p: lib.DeviceMemoryMeasurement(status="not_applicable", backend="", device=None)),
    ),
    "conflicting_hint": with_fake(
        metadata=hook_returning(
            lambda lib, p: lib.ResourceAdapterMetadata(
                backend="fake", device="cuda:1", device_resolution="model_state_conflicts_with_profiling_hint"
            )
        ),
        profiling_device=lambda lib, p: "cuda:0",
    ),
}


def no_calls(profiler) -> None:
    pass


def one_call(profiler) -> None:
    assert profiler.measure_call(lambda: "out", samples=2, call_type="batch") == "out"


def two_calls(profiler) -> None:
    sentinel = object()
    assert profiler.measure_call(lambda: sentinel, samples=2, call_type="batch") is sentinel
    assert profiler.measure_call(lambda: [1, 2, 3], samples=3, call_type="batch", includes_fit=False) == [1, 2, 3]


def many_calls(profiler) -> None:
    for index, samples in enumerate([4, 4, 4, 2, 1]):
        profiler.measure_call(lambda: sum(range(1000 * (index + 1))), samples=samples, call_type="batch", includes_fit=index == 0)


def planning_probes(profiler) -> None:
    profiler.mark_last_call_materialized()  # nothing to mark yet
    profiler.measure_call(lambda: 1, samples=1, call_type="planning_probe", materialized=False)
    profiler.measure_call(lambda: 1, samples=4, call_type="planning_probe", materialized=False)
    profiler.mark_last_call_materialized()
    profiler.measure_call(lambda: 1, samples=5, call_type="batch", includes_fit=True)
    profiler.measure_call(lambda: 1, samples=6, call_type="stream")


def only_a_probe(profiler) -> None:
    profiler.measure_call(lambda: 1, samples=1, call_type="planning_probe", materialized=False)


class Boom(Exception):
    pass


def a_call_raises(profiler) -> None:
    profiler.measure_call(lambda: 1, samples=2, call_type="batch")
    error = Boom("extractor failed")

    def fail():
        raise error

    with pytest.raises(Boom) as caught:
        profiler.measure_call(fail, samples=3, call_type="batch")
    assert caught.value is error
    profiler.measure_call(lambda: 1, samples=4, call_type="batch")


def the_first_call_raises(profiler) -> None:
    with pytest.raises(ZeroDivisionError):
        profiler.measure_call(lambda: 1 / 0, samples=3, call_type="batch")


SCRIPTS = {
    "no_calls": no_calls,
    "one_call": one_call,
    "two_calls": two_calls,
    "many_calls": many_calls,
    "planning_probes": planning_probes,
    "only_a_probe": only_a_probe,
    "a_call_raises": a_call_raises,
    "the_first_call_raises": the_first_call_raises,
}

CONFIGS = {
    "default": {"enabled": True},
    "disabled": {"enabled": False},
    "host_memory_off": {"enabled": True, "host_memory": False},
    "device_memory_off": {"enabled": True, "device_memory": False},
}


def profile(lib: Lib, adapter: str, script: str, paths: dict, *, config: str = "default", cache_hit: bool = False,
            context: dict | None = None) -> dict:
    extractor = ADAPTERS[adapter](lib, paths)
    profiler = lib.ResourceProfiler(
        lib.config(**CONFIGS[config]), extractor, streaming=script == "planning_probes",
        context={"modality": "text", "branch": "main"} if context is None else context,
    )
    assert profiler.extractor is extractor and profiler.streaming == (script == "planning_probes")
    SCRIPTS[script](profiler)
    finished = profiler.finish(cache_hit=cache_hit)
    assert type(finished) is lib.ResourceProfile
    return profile_dict(profiler, finished)


def profile_dict(profiler: Any, finished: Any) -> dict:
    """``asdict`` of a finished profile. tally reports how it measured the
    host high-water mark beside the profile (whose context is vertebrae's key
    for key); the checks read it with the context."""
    result = dataclasses.asdict(finished)
    if hasattr(profiler, "host_memory_method"):
        assert "host_memory_method" not in result["context"]
        if profiler.host_memory_method is not None:
            result["context"]["host_memory_method"] = profiler.host_memory_method
    return result


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_finished_context_is_vertebraes_key_for_key_in_order(config):
    contexts = []
    for lib in (VERTEBRAE, TALLY):
        profiler = lib.ResourceProfiler(
            lib.config(**CONFIGS[config]), lambda batch: batch, streaming=False,
            context={"zeta": 1, "alpha": 2, "streaming": "caller's"},
        )
        profiler.measure_call(lambda: None, samples=2, call_type="batch")
        profiler.measure_call(lambda: None, samples=3, call_type="batch")
        contexts.append(profiler.finish().context)
    theirs, ours = contexts
    assert list(ours) == list(theirs)
    assert ours["streaming"] == theirs["streaming"] == "caller's"


def same_shape(theirs: Any, ours: Any, path: str = "") -> None:
    """The same keys and value types, recursively (documented differences
    excepted)."""
    if path == "host_memory.sample_interval_seconds":
        return
    assert type(ours) is type(theirs), f"{path}: {type(theirs).__name__} vs {type(ours).__name__}"
    if isinstance(theirs, dict):
        extra = set(ours) - set(theirs)
        if path == "context":
            extra -= TALLY_ONLY_CONTEXT_KEYS
        assert extra == set() and set(theirs) <= set(ours), f"{path}: {sorted(theirs)} vs {sorted(ours)}"
        for key in theirs:
            same_shape(theirs[key], ours[key], f"{path}.{key}" if path else key)
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), path
        for index, (a, b) in enumerate(zip(theirs, ours)):
            same_shape(a, b, f"{path}[{index}]")


def without_measured(value: dict) -> dict:
    """A profile dict less what is measured differently on purpose."""
    value = copy.deepcopy(value)
    for key in TIMINGS:
        value["inference"].pop(key)
    for key in HOST_FIELDS:
        value["host_memory"].pop(key)
    for key in TALLY_ONLY_CONTEXT_KEYS:
        value["context"].pop(key, None)
    return value


def check_timing(value: dict) -> None:
    inference = value["inference"]
    if inference["status"] != "measured":
        assert all(inference[key] is None for key in TIMINGS), inference
        return
    first, total = inference["first_call_seconds"], inference["total_materialized_seconds"]
    assert first >= 0 and total >= first
    samples = inference["materialized_samples"]
    assert samples == sum(inference["batch_sizes"])
    if total > 0:
        assert math.isclose(inference["throughput_samples_per_second"], samples / total)
    warm = inference["warm_call_count"]
    if warm == 0:
        assert all(inference[key] is None for key in ("warm_mean_seconds", "warm_median_seconds", "warm_p95_seconds", "warm_max_seconds"))
        return
    mean, median, p95, peak = (inference[f"warm_{key}_seconds"] for key in ("mean", "median", "p95", "max"))
    assert 0 <= median <= p95 <= peak and 0 <= mean <= peak
    assert first + mean * warm == pytest.approx(total, rel=1e-9, abs=1e-12)
    warm_samples = sum(inference["batch_sizes"][1:])
    if warm_samples:
        assert inference["warm_mean_seconds_per_sample"] == pytest.approx(mean * warm / warm_samples, rel=1e-9)


def check_host(theirs: dict, ours: dict) -> None:
    """Host memory: same status; tally's figures are the kernel's exact mark."""
    host, context = ours["host_memory"], ours["context"]
    assert host["status"] == theirs["host_memory"]["status"]
    if host["status"] == "measured":
        assert context["host_memory_method"] in HOST_MEMORY_METHODS
        assert 0 < host["baseline_rss_bytes"] <= host["peak_rss_bytes"]
        assert host["peak_increase_bytes"] == host["peak_rss_bytes"] - host["baseline_rss_bytes"]
        if context["host_memory_method"] == "rss_sampler":
            assert host["sample_interval_seconds"] == theirs["host_memory"]["sample_interval_seconds"]
        else:
            assert host["sample_interval_seconds"] is None
        assert isinstance(theirs["host_memory"]["sample_interval_seconds"], float)
    else:
        assert "host_memory_method" not in context
        assert all(host[key] is None for key in HOST_FIELDS)


def assert_profiles_agree(theirs: dict, ours: dict, *, adapter_modules: bool = False) -> None:
    if adapter_modules:
        # The library's own base adapter: module.Class of the object.
        assert theirs["context"]["resource_adapter"] == "vertebrae.profiling.BaseResourceProfileAdapter"
        assert ours["context"]["resource_adapter"] == "tally.profiling.BaseResourceProfileAdapter"
        theirs = copy.deepcopy(theirs)
        theirs["context"]["resource_adapter"] = ours["context"]["resource_adapter"]
    same_shape(theirs, ours)
    assert without_measured(ours) == without_measured(theirs)
    check_timing(theirs)
    check_timing(ours)
    check_host(theirs, ours)


def pair(adapter: str, script: str, paths: dict, **options: Any) -> tuple[dict, dict]:
    return profile(VERTEBRAE, adapter, script, paths, **options), profile(TALLY, adapter, script, paths, **options)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_adapter_scenarios_profile_as_vertebrae(adapter, artifacts):
    theirs, ours = pair(adapter, "two_calls", artifacts)
    assert_profiles_agree(theirs, ours, adapter_modules=adapter == "base_adapter")


@pytest.mark.parametrize("adapter", ["no_adapter", "full", "base_adapter", "synchronize_unavailable"])
@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("cache_hit", [False, True], ids=["miss", "cache_hit"])
def test_call_scripts_profile_as_vertebrae(adapter, script, cache_hit, artifacts):
    theirs, ours = pair(adapter, script, artifacts, cache_hit=cache_hit)
    assert_profiles_agree(theirs, ours, adapter_modules=adapter == "base_adapter")


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("adapter", ["no_adapter", "full", "cpu_reset_not_applicable"])
def test_configs_profile_as_vertebrae(config, adapter, artifacts):
    theirs, ours = pair(adapter, "planning_probes", artifacts, config=config)
    assert_profiles_agree(theirs, ours)


def test_the_expected_warnings_and_statuses_are_there(artifacts):
    """A few of the compared profiles, spelled out, so that agreement is not
    agreement on nothing."""
    _, full = pair("full", "two_calls", artifacts)
    assert full["status"] == "measured" and full["device_memory"]["status"] == "measured"
    assert full["device_memory"]["peak_allocated_increase_bytes"] == 50
    assert full["model"]["status"] == "measured" and full["model"]["checkpoint_bytes"] == 1000 + 50 + 70
    assert [a["status"] for a in full["model"]["artifacts"]] == ["measured", "measured"]
    assert full["context"]["synchronization_status"] == "synchronized"
    assert full["context"]["resource_adapter"].endswith(".FakeAdapter")
    assert full["warnings"] == []
    _, mixed = pair("artifacts_mixed", "two_calls", artifacts)
    assert [a["status"] for a in mixed["model"]["artifacts"]] == [
        "measured", "duplicate", "directory_requires_recursive", "missing", "measured", "partial",
    ]
    assert mixed["model"]["checkpoint_status"] == "partial"
    assert mixed["model"]["artifacts"][-1]["reason"] == "Skipped 1 unreadable or out-of-root paths."
    _, generator = pair("artifacts_generator", "two_calls", artifacts)
    assert generator["warnings"] == [
        "Resource profiling adapter hook 'deployment_artifacts' returned an invalid typed payload."
    ]
    _, raised = pair("factory_raises", "two_calls", artifacts)
    assert "Resource profiling adapter hook 'get_resource_profile_adapter' failed with KeyError: 'no adapter registered'" in raised["warnings"]
    _, none = pair("factory_returns_none", "two_calls", artifacts)
    assert none["context"]["resource_adapter"] is None
    assert not any("get_resource_profile_adapter" in warning for warning in none["warnings"])
    _, wrong = pair("metadata_wrong_type", "two_calls", artifacts)
    assert "Resource profiling adapter hook 'metadata' failed with TypeError: expected ResourceAdapterMetadata, got str" in wrong["warnings"]
    _, unsynced = pair("synchronize_unavailable", "two_calls", artifacts)
    assert unsynced["context"]["synchronization_status"] == "host_observed"
    assert "Device execution could not be synchronized; latency is host-observed." in unsynced["warnings"]
    _, hint = pair("conflicting_hint", "one_call", artifacts)
    assert hint["context"]["profiling_device_hint"] == "cuda:0"
    assert "The loaded model device overrides a conflicting profiling_device hint." in hint["warnings"]
    _, probes = pair("full", "planning_probes", artifacts)
    assert probes["inference"]["batch_sizes"] == [4, 5, 6]
    assert probes["context"]["planning_probe_calls"] == 1 and probes["context"]["first_call_materialized"] is False
    _, cached = pair("full", "no_calls", artifacts, cache_hit=True)
    assert cached["status"] == "not_measured_cache_hit" and cached["context"]["cache_status"] == "hit"
    assert cached["device_memory"]["status"] == "not_measured_cache_hit"
    _, raising = pair("full", "a_call_raises", artifacts)
    assert raising["inference"]["batch_sizes"] == [2, 4]
    assert [item["index"] for item in raising["context"]["call_order"]] == [0, 1]


def test_caller_context_wins_over_the_profilers_keys(artifacts):
    context = {"streaming": "caller", "cache_status": "caller", "backend": "caller", "extra": [1, {"a": None}]}
    theirs, ours = pair("full", "two_calls", artifacts, context=context)
    assert_profiles_agree(theirs, ours)
    assert ours["context"]["streaming"] == "caller" and ours["context"]["extra"] == [1, {"a": None}]


@pytest.mark.parametrize("lib", [VERTEBRAE, TALLY], ids=repr)
def test_a_disabled_profiler_only_runs_the_call(lib):
    calls = []
    profiler = lib.ResourceProfiler(lib.config(enabled=False), Extractor(lib.BaseResourceProfileAdapter), streaming=False)
    assert profiler.measure_call(lambda: calls.append(1) or "value", samples=3, call_type="batch") == "value"
    def fail():
        raise Boom("x")

    with pytest.raises(Boom):
        profiler.measure_call(fail, samples=1, call_type="batch")
    assert calls == [1]
    finished = profiler.finish()
    assert finished.status == "not_measured" and finished.inference.batch_sizes == []


def test_the_profiler_keeps_what_it_was_given():
    config = T.ResourceProfilingConfig(enabled=True, host_memory=False)
    adapter = T.BaseResourceProfileAdapter()
    extractor = Extractor(lambda: adapter)
    profiler = T.ResourceProfiler(config, extractor, streaming=True)
    assert profiler.config is config and profiler.extractor is extractor and profiler.adapter is adapter
    assert profiler.streaming is True
    assert T.ResourceProfiler(config, object(), streaming=False).adapter is None
    # vertebrae's own config object is accepted too.
    theirs = vertebrae_config.ResourceProfilingConfig(enabled=True, host_memory=False)
    assert T.ResourceProfiler(theirs, object(), streaming=False).finish().host_memory.status == "disabled"
    with pytest.raises(TypeError):
        T.ResourceProfiler(config, object())  # streaming is keyword-only and required


def test_vertebraes_base_adapter_works_through_tallys_profiler():
    """Duck typing: vertebrae's adapter objects pass through tally's profiler."""
    extractor = Extractor(V.BaseResourceProfileAdapter)
    theirs = profile_with(VERTEBRAE, extractor)
    ours = profile_with(TALLY, extractor)
    same_shape(theirs, ours)
    assert without_measured(ours) == without_measured(theirs)


def profile_with(lib: Lib, extractor: Any, calls: Callable[[], Any] = lambda: None, count: int = 2, samples: int = 2) -> dict:
    profiler = lib.ResourceProfiler(lib.config(enabled=True), extractor, streaming=False)
    for _ in range(count):
        profiler.measure_call(calls, samples=samples, call_type="batch")
    return profile_dict(profiler, profiler.finish())


# --------------------------------------------------------------------------
# Real frameworks through vertebrae's own adapter objects


class TorchExtractor:
    def __init__(self, model: Any, artifacts: list[str]) -> None:
        self.model = model
        self.artifacts = artifacts

    def get_resource_profile_adapter(self):
        return V.TorchResourceProfileAdapter(self, self.artifacts)


@pytest.fixture(scope="module")
def torch_model(tmp_path_factory):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    model[2].weight.requires_grad_(False)
    model.eval()
    path = tmp_path_factory.mktemp("torch") / "model.pt"
    torch.save(model.state_dict(), path)
    return torch, model, str(path)


def test_torch_module_through_vertebraes_torch_adapter(torch_model):
    torch, model, path = torch_model
    extractor = TorchExtractor(model, [path])
    batch = torch.randn(5, 4)

    def infer():
        with torch.no_grad():
            return model(batch).numpy()

    theirs = profile_with(VERTEBRAE, extractor, infer, count=3, samples=5)
    ours = profile_with(TALLY, extractor, infer, count=3, samples=5)
    assert_profiles_agree(theirs, ours)
    model_footprint = ours["model"]
    assert model_footprint["status"] == "measured" and model_footprint["checkpoint_status"] == "measured"
    assert model_footprint["parameter_count"] == 4 * 3 + 3 + 3 + 3 + 3 * 2 + 2
    assert model_footprint["trainable_parameter_count"] == model_footprint["parameter_count"] - 3 * 2
    assert model_footprint["weight_dtypes"] == ["torch.float32", "torch.int64"]
    assert model_footprint["checkpoint_bytes"] == os.path.getsize(path)
    context = ours["context"]
    assert context["resource_adapter"] == "vertebrae.profiling.TorchResourceProfileAdapter"
    assert (context["backend"], context["device"], context["device_resolution"]) == ("torch", "cpu", "model_state")
    assert context["synchronization_method"] == "not_applicable" and context["asynchronous"] is False
    assert ours["device_memory"]["status"] == "not_applicable"
    assert ours["device_memory"]["unavailable_reason"] == "CPU memory is reported through process RSS."


def test_torch_adapter_without_a_model(torch_model):
    extractor = TorchExtractor(None, [])
    theirs = profile_with(VERTEBRAE, extractor)
    ours = profile_with(TALLY, extractor)
    assert_profiles_agree(theirs, ours)
    assert ours["model"]["status"] == "unavailable"
    assert ours["context"]["device_resolution"] == "default_cpu"


class ONNXExtractor:
    def __init__(self, model_path: Path, external: list[str]) -> None:
        import onnxruntime

        self.model_path = model_path
        self.external = external
        self._session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])

    def get_resource_profile_adapter(self):
        return V.ONNXResourceProfileAdapter(self, self.external)

    def __call__(self) -> Any:
        inputs = {}
        for item in self._session.get_inputs():
            shape = [dim if isinstance(dim, int) else 2 for dim in item.shape]
            inputs[item.name] = np.ones(shape, dtype=np.float32)
        return self._session.run(None, inputs)


@pytest.mark.parametrize(
    "model, external",
    [("mlp_f32_f16.onnx", []), ("external_data.onnx", ["external_data.bin"])],
    ids=["mlp", "external_data"],
)
def test_onnx_model_through_vertebraes_onnx_adapter(model, external):
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    path = ONNX_FIXTURES / model
    if not path.exists():
        pytest.skip(f"the ONNX fixture {path} is missing")
    try:
        extractor = ONNXExtractor(path, [str(ONNX_FIXTURES / name) for name in external])
        extractor()
    except Exception as error:  # noqa: BLE001 - the fixture may need inputs this test does not make
        pytest.skip(f"onnxruntime cannot run {model}: {type(error).__name__}: {error}")
    theirs = profile_with(VERTEBRAE, extractor, extractor, count=2, samples=4)
    ours = profile_with(TALLY, extractor, extractor, count=2, samples=4)
    assert_profiles_agree(theirs, ours)
    context = ours["context"]
    assert context["resource_adapter"] == "vertebrae.profiling.ONNXResourceProfileAdapter"
    assert (context["backend"], context["device"], context["device_resolution"]) == (
        "onnxruntime", "CPUExecutionProvider", "active_provider",
    )
    assert ours["device_memory"]["status"] == "unavailable"
    assert ours["model"]["parameter_status"] == "unavailable" and ours["model"]["checkpoint_status"] == "measured"
    expected = os.path.getsize(path) + sum(os.path.getsize(ONNX_FIXTURES / name) for name in external)
    assert ours["model"]["checkpoint_bytes"] == expected
    assert [a["role"] for a in ours["model"]["artifacts"]] == ["checkpoint"] + ["external_weights"] * len(external)


# --------------------------------------------------------------------------
# Round trips through the dict form


def strict_equal(theirs: Any, ours: Any) -> None:
    same_shape(theirs, ours)
    assert ours == theirs


@pytest.mark.parametrize("adapter", ["full", "artifacts_mixed", "no_adapter", "peak_unavailable_without_reason"])
@pytest.mark.parametrize("script", ["two_calls", "no_calls", "planning_probes"])
def test_profiles_cross_load_with_the_other_library(adapter, script, artifacts):
    theirs, ours = pair(adapter, script, artifacts)
    # tally's profile, loaded by vertebrae, and back.
    loaded = V.resource_profile_from_dict(ours)
    strict_equal(dataclasses.asdict(loaded), ours)
    # vertebrae's profile, loaded by tally.
    strict_equal(dataclasses.asdict(T.resource_profile_from_dict(theirs)), theirs)
    assert type(T.resource_profile_from_dict(theirs)) is T.ResourceProfile
    # The columns of the same profile.
    for prefix in ("", "resource_"):
        for value in (ours, theirs):
            expected = V.resource_profile_columns(V.resource_profile_from_dict(value), prefix=prefix)
            assert T.resource_profile_columns(T.resource_profile_from_dict(value), prefix=prefix) == expected
            # tally's columns of vertebrae's object (duck typing).
            assert T.resource_profile_columns(V.resource_profile_from_dict(value), prefix=prefix) == expected
    like = T.resource_profile_like_from_dict(theirs)
    assert type(like) is T.ResourceProfile
    strict_equal(dataclasses.asdict(like), theirs)


class Stat:
    def __init__(self, size: int, uri: str) -> None:
        self.size_bytes, self.uri, self.storage_format = size, uri, "npy"


@pytest.fixture(scope="module")
def distributed(artifacts) -> list[dict]:
    """vertebrae's aggregations of worker profiles (each made by tally and
    loaded by vertebrae, with embeddings as numpy arrays)."""
    shards = []
    for index, adapter in enumerate(["full", "full", "no_adapter"]):
        local = V.resource_profile_from_dict(profile(TALLY, adapter, "two_calls", artifacts))
        raw = np.zeros((4 + index, 8), dtype=np.float32)
        evaluated = np.zeros((4 + index, 4), dtype=np.float16)
        local = V.with_embedding_footprint(
            local, raw, evaluated, raw_stat=Stat(1000 + index, f"raw{index}"), evaluated_stat=Stat(300 + index, f"e{index}")
        )
        shards.append((f"shard-{index}", local))
    merged = np.zeros((9, 4), dtype=np.float16)
    cases = [
        V.aggregate_distributed_resource_profiles(shards[:2], merged_embeddings=merged),
        V.aggregate_distributed_resource_profiles(
            shards[:2], merged_embeddings=merged, all_shard_keys=["shard-0", "shard-1", "shard-2", "shard-3"],
            merged_stat=Stat(5000, "merged"),
        ),
        V.aggregate_distributed_resource_profiles(shards[2:], merged_embeddings=merged, persisted_storage=False),
        V.aggregate_distributed_resource_profiles([], merged_embeddings=merged, all_shard_keys=["a"]),
    ]
    return [dataclasses.asdict(case) for case in cases]


def test_distributed_profiles_load_as_vertebrae_loads_them(distributed):
    statuses = [case["status"] for case in distributed]
    assert statuses == ["measured", "partial", "measured", "not_measured"]
    for value in distributed:
        theirs = V.distributed_resource_profile_from_dict(value)
        ours = T.distributed_resource_profile_from_dict(value)
        assert type(ours) is T.DistributedResourceProfile
        strict_equal(dataclasses.asdict(ours), dataclasses.asdict(theirs))
        like = T.resource_profile_like_from_dict(value)
        assert type(like) is T.DistributedResourceProfile
        strict_equal(dataclasses.asdict(like), dataclasses.asdict(V.resource_profile_like_from_dict(value)))
        # And back: vertebrae loads what tally gives.
        strict_equal(dataclasses.asdict(V.distributed_resource_profile_from_dict(dataclasses.asdict(ours))), value)
        for prefix in ("", "dist_"):
            assert T.resource_profile_columns(ours, prefix=prefix) == V.resource_profile_columns(theirs, prefix=prefix)
            assert T.resource_profile_columns(theirs, prefix=prefix) == V.resource_profile_columns(theirs, prefix=prefix)
    assert T.resource_profile_like_from_dict(None) is None is V.resource_profile_like_from_dict(None)


def test_a_dict_with_shard_count_is_distributed(distributed):
    value = dict(distributed[0])
    value.pop("scope")
    assert type(T.resource_profile_like_from_dict(value)) is T.DistributedResourceProfile
    assert type(V.resource_profile_like_from_dict(value)) is V.DistributedResourceProfile


def test_columns_reject_what_is_not_a_profile():
    with pytest.raises(TypeError):
        T.resource_profile_columns(T.InferenceProfile(status="not_measured"))


# --------------------------------------------------------------------------
# Pickling, copying, replace


def test_profiles_pickle_copy_and_replace(artifacts):
    extractor = Extractor(lambda: fake_adapter(TALLY, artifacts))
    profiler = T.ResourceProfiler(T.ResourceProfilingConfig(enabled=True), extractor, streaming=False)
    profiler.measure_call(lambda: None, samples=2, call_type="batch")
    ours = profiler.finish()
    for copied in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours), copy.copy(ours)):
        assert type(copied) is T.ResourceProfile and copied == ours
        assert dataclasses.asdict(copied) == dataclasses.asdict(ours)
    assert type(pickle.loads(pickle.dumps(ours)).model.artifacts[0]) is T.ArtifactFootprint
    replaced = dataclasses.replace(ours, warnings=["changed"], status="not_measured")
    assert type(replaced) is T.ResourceProfile
    assert replaced.warnings == ["changed"] and replaced.inference is ours.inference and ours.warnings != ["changed"]
    for value in (
        T.AdapterOperationResult("succeeded"),
        T.ResourceAdapterMetadata(backend="b", weight_dtypes=("x",)),
        T.DeploymentArtifact("p", recursive=True),
        T.ResourceProfilingConfig(enabled=True, quality_tolerance=0.5),
    ):
        assert pickle.loads(pickle.dumps(value)) == value


def test_replace_reruns_the_checks_as_vertebrae():
    for lib in (V, T):
        measured = lib.DeviceMemoryMeasurement(status="measured", peak_allocated_bytes=1, measurement_scope="profile_window")
        assert dataclasses.replace(measured, peak_allocated_bytes=2).peak_allocated_bytes == 2
    theirs = V.DeviceMemoryMeasurement(status="measured", peak_allocated_bytes=1, measurement_scope="profile_window")
    ours = T.DeviceMemoryMeasurement(status="measured", peak_allocated_bytes=1, measurement_scope="profile_window")
    for change in ({"measurement_scope": None}, {"peak_allocated_bytes": None}, {"status": "bogus"}, {"baseline_allocated_bytes": -1}):
        expected = outcome(lambda: dataclasses.replace(theirs, **change))
        assert expected[0] == "error"
        assert outcome(lambda: dataclasses.replace(ours, **change)) == expected
    expected = outcome(lambda: dataclasses.replace(vertebrae_config.ResourceProfilingConfig(), quality_tolerance=-1.0))
    assert outcome(lambda: dataclasses.replace(T.ResourceProfilingConfig(), quality_tolerance=-1.0)) == expected


def test_many_calls_give_warm_statistics(artifacts):
    theirs, ours = pair("no_adapter", "many_calls", artifacts)
    for value in (theirs, ours):
        assert value["inference"]["warm_call_count"] == 4
        assert value["inference"]["batch_sizes"] == [4, 4, 4, 2, 1]
        assert value["inference"]["first_call_includes_fit"] is True
        assert value["warnings"] == ["Model parameter and checkpoint footprint is unavailable."]


def test_a_profiler_may_be_dropped_on_another_thread(artifacts):
    """Python's cyclic collector runs on whichever thread allocates (vertebrae's
    own sampler threads included), so a profiler caught in a cycle may be
    dropped on a thread that did not make it: no unraisable error, no leak."""
    import gc
    import sys
    import threading

    unraisable = []
    previous = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        gc.collect()
        extractor = Extractor(lambda: fake_adapter(TALLY, artifacts))
        profiler = T.ResourceProfiler(T.ResourceProfilingConfig(enabled=True), extractor, streaming=False)
        profiler.measure_call(lambda: None, samples=1, call_type="batch")
        cycle: list[Any] = [profiler]
        cycle.append(cycle)
        del profiler, cycle
        worker = threading.Thread(target=gc.collect)
        worker.start()
        worker.join()
    finally:
        sys.unraisablehook = previous
    assert [str(item.exc_value) for item in unraisable] == []
