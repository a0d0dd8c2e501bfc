"""tally.profiling's ``with_embedding_footprint``,
``with_distributed_embedding_footprint`` and
``aggregate_distributed_resource_profiles`` against vertebrae 1.1.0's, live.

Each case hands the same objects to both libraries: real numpy arrays,
scipy sparse matrices, metadata dicts, vertebrae's ``LocalArtifactStore``
and scripted stores, and profiles measured by both libraries'
``ResourceProfiler`` (over real torch models on the CPU for the model
footprint). The results are compared as ``dataclasses.asdict`` JSON, which
tells ``1`` from ``1.0`` and compares floats bit for bit (``repr``), with
the class name; exceptions by class and message; and the keys each library
asked the store for. Device-memory peaks need a device: on the CPU they come
from a ``BaseResourceProfileAdapter`` subclass (the API's own extension
point), and ``test_cuda_workers_aggregate_as_vertebrae`` measures real CUDA
workers where a GPU is visible.
"""

from __future__ import annotations

import dataclasses
import json
import random
import types
from typing import Any, Callable

import numpy as np
import pytest

# ml_dtypes (JAX and TensorFlow import it) registers bfloat16 and the float8
# types with numpy; imported here, every test of this module sees the same
# numpy whichever suites ran before it.
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes comes with jax and tensorflow (python/requirements.txt)")

import vertebrae.profiling as V
from vertebrae.cache.artifact_store import ArtifactStat
from vertebrae.cache.local_store import LocalArtifactStore
from vertebrae.config import ResourceProfilingConfig as VertebraeConfig

import tally.profiling as T

torch = pytest.importorskip("torch", reason="torch is not installed in the venv (python/requirements.txt installs it)")

try:
    import scipy.sparse as sparse
except ImportError:  # vertebrae treats nothing as sparse without scipy
    sparse = None

LIBS = {"vertebrae": (V, VertebraeConfig), "tally": (T, T.ResourceProfilingConfig)}

# `np.matrix` is one of the cases on purpose (a subclass numpy still makes).
pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


# --------------------------------------------------------------------------
# Comparing the two libraries


def result(call: Callable[[], Any]) -> tuple:
    """What a call gave: the class and ``asdict`` JSON of its value, or the
    class and message of what it raised (``BaseException`` too: what
    vertebrae lets through must escape tally as well)."""
    try:
        value = call()
    except BaseException as error:  # noqa: BLE001 - the class is what is compared
        return ("raised", type(error).__name__, str(error))
    if value is None:
        return ("value", None)
    return ("value", type(value).__name__, json.dumps(dataclasses.asdict(value), sort_keys=True))


def agree(call: Callable[[Any], Any], stores: Callable[[], dict] | None = None) -> tuple:
    """``call(module, **stores())`` gives the same with vertebrae's module and
    tally's, each with fresh stores that then saw the same ``stat_array``
    calls; returns vertebrae's result."""
    outcomes = {}
    for name, (module, _config) in LIBS.items():
        made = stores() if stores else {}
        outcome = result(lambda: call(module, **made))
        calls = {key: store.calls for key, store in made.items() if isinstance(store, ScriptedStore)}
        outcomes[name] = (outcome, calls)
    assert outcomes["tally"] == outcomes["vertebrae"]
    return outcomes["vertebrae"][0]


class ScriptedStore:
    """A store as vertebrae's ``stat_array`` protocol has it: each key's
    answer is a stat to return or an exception to raise; other keys are not
    persisted (``FileNotFoundError``). It records the keys asked for."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = dict(answers or {})
        self.calls: list[str] = []

    def stat_array(self, key: str) -> Any:
        self.calls.append(key)
        answer = self.answers.get(key)
        if answer is None:
            raise FileNotFoundError(f"No committed array manifest found under {key}.")
        if isinstance(answer, BaseException):
            raise answer
        return answer


class Halt(BaseException):
    """Not an ``Exception``: vertebrae's ``except Exception`` lets it through."""


class NotADirectory(FileNotFoundError):
    """A subclass of FileNotFoundError: not persisted, like its base."""


# --------------------------------------------------------------------------
# Embeddings: arrays, sparse matrices and metadata dicts

EMBEDDINGS: dict[str, Callable[[], Any]] = {
    "float32": lambda: np.ones((10, 384), dtype=np.float32),
    "float16": lambda: np.ones((10, 384), dtype=np.float16),
    "int8": lambda: np.ones((10, 48), dtype=np.int8),
    "uint8_one_row": lambda: np.ones((1, 32), dtype=np.uint8),
    "bool": lambda: np.zeros((3, 7), dtype=bool),
    "float64": lambda: np.linspace(0, 1, 12).reshape(4, 3),
    "complex128": lambda: np.ones((2, 5), dtype=np.complex128),
    "unicode": lambda: np.array([["ab", "c"], ["d", "efg"]]),
    "object": lambda: np.array([[1, "a"], [None, 2.5]], dtype=object),
    "datetime": lambda: np.zeros((2, 2), dtype="datetime64[ns]"),
    "structured": lambda: np.zeros((2, 3), dtype=[("a", "<f4"), ("b", "i1")]),
    "zero_rows": lambda: np.zeros((0, 16), dtype=np.float32),
    "zero_columns": lambda: np.zeros((4, 0), dtype=np.float32),
    "strided_view": lambda: np.ones((6, 8), dtype=np.float32)[::2, ::3],
    "fortran_order": lambda: np.asfortranarray(np.ones((5, 3))),
    "big_endian": lambda: np.ones((3, 3), dtype=">f8"),
    "np_matrix": lambda: np.matrix([[1, 2], [3, 4]]),
    "torch_tensor": lambda: torch.ones((6, 4), dtype=torch.float32),
    "torch_half": lambda: torch.zeros((3, 5), dtype=torch.float16),
    "empty_1d": lambda: np.array([]),
    "vector": lambda: np.arange(5, dtype=np.float32),
    "scalar": lambda: np.float32(1.5),
    "cube": lambda: np.zeros((2, 3, 4)),
    "list_of_lists": lambda: [[1.0, 2.0], [3.0, 4.0]],
    "list_of_ints": lambda: [[1, 2, 3]],
    "empty_list": lambda: [],
    "ragged_list": lambda: [[1.0], [2.0, 3.0]],
    "none": lambda: None,
    "meta_dense": lambda: {"shape": [10, 384], "dtype": "float32"},
    "meta_tuple_shape": lambda: {"shape": (10, 96), "dtype": "int8", "sparse": False, "nnz": None},
    "meta_numpy_ints": lambda: {"shape": [np.int64(7), np.int32(5)], "dtype": "<f2"},
    "meta_numpy_dtype": lambda: {"shape": [4, 4], "dtype": np.dtype("float64")},
    "meta_numpy_type": lambda: {"shape": [4, 4], "dtype": np.int16},
    "meta_python_type": lambda: {"shape": [4, 4], "dtype": float},
    "meta_float_shape": lambda: {"shape": [10.0, 4.0], "dtype": "float32"},
    "meta_sparse": lambda: {"shape": [100, 30000], "dtype": "float32", "sparse": True, "nnz": 5000},
    "meta_sparse_truthy": lambda: {"shape": [10, 50], "dtype": "float64", "sparse": 1, "nnz": np.int64(12)},
    "meta_sparse_no_values": lambda: {"shape": [3, 9], "dtype": "int8", "sparse": True, "nnz": 0},
    "meta_dense_ignores_nnz": lambda: {"shape": [2, 2], "dtype": "float32", "sparse": False, "nnz": 3},
    "meta_unicode": lambda: {"shape": [3, 2], "dtype": "<U4"},
    "meta_datetime": lambda: {"shape": [3, 2], "dtype": "datetime64[ns]"},
    "meta_object": lambda: {"shape": [3, 2], "dtype": "O"},
    "meta_type_code": lambda: {"shape": [3, 2], "dtype": "d"},
    "meta_zero_rows": lambda: {"shape": [0, 8], "dtype": "float32"},
    "meta_extra_keys": lambda: {"shape": [2, 8], "dtype": "uint8", "storage_format": "npy", "sha256": "x"},
    "meta_missing_shape": lambda: {"dtype": "float32"},
    "meta_empty_shape": lambda: {"shape": [], "dtype": "float32"},
    "meta_none_shape": lambda: {"shape": None, "dtype": "float32"},
    "meta_missing_dtype": lambda: {"shape": [2, 3]},
    "meta_none_dtype": lambda: {"shape": [2, 3], "dtype": None},
    "meta_one_dim": lambda: {"shape": [5], "dtype": "float32"},
    "meta_three_dims": lambda: {"shape": [2, 3, 4], "dtype": "float32"},
    "meta_sparse_without_nnz": lambda: {"shape": [2, 3], "dtype": "float32", "sparse": True},
    "meta_sparse_none_nnz": lambda: {"shape": [2, 3], "dtype": "float32", "sparse": True, "nnz": None},
    "meta_unknown_dtype": lambda: {"shape": [2, 3], "dtype": "bfloat17"},
    "meta_registered_bfloat16": lambda: {"shape": [2, 3], "dtype": "bfloat16"},
    "meta_registered_float8": lambda: {"shape": [4, 3], "dtype": "float8_e4m3fn"},
    "meta_structured": lambda: {"shape": [2, 3], "dtype": "f4, i8"},
    "meta_removed_alias": lambda: {"shape": [2, 3], "dtype": "bool8"},
    "meta_byte_order_on_a_name": lambda: {"shape": [2, 3], "dtype": "<float32"},
    "meta_removed_float_": lambda: {"shape": [2, 3], "dtype": "float_"},
    "meta_empty": lambda: {},
}

SPARSE_FORMATS = ["csr_matrix", "csr_array", "csc_matrix", "coo_matrix", "coo_array", "bsr_matrix", "lil_matrix",
                  "dia_matrix", "dok_matrix"]


def sparse_matrix(kind: str, rows: int = 6, cols: int = 9, dtype: str = "float32") -> Any:
    """A real scipy matrix of the given format with about a third of its
    entries stored (fixed seed)."""
    values = np.random.default_rng(7).random((rows, cols)).astype(dtype)
    values[values < 0.66] = 0
    return getattr(sparse, kind)(values)


def embedding(name: str) -> Any:
    if name.startswith("sparse:"):
        if sparse is None:
            pytest.skip("scipy is not installed in the venv: vertebrae sizes sparse matrices only through scipy")
        kind, _, variant = name.removeprefix("sparse:").partition("/")
        shapes = {"": (6, 9), "empty": (0, 9), "wide": (3, 400)}
        dtype = "int8" if variant == "int8" else "float32"
        return sparse_matrix(kind, *shapes.get(variant, (6, 9)), dtype=dtype)
    return EMBEDDINGS[name]()


ALL_EMBEDDINGS = list(EMBEDDINGS) + [f"sparse:{kind}" for kind in SPARSE_FORMATS] + [
    "sparse:csr_matrix/empty", "sparse:csr_matrix/wide", "sparse:csr_matrix/int8", "sparse:coo_array/empty",
]


# --------------------------------------------------------------------------
# Worker profiles, measured by both libraries' profilers


class Extractor:
    """An extractor whose adapter a factory makes."""

    def __init__(self, make: Callable[[], Any] | None = None, model: Any = None) -> None:
        self.make = make
        self.model = model

    def get_resource_profile_adapter(self) -> Any:
        return self.make(self) if self.make else None


def device_adapter(module: Any, peak: int | None) -> Callable[[Any], Any]:
    """A ``BaseResourceProfileAdapter`` subclass of ``module`` reporting a
    measured device-memory window peaking at ``peak`` bytes (``None``: the
    peak is unavailable), as a GPU backend would."""

    class DeviceAdapter(module.BaseResourceProfileAdapter):
        def metadata(self):
            return module.ResourceAdapterMetadata(backend="fake", device="cuda:0", device_resolution="explicit")

        def reset_peak_device_memory(self):
            return module.AdapterOperationResult("succeeded")

        def peak_device_memory(self):
            if peak is None:
                return module.DeviceMemoryMeasurement(status="unavailable", unavailable_reason="allocator busy")
            return module.DeviceMemoryMeasurement(
                status="measured", backend="fake", device="cuda:0", baseline_allocated_bytes=1024,
                peak_allocated_bytes=peak, measurement_scope="profile_window",
            )

    return lambda extractor: DeviceAdapter()


def torch_adapter(extractor: Any) -> Any:
    """vertebrae's own torch adapter over the extractor's real CPU model
    (tally's profiler takes vertebrae's adapter objects)."""
    return V.TorchResourceProfileAdapter(extractor)


def model(width: int) -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.ReLU(), torch.nn.Linear(width, 4))


class Boom(RuntimeError):
    pass


def run(module: Any, config: Any, extractor: Any, calls: list[int], *, fail: bool = False, cache_hit: bool = False,
        probe: bool = False) -> Any:
    """A real profiling window: ``calls`` are the sample counts of the calls."""
    profiler = module.ResourceProfiler(config, extractor, streaming=False)
    payload = torch.ones((4, 8))
    for samples in calls:
        net = extractor.model
        profiler.measure_call((lambda: net(payload)) if net is not None else (lambda: sum(range(2000))),
                              samples=samples, call_type="batch")
    if probe:
        profiler.measure_call(lambda: None, samples=2, call_type="probe", materialized=False)
    if fail:
        def broken():
            raise Boom("the worker died")

        with pytest.raises(Boom):
            profiler.measure_call(broken, samples=3, call_type="batch")
    return profiler.finish(cache_hit=cache_hit)


WORKER_KINDS: dict[str, Callable[[Any, Any], Any]] = {
    "one_call": lambda m, c: run(m, c(enabled=True), Extractor(), [8]),
    "three_calls": lambda m, c: run(m, c(enabled=True), Extractor(), [8, 8, 4]),
    "five_calls": lambda m, c: run(m, c(enabled=True), Extractor(), [16, 16, 16, 16, 3]),
    "with_probe": lambda m, c: run(m, c(enabled=True), Extractor(), [5, 5], probe=True),
    "only_a_probe": lambda m, c: run(m, c(enabled=True), Extractor(), [], probe=True),
    "no_host_memory": lambda m, c: run(m, c(enabled=True, host_memory=False), Extractor(), [4, 4]),
    "device_small": lambda m, c: run(m, c(enabled=True), Extractor(device_adapter(m, 4096)), [8, 8]),
    "device_large": lambda m, c: run(m, c(enabled=True), Extractor(device_adapter(m, 1 << 30)), [8, 8, 8]),
    "device_tie": lambda m, c: run(m, c(enabled=True), Extractor(device_adapter(m, 1 << 30)), [2, 2]),
    "device_unavailable": lambda m, c: run(m, c(enabled=True), Extractor(device_adapter(m, None)), [8, 8]),
    "device_disabled": lambda m, c: run(m, c(enabled=True, device_memory=False), Extractor(device_adapter(m, 64)), [3]),
    "torch_model": lambda m, c: run(m, c(enabled=True), Extractor(torch_adapter, model(16)), [4, 4, 4]),
    "torch_model_again": lambda m, c: run(m, c(enabled=True), Extractor(torch_adapter, model(16)), [4, 4]),
    "torch_other_model": lambda m, c: run(m, c(enabled=True), Extractor(torch_adapter, model(32)), [4, 4]),
    "idle": lambda m, c: run(m, c(enabled=True), Extractor(), []),
    "cache_hit": lambda m, c: run(m, c(enabled=True), Extractor(), [], cache_hit=True),
    "failed": lambda m, c: run(m, c(enabled=True), Extractor(), [], fail=True),
    "failed_after_calls": lambda m, c: run(m, c(enabled=True), Extractor(), [6, 6], fail=True),
    "idle_torch_model": lambda m, c: run(m, c(enabled=True), Extractor(torch_adapter, model(32)), []),
}

#: Kinds whose model footprint is measured, by model; the others have none.
MODEL_OF = {"torch_model": "A", "torch_model_again": "A", "torch_other_model": "B"}


def persisted(module: Any, profile: Any, size: int, *, failing: bool = False) -> Any:
    """The worker profile with its shard's evaluated embeddings persisted
    (``size`` bytes), or with a store that failed (a warning)."""
    store = ScriptedStore({"shard/eval": OSError("disk unplugged")} if failing else {
        "shard/eval": ArtifactStat(uri=f"file:///shards/{size}.npy", size_bytes=size, storage_format="npy"),
    })
    return module.with_embedding_footprint(profile, np.ones((8, 4), dtype=np.float32), np.ones((8, 4), dtype=np.int8),
                                           store=store, raw_key="", evaluated_key="shard/eval")


@pytest.fixture(scope="module")
def pool() -> dict[str, Any]:
    """Every worker kind, measured once by each library's profiler, plus
    measured workers whose shard embeddings were persisted."""
    made = {}
    for lib, (module, config) in LIBS.items():
        for kind, make in WORKER_KINDS.items():
            made[f"{lib}:{kind}"] = make(module, config)
        made[f"{lib}:persisted_100"] = persisted(module, made[f"{lib}:three_calls"], 100)
        made[f"{lib}:persisted_2500"] = persisted(module, made[f"{lib}:device_small"], 2500)
        made[f"{lib}:persisted_idle"] = persisted(module, made[f"{lib}:idle"], 7)
        made[f"{lib}:store_failed"] = persisted(module, made[f"{lib}:one_call"], 0, failing=True)
    return made


def test_the_pool_holds_what_the_cases_need(pool):
    for lib in LIBS:
        assert pool[f"{lib}:three_calls"].status == "measured"
        assert pool[f"{lib}:three_calls"].inference.warm_call_count == 2
        assert pool[f"{lib}:failed"].status == "not_measured"
        assert pool[f"{lib}:cache_hit"].status == "not_measured_cache_hit"
        assert pool[f"{lib}:no_host_memory"].host_memory.peak_rss_bytes is None
        assert pool[f"{lib}:one_call"].host_memory.peak_rss_bytes is not None
        assert pool[f"{lib}:device_large"].device_memory.peak_allocated_bytes == 1 << 30
        assert pool[f"{lib}:device_unavailable"].device_memory.peak_allocated_bytes is None
        assert pool[f"{lib}:torch_model"].model.parameter_count == 8 * 16 + 16 + 16 * 4 + 4
        assert pool[f"{lib}:torch_other_model"].model.parameter_count != pool[f"{lib}:torch_model"].model.parameter_count
        assert pool[f"{lib}:persisted_100"].embedding.evaluated_persisted.bytes == 100
        assert any("disk unplugged" in warning for warning in pool[f"{lib}:store_failed"].warnings)


# --------------------------------------------------------------------------
# with_embedding_footprint


@pytest.fixture(scope="module")
def local_store(tmp_path_factory) -> LocalArtifactStore:
    """vertebrae's own local store with two committed arrays."""
    store = LocalArtifactStore(str(tmp_path_factory.mktemp("store")))
    store.put_array("emb/raw", np.ones((10, 384), dtype=np.float32))
    store.put_array("emb/eval", np.ones((10, 48), dtype=np.int8))
    return store


def stat(size: int, uri: str = "s3://bucket/emb.npy", storage_format: str = "npy") -> ArtifactStat:
    return ArtifactStat(uri=uri, size_bytes=size, storage_format=storage_format)


#: Persisted-size arguments; scripted stores are made afresh for each library.
PERSISTED: dict[str, Callable[[Any], dict]] = {
    "nothing": lambda local: {},
    "keys_without_a_store": lambda local: {"raw_key": "emb/raw", "evaluated_key": "emb/eval"},
    "local_store_both": lambda local: {"store": local, "raw_key": "emb/raw", "evaluated_key": "emb/eval"},
    "local_store_missing": lambda local: {"store": local, "raw_key": "emb/nope", "evaluated_key": "emb/eval"},
    "local_store_bad_key": lambda local: {"store": local, "raw_key": "/absolute", "evaluated_key": "a/../b"},
    "local_store_disabled": lambda local: {"store": local, "raw_key": "emb/raw", "evaluated_key": "emb/eval",
                                           "persisted_storage": False},
    "scripted_both": lambda local: {"store": ScriptedStore({"r": stat(10), "e": stat(20, "file:///e.npz", "npz")}),
                                    "raw_key": "r", "evaluated_key": "e"},
    "scripted_not_found": lambda local: {"store": ScriptedStore(), "raw_key": "r", "evaluated_key": "e"},
    "scripted_not_found_subclass": lambda local: {"store": ScriptedStore({"r": NotADirectory("gone")}),
                                                  "raw_key": "r", "evaluated_key": "e"},
    "scripted_value_error": lambda local: {"store": ScriptedStore({"e": ValueError("manifest 'x' is corrupt")}),
                                           "raw_key": "r", "evaluated_key": "e"},
    "scripted_os_error": lambda local: {"store": ScriptedStore({"r": PermissionError(13, "Permission denied", "/x")}),
                                        "raw_key": "r", "evaluated_key": "e"},
    "scripted_key_error": lambda local: {"store": ScriptedStore({"r": KeyError("r"), "e": RuntimeError()}),
                                         "raw_key": "r", "evaluated_key": "e"},
    "scripted_quoted_keys": lambda local: {"store": ScriptedStore({"it's": RuntimeError("no"), 'say "hi"': Boom("x")}),
                                           "raw_key": "it's", "evaluated_key": 'say "hi"'},
    "scripted_unicode_key": lambda local: {"store": ScriptedStore({"émb/\t1": RuntimeError("ü")}),
                                           "raw_key": "émb/\t1", "evaluated_key": None},
    "store_without_stat_array": lambda local: {"store": object(), "raw_key": "r", "evaluated_key": "e"},
    "duck_typed_stat": lambda local: {"store": ScriptedStore({"r": types.SimpleNamespace(
        size_bytes=np.int64(77), uri=__import__("pathlib").Path("/data/r.npy"), storage_format="npy")}),
        "raw_key": "r", "evaluated_key": "e"},
    "stat_given_directly": lambda local: {"store": ScriptedStore({"r": stat(1)}), "raw_key": "r", "evaluated_key": "e",
                                          "raw_stat": stat(5, "file:///raw.npy"), "evaluated_stat": None},
    "both_stats_given": lambda local: {"raw_stat": stat(5), "evaluated_stat": stat(0, "gs://b/e.npz", "npz")},
    "stats_and_disabled": lambda local: {"raw_stat": stat(5), "evaluated_stat": stat(6), "persisted_storage": False},
    "bogus_stat_disabled": lambda local: {"raw_stat": object(), "persisted_storage": False},
    "disabled_by_zero": lambda local: {"store": ScriptedStore({"r": stat(3)}), "raw_key": "r", "persisted_storage": 0},
    "enabled_by_one": lambda local: {"store": ScriptedStore({"r": stat(3)}), "raw_key": "r", "persisted_storage": 1},
    "empty_keys": lambda local: {"store": ScriptedStore({"": stat(3)}), "raw_key": "", "evaluated_key": ""},
    # Raised outside vertebrae's try: they escape.
    "stat_without_size": lambda local: {"store": ScriptedStore({"r": types.SimpleNamespace(uri="u")}), "raw_key": "r"},
    "stat_size_not_a_number": lambda local: {"store": ScriptedStore({"e": types.SimpleNamespace(
        size_bytes="big", uri="u", storage_format="npy")}), "raw_key": "r", "evaluated_key": "e"},
    "bogus_stat_given": lambda local: {"evaluated_stat": "not a stat"},
    "store_halts": lambda local: {"store": ScriptedStore({"r": Halt("stop"), "e": stat(2)}), "raw_key": "r",
                                  "evaluated_key": "e"},
}


def split(arguments: dict) -> tuple[dict, Callable[[], dict]]:
    """The arguments without their scripted stores, and a maker of fresh
    copies of those (so each library's calls are recorded apart)."""
    fixed = {key: value for key, value in arguments.items() if not isinstance(value, ScriptedStore)}
    scripted = {key: value for key, value in arguments.items() if isinstance(value, ScriptedStore)}
    return fixed, lambda: {key: ScriptedStore(store.answers) for key, store in scripted.items()}


FOOTPRINTS = ["with_embedding_footprint", "with_distributed_embedding_footprint"]


@pytest.mark.parametrize("function", FOOTPRINTS)
@pytest.mark.parametrize("name", ALL_EMBEDDINGS)
def test_each_embedding_sizes_as_in_vertebrae(pool, function, name):
    profile = pool["vertebrae:three_calls"]
    as_raw = agree(lambda m: getattr(m, function)(profile, embedding(name), np.ones((10, 24), dtype=np.int8)))
    as_evaluated = agree(lambda m: getattr(m, function)(profile, np.ones((10, 384), dtype=np.float32), embedding(name)))
    both = agree(lambda m: getattr(m, function)(pool["tally:three_calls"], embedding(name), embedding(name)))
    assert as_raw[0] == as_evaluated[0] == both[0]


def test_the_embedding_cases_cover_success_and_each_error(pool):
    kinds = {}
    for name in ALL_EMBEDDINGS:
        outcome = result(lambda: V.with_embedding_footprint(pool["vertebrae:one_call"], embedding(name), embedding(name)))
        kinds.setdefault(outcome[0] if outcome[0] == "value" else outcome[1], []).append(name)
    assert {"value", "ValueError", "TypeError", "IndexError"} <= set(kinds), kinds
    assert len(kinds["value"]) >= 40, kinds


@pytest.mark.parametrize("function", FOOTPRINTS)
@pytest.mark.parametrize("variant", list(PERSISTED))
def test_persisted_sizes_as_in_vertebrae(pool, local_store, function, variant):
    fixed, stores = split(PERSISTED[variant](local_store))
    raw, evaluated = np.ones((10, 384), dtype=np.float32), np.ones((10, 48), dtype=np.int8)
    agree(lambda m, **made: getattr(m, function)(pool["vertebrae:store_failed"], raw, evaluated, **fixed, **made), stores)


def test_the_persisted_cases_reach_every_status(pool, local_store):
    statuses, raised = set(), set()
    for variant, arguments in PERSISTED.items():
        outcome = result(lambda: V.with_embedding_footprint(pool["vertebrae:one_call"], [[1]], [[1]],
                                                             **arguments(local_store)))
        if outcome[0] == "raised":
            raised.add(outcome[1])
        else:
            footprint = json.loads(outcome[2])["embedding"]
            statuses |= {footprint["raw_persisted"]["status"], footprint["evaluated_persisted"]["status"]}
    assert statuses == {"measured", "not_persisted", "unavailable", "disabled"}
    assert raised == {"AttributeError", "ValueError", "Halt"}


def distributed(pool: dict, lib: str) -> Any:
    module = LIBS[lib][0]
    pairs = [(f"s{i}", pool[f"{lib}:{kind}"]) for i, kind in enumerate(["three_calls", "device_small", "persisted_100"])]
    return module.aggregate_distributed_resource_profiles(pairs, merged_embeddings=np.ones((24, 8), np.float32),
                                                          all_shard_keys=["s0", "s1", "s2", "s3"])


@pytest.mark.parametrize("function", FOOTPRINTS)
@pytest.mark.parametrize("profile", sorted(WORKER_KINDS) + ["persisted_100", "store_failed", "aggregate", "none"])
@pytest.mark.parametrize("lib", list(LIBS))
def test_profiles_of_either_library_and_scope(pool, local_store, function, profile, lib):
    """vertebrae's two functions are one `dataclasses.replace` on either
    profile class, so each takes either; a None profile is None."""
    value = {"aggregate": lambda: distributed(pool, lib), "none": lambda: None}.get(profile, lambda: pool[f"{lib}:{profile}"])()
    fixed, stores = split(PERSISTED["scripted_value_error"](local_store))
    outcome = agree(lambda m, **made: getattr(m, function)(value, {"shape": [3, 8], "dtype": "float32"},
                                                           np.ones((3, 2), np.int8), **fixed, **made), stores)
    if profile == "none":
        assert outcome == ("value", None)
    else:
        assert outcome[1] == ("DistributedResourceProfile" if profile == "aggregate" else "ResourceProfile")


def test_none_is_returned_before_anything_is_read():
    store = ScriptedStore({"r": stat(1)})
    for module in (V, T):
        for function in FOOTPRINTS:
            assert getattr(module, function)(None, "not an array", {}, store=store, raw_key="r",
                                             raw_stat=object()) is None
    assert store.calls == []


def test_tally_returns_its_own_dataclasses(pool):
    out = T.with_embedding_footprint(pool["vertebrae:one_call"], [[1.0]], [[1.0]])
    assert type(out) is T.ResourceProfile and type(out.embedding) is T.EmbeddingFootprint
    assert type(out.embedding.raw_persisted) is T.PersistedArtifactFootprint
    aggregate = T.aggregate_distributed_resource_profiles([("a", pool["vertebrae:one_call"])], merged_embeddings=[[1]])
    assert type(aggregate) is T.DistributedResourceProfile and type(aggregate.worker_first_calls) is T.LatencyDistribution


def test_figures_are_vertebraes_to_the_bit(pool):
    """Ratios whose decimal expansion does not terminate, and a count past
    2**53 where integer division must round like Python's."""
    rows = 3
    meta = lambda cols, dtype="float32": {"shape": [rows, cols], "dtype": dtype}
    cases = [(meta(7), meta(3, "float16")), (meta(1), meta(1, "float64")), ({"shape": [3, (1 << 60) + 1], "dtype": "i1"},
                                                                          {"shape": [7, (1 << 55) + 3], "dtype": "i1"})]
    for raw, evaluated in cases:
        outcome = agree(lambda m: m.with_embedding_footprint(pool["tally:one_call"], raw, evaluated))
        footprint = json.loads(outcome[2])["embedding"]
        assert isinstance(footprint["bytes_per_embedding"], float)


# --------------------------------------------------------------------------
# aggregate_distributed_resource_profiles


def aggregate(pairs: list, **options: Any) -> Callable:
    return lambda m, **made: m.aggregate_distributed_resource_profiles(pairs, **{**options, **made})


def workers(pool: dict, *kinds: str, lib: str = "tally") -> list:
    return [(f"shard-{index}", pool[f"{lib}:{kind}"]) for index, kind in enumerate(kinds)]


MERGED = {"array": lambda: np.ones((24, 8), np.float32), "meta": lambda: {"shape": [24, 8], "dtype": "float16"}}

AGGREGATIONS: dict[str, Callable[[dict], tuple[list, dict]]] = {
    "all_measured": lambda p: (workers(p, "one_call", "three_calls", "five_calls"), {}),
    "vertebrae_workers": lambda p: (workers(p, "one_call", "three_calls", "five_calls", lib="vertebrae"), {}),
    "mixed_libraries": lambda p: (workers(p, "three_calls") + [("v", p["vertebrae:five_calls"])], {}),
    "missing_shards": lambda p: (workers(p, "three_calls", "five_calls"),
                                 {"all_shard_keys": ["shard-0", "shard-1", "shard-2", "shard-3"]}),
    "fewer_listed_than_reported": lambda p: (workers(p, "three_calls", "five_calls", "one_call"),
                                             {"all_shard_keys": ["shard-0"]}),
    "empty_shard_list_falls_back": lambda p: (workers(p, "three_calls", "five_calls"), {"all_shard_keys": []}),
    "tuple_of_shard_keys": lambda p: (workers(p, "three_calls"), {"all_shard_keys": ("shard-0", "other")}),
    "some_failed": lambda p: (workers(p, "three_calls", "failed", "failed_after_calls", "idle"), {}),
    "none_measured": lambda p: (workers(p, "failed", "idle", "cache_hit", "idle_torch_model"), {}),
    "nothing_reported": lambda p: ([], {}),
    "nothing_reported_of_four": lambda p: ([], {"all_shard_keys": ["a", "b", "c", "d"]}),
    "probes": lambda p: (workers(p, "with_probe", "only_a_probe"), {}),
    "device_peaks": lambda p: (workers(p, "device_small", "device_large", "one_call"), {}),
    "device_peak_ties_keep_the_first": lambda p: (workers(p, "device_small", "device_large", "device_tie"), {}),
    "device_peaks_absent": lambda p: (workers(p, "device_unavailable", "device_disabled", "one_call"), {}),
    "rss_peaks_absent": lambda p: (workers(p, "no_host_memory", "no_host_memory"), {}),
    "rss_peak_of_measured_only": lambda p: (workers(p, "no_host_memory", "idle"), {}),
    "same_model": lambda p: (workers(p, "torch_model", "torch_model_again", "one_call"), {}),
    "same_model_across_libraries": lambda p: (workers(p, "torch_model") + [("v", p["vertebrae:torch_model_again"])], {}),
    "inconsistent_models": lambda p: (workers(p, "torch_model", "torch_other_model"), {}),
    "other_model_not_measured": lambda p: (workers(p, "torch_model", "idle_torch_model"), {}),
    "shard_persisted_bytes": lambda p: (workers(p, "persisted_100", "persisted_2500", "persisted_idle"), {}),
    "worker_warnings": lambda p: (workers(p, "store_failed", "device_unavailable", "one_call"), {}),
    "duplicate_keys": lambda p: ([("same", p["tally:one_call"]), ("same", p["tally:device_large"])], {}),
    "pairs_as_lists": lambda p: ([["a", p["tally:three_calls"]], ["b", p["vertebrae:one_call"]]], {}),
    "merged_sparse_meta": lambda p: (workers(p, "three_calls"), {"merged_embeddings": {
        "shape": [24, 3000], "dtype": "float32", "sparse": True, "nnz": 120}}),
    "merged_list": lambda p: (workers(p, "three_calls"), {"merged_embeddings": [[1.0, 2.0], [3.0, 4.0]]}),
    "merged_incomplete": lambda p: (workers(p, "three_calls"), {"merged_embeddings": {"shape": [24]}}),
    "merged_vector": lambda p: (workers(p, "three_calls"), {"merged_embeddings": np.ones(24)}),
    "model_error_before_embedding_error": lambda p: (workers(p, "torch_model", "torch_other_model"),
                                                     {"merged_embeddings": {"dtype": "float32"}}),
    "merged_stat": lambda p: (workers(p, "three_calls"), {"merged_stat": stat(999), "merged_key": "m"}),
    "merged_store": lambda p: (workers(p, "three_calls"), {"store": ScriptedStore({"m": stat(4096)}),
                                                           "merged_key": "m"}),
    "merged_store_fails": lambda p: (workers(p, "store_failed"), {"store": ScriptedStore({"m": OSError("gone")}),
                                                                  "merged_key": "m"}),
    "merged_store_not_found": lambda p: (workers(p, "three_calls"), {"store": ScriptedStore(), "merged_key": "m"}),
    "merged_disabled": lambda p: (workers(p, "three_calls"), {"store": ScriptedStore({"m": stat(1)}), "merged_key": "m",
                                                              "persisted_storage": False}),
    "merged_store_halts": lambda p: (workers(p, "three_calls"), {"store": ScriptedStore({"m": Halt()}),
                                                                 "merged_key": "m"}),
    "pair_too_long": lambda p: ([("a", p["tally:one_call"], "extra")], {}),
    "pair_too_short": lambda p: ([("a",)], {}),
}


@pytest.mark.parametrize("name", list(AGGREGATIONS))
def test_aggregation_as_in_vertebrae(pool, name):
    pairs, options = AGGREGATIONS[name](pool)
    options = {"merged_embeddings": MERGED["array"](), **options}
    fixed, stores = split(options)
    outcome = agree(aggregate(pairs, **fixed), stores)
    if name in {"inconsistent_models", "model_error_before_embedding_error"}:
        assert outcome == ("raised", "ValueError", "Resource-profile shards have inconsistent model footprints.")


def test_the_aggregations_reach_every_status_and_peak(pool):
    seen = {}
    for name, make in AGGREGATIONS.items():
        pairs, options = make(pool)
        outcome = result(lambda: V.aggregate_distributed_resource_profiles(
            pairs, **{"merged_embeddings": MERGED["array"](), **options}))
        if outcome[0] == "value":
            value = json.loads(outcome[2])
            seen.setdefault("status", set()).add(value["status"])
            seen.setdefault("device", set()).add(value["max_worker_peak_device_allocated_bytes"] is not None)
            seen.setdefault("rss", set()).add(value["max_worker_peak_rss_bytes"] is not None)
            seen.setdefault("model", set()).add(value["model"] is not None)
            seen.setdefault("shard_persisted", set()).add(value["shard_persisted_bytes"] is not None)
    assert seen["status"] == {"measured", "partial", "not_measured"}
    assert all(seen[key] == {True, False} for key in ("device", "rss", "model", "shard_persisted")), seen


def random_case(rng: random.Random, pool: dict) -> tuple[list, dict]:
    """One aggregation: a few workers of either library drawn from the pool
    (rarely one with another model), shard lists with missing or extra
    shards, merged embeddings of every description, and persisted sizes."""
    names = [name for name in pool if not name.endswith("torch_other_model")]
    count = rng.choice([0, 1, 1, 2, 3, 3, 4, 5, 6, 8])
    chosen = [rng.choice(names) for _ in range(count)]
    if count and rng.random() < 0.08:
        chosen[rng.randrange(count)] = rng.choice(["tally:torch_other_model", "vertebrae:torch_other_model"])
    keys = [rng.choice([f"rank-{index}", f"shard/{index:03d}", f"w{index}'s", "dup"]) for index in range(count)]
    pairs = [(key, pool[name]) for key, name in zip(keys, chosen)]
    options: dict[str, Any] = {}
    shards = rng.choice(["none", "none", "exact", "extra", "fewer", "empty"])
    if shards != "none":
        listed = {"exact": keys, "extra": keys + [f"missing-{i}" for i in range(rng.randint(1, 4))],
                  "fewer": keys[: max(0, count - 1)], "empty": []}[shards]
        options["all_shard_keys"] = rng.sample(listed, len(listed)) if rng.random() < 0.5 else list(listed)
    merged = rng.choice(ALL_EMBEDDINGS[:40] + ["meta_dense", "meta_sparse", "float32", "int8", "sparse:csr_matrix"])
    options["merged_embeddings"] = embedding(merged)
    store_kind = rng.choice(["none", "stat", "store", "store", "missing", "failing"])
    if store_kind == "stat":
        options["merged_stat"] = stat(rng.randrange(0, 1 << 40), f"file:///m{rng.randrange(9)}.npy")
    elif store_kind != "none":
        answers = {"store": stat(rng.randrange(0, 1 << 20)), "missing": FileNotFoundError("no"),
                   "failing": rng.choice([OSError("disk"), ValueError("bad 'manifest'"), RuntimeError()])}[store_kind]
        options["store"] = ScriptedStore({"merged": answers})
        options["merged_key"] = rng.choice(["merged", "merged", "", None])
    if rng.random() < 0.15:
        options["persisted_storage"] = False
    return pairs, options


def test_random_aggregations_as_in_vertebrae(pool):
    rng = random.Random(20250111)
    tally_seen = {"value": 0, "raised": 0}
    statuses = set()
    for _ in range(160):
        pairs, options = random_case(rng, pool)
        fixed, stores = split(options)
        outcome = agree(aggregate(pairs, **fixed), stores)
        tally_seen[outcome[0]] += 1
        if outcome[0] == "value":
            statuses.add(json.loads(outcome[2])["status"])
    assert tally_seen["value"] >= 100 and tally_seen["raised"] >= 5, tally_seen
    assert statuses == {"measured", "partial", "not_measured"}


def test_a_distributed_variant_keeps_the_aggregates_evidence(pool):
    for lib in LIBS:
        before = distributed(pool, lib)
        after = T.with_distributed_embedding_footprint(before, {"shape": [24, 8], "dtype": "float32"},
                                                       {"shape": [24, 8], "dtype": "int8"}, evaluated_stat=stat(50))
        assert after.embedding.evaluated_bytes == 24 * 8 and after.embedding.evaluated_persisted.bytes == 50
        assert dataclasses.asdict(after.worker_first_calls) == dataclasses.asdict(before.worker_first_calls)
        assert after.shard_keys == before.shard_keys == ["s0", "s1", "s2", "s3"]


# --------------------------------------------------------------------------
# Real device peaks (GPU only)


@pytest.mark.gpu
def test_cuda_workers_aggregate_as_vertebrae():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device is visible: real device-memory peaks of GPU workers cannot be measured here "
                    "(the CPU cases take device peaks from a BaseResourceProfileAdapter subclass)")

    class CudaExtractor:
        def __init__(self, width: int) -> None:
            torch.manual_seed(0)
            self.model = torch.nn.Linear(64, width).to("cuda:0")
            self.device = "cuda:0"

        def get_resource_profile_adapter(self):
            return V.TorchResourceProfileAdapter(self)

    profiles = []
    for lib, (module, config) in LIBS.items():
        for shard, rows in enumerate([256, 4096]):
            extractor = CudaExtractor(128)
            profiler = module.ResourceProfiler(config(enabled=True), extractor, streaming=False)
            batch = torch.ones((rows, 64), device="cuda:0")
            for _ in range(3):
                profiler.measure_call(lambda: extractor.model(batch).sum().item(), samples=rows, call_type="batch")
            profiles.append((f"{lib}-{shard}", profiler.finish()))
    assert all(profile.device_memory.status == "measured" for _, profile in profiles)
    merged = torch.ones((8704, 128)).numpy()
    outcome = agree(aggregate(profiles, merged_embeddings=merged, all_shard_keys=[key for key, _ in profiles] + ["x"]))
    value = json.loads(outcome[2])
    assert value["status"] == "partial" and value["max_worker_peak_device_allocated_bytes"] > 0
    assert value["model"]["parameter_count"] == 64 * 128 + 128
