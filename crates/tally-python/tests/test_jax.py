"""tally's JAXResourceProfileAdapter (tally-jax, through the package)
against vertebrae's on the same real JAX objects (CPU): every hook's
answer, and the profile each library's profiler builds with its adapter."""

from __future__ import annotations

import dataclasses

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed in the venv (python/requirements.txt installs it)")
jnp = jax.numpy

import tally.profiling as tp  # noqa: E402
import vertebrae.profiling as vp  # noqa: E402
from vertebrae.config import ResourceProfilingConfig as VertebraeConfig  # noqa: E402
from vertebrae_parity import answer, assert_profiles_agree  # noqa: E402

HOOKS = ("metadata", "synchronize", "reset_peak_device_memory", "peak_device_memory", "model_footprint")


class Extractor:
    """An extractor object as vertebrae's adapters take it."""


class WithJax:
    """An extractor that carries its own JAX module (vertebrae reads `_jax`)."""

    def __init__(self):
        self._jax = jax


class Wrapped:
    """A leaf holding its array in `.value`, as Keras/flax variables do."""

    def __init__(self, value):
        self.value = value
        self.shape = value.shape
        self.dtype = value.dtype


def trees():
    return {
        "empty": lambda: None,
        "dict": lambda: {"w": jnp.ones((4, 3), dtype=jnp.float32), "b": jnp.zeros(3, dtype=jnp.float32)},
        "nested": lambda: {"layer": [{"w": jnp.ones((2, 2), dtype=jnp.bfloat16)}, (jnp.arange(5, dtype=jnp.int32),)]},
        "scalars": lambda: [jnp.float32(1.5), jnp.ones((), dtype=jnp.float16)],
        "mixed": lambda: {"a": jnp.ones((8,), dtype=jnp.float64 if jax.config.jax_enable_x64 else jnp.float32), "n": None},
        "numpy": lambda: {"w": __import__("numpy").ones((3, 3), dtype="float32")},
        "wrapped": lambda: [Wrapped(jnp.ones((2, 3), dtype=jnp.float32))],
    }


CASES = [
    (tree, options)
    for tree in trees()
    for options in (
        {},
        {"profiling_device": "TFRT_CPU_0"},
        {"profiling_device": "cuda:0"},
        {"backend": "jax-custom"},
    )
]


def make(module, tree, options, extractor=None):
    getter = trees()[tree]
    kwargs = dict(options)
    if tree != "empty" or options:
        kwargs["values_getter"] = getter
    return module.JAXResourceProfileAdapter(extractor if extractor is not None else Extractor(), **kwargs)


# Each hook is asked twice of the same adapter (`asked=2`), as this suite
# always asked it: the second answer must agree with vertebrae's too.
@pytest.mark.parametrize("tree,options", CASES, ids=[f"{tree}-{sorted(options.items())}" for tree, options in CASES])
@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_answers_as_vertebraes(tree, options, hook):
    assert answer(make(tp, tree, options), hook, asked=2) == answer(make(vp, tree, options), hook, asked=2)


def test_jax_comes_from_the_loader_then_the_extractor_then_import():
    calls = []

    def loader():
        calls.append("loader")
        return jax

    for module in (tp, vp):
        calls.clear()
        adapter = module.JAXResourceProfileAdapter(Extractor(), jax_loader=loader, values_getter=trees()["dict"])
        assert adapter.synchronize().status == "succeeded"
        assert calls == ["loader"], module.__name__
    # A loader answering None falls through to the extractor's own `_jax`.
    for module in (tp, vp):
        adapter = module.JAXResourceProfileAdapter(WithJax(), jax_loader=lambda: None)
        assert dataclasses.asdict(adapter.metadata())["device_resolution"] in {"single_local_device", "ambiguous_local_devices"}


class NoBarrier:
    """A JAX stand-in without effects_barrier (an old JAX)."""

    tree_util = jax.tree_util

    @staticmethod
    def local_devices():
        return jax.local_devices()


def test_a_jax_without_effects_barrier_is_unavailable_as_in_vertebrae():
    for hook in HOOKS:
        ours = answer(tp.JAXResourceProfileAdapter(Extractor(), jax_loader=lambda: NoBarrier), hook, asked=2)
        theirs = answer(vp.JAXResourceProfileAdapter(Extractor(), jax_loader=lambda: NoBarrier), hook, asked=2)
        assert ours == theirs, hook
    assert tp.JAXResourceProfileAdapter(Extractor(), jax_loader=lambda: NoBarrier).synchronize().status == "unavailable"


def test_a_failing_values_getter_raises_its_own_exception():
    def broken():
        raise RuntimeError("no parameters yet")

    for hook in ("metadata", "model_footprint"):
        assert answer(tp.JAXResourceProfileAdapter(Extractor(), values_getter=broken), hook, asked=2) == answer(
            vp.JAXResourceProfileAdapter(Extractor(), values_getter=broken), hook, asked=2
        )


def profile(module, config, tree):
    params = trees()[tree]()

    class JaxExtractor:
        def get_resource_profile_adapter(self):
            return module.JAXResourceProfileAdapter(self, values_getter=lambda: params)

        def __call__(self, batch):
            return jax.block_until_ready(jnp.dot(batch, jnp.ones((batch.shape[1], 2))))

    extractor = JaxExtractor()
    profiler = module.ResourceProfiler(config, extractor, streaming=False)
    for size in (4, 8, 8):
        profiler.measure_call(lambda: extractor(jnp.ones((size, 3))), samples=size, call_type="batch")
    return dataclasses.asdict(profiler.finish())


@pytest.mark.parametrize("tree", ["dict", "nested", "empty"])
def test_profiles_with_the_jax_adapter_agree_with_vertebraes(tree):
    ours = profile(tp, tp.ResourceProfilingConfig(enabled=True), tree)
    theirs = profile(vp, VertebraeConfig(enabled=True), tree)
    assert_profiles_agree(ours, theirs, "JAXResourceProfileAdapter")


def test_vertebraes_adapter_works_in_tallys_profiler():
    params = trees()["dict"]()

    class Mixed:
        def get_resource_profile_adapter(self):
            return vp.JAXResourceProfileAdapter(self, values_getter=lambda: params)

    profiler = tp.ResourceProfiler(tp.ResourceProfilingConfig(enabled=True), Mixed(), streaming=False)
    profiler.measure_call(lambda: None, samples=1, call_type="batch")
    result = dataclasses.asdict(profiler.finish())
    assert result["model"]["parameter_count"] == 15, result["warnings"]
    assert result["context"]["synchronization_method"] == "jax.effects_barrier"
    # The other way round vertebrae's profiler refuses tally's answers: it
    # tests isinstance against its own classes (docs/PARITY.md).
