"""What the adapter suites compare with vertebrae 1.1.0, in one place.

test_jax.py, test_tensorflow.py, test_torch.py, test_onnx.py and
keras_backend_suite.py each build the same adapter with both libraries and
compare every hook's answer (``answer``), then profile the same extractor
with both libraries' profilers and compare the finished profiles
(``assert_profiles_agree``); test_profiling.py shares the key sets that
differ on purpose. The tests import this module as a sibling (pytest's
default import mode puts the tests folder on ``sys.path``, and
keras_backend_suite.py runs in a child pytest whose cwd is this folder). It
is not collected itself: its name does not start with ``test_``.

What differs on purpose (docs/PARITY.md) is kept out of the equality and
checked otherwise: the timings (integer nanoseconds converted once, so they
differ run to run), the host memory figures and method, and the adapter's
module in ``context.resource_adapter``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

#: The hooks of vertebrae's ``BaseResourceProfileAdapter``, each asked of
#: both libraries' adapters and compared with ``answer``.
HOOKS = (
    "metadata",
    "synchronize",
    "reset_peak_device_memory",
    "peak_device_memory",
    "model_footprint",
    "deployment_artifacts",
)

#: The profile's ``inference`` fields that are timings: they differ run to
#: run, so their presence and ordering are checked instead of their values.
TIMINGS = frozenset(
    {
        "first_call_seconds",
        "warm_mean_seconds",
        "warm_median_seconds",
        "warm_p95_seconds",
        "warm_max_seconds",
        "warm_mean_seconds_per_sample",
        "total_materialized_seconds",
        "throughput_samples_per_second",
    }
)

#: The keys tally adds to a profile's ``context`` (a documented difference).
TALLY_ONLY_CONTEXT_KEYS = frozenset({"host_memory_method"})

#: The ``context`` keys left out of the equality of two profiles: tally's own
#: keys, and ``resource_adapter`` (``module.Class`` of the adapter object, so
#: the two libraries' adapters differ by module; checked by name instead).
CONTEXT_DIFFERENCES = TALLY_ONLY_CONTEXT_KEYS | {"resource_adapter"}


def answer_to(call: Callable[[], Any]) -> tuple:
    """What ``call()`` answers, as comparable data.

    ``("ok", type name, dict)`` for a dataclass, ``("ok", "tuple", [(type
    name, dict), ...])`` for a tuple of dataclasses, ``("error", exception
    class name, message)`` when the call raises. Only the call's own
    exception is an answer: a value that is neither a dataclass nor a tuple
    of dataclasses fails the test (``dataclasses.asdict`` raises), since no
    hook of vertebrae's answers one.
    """
    try:
        value = call()
    except Exception as error:  # the same exception class and message
        return ("error", type(error).__name__, str(error))
    if isinstance(value, tuple):
        return ("ok", "tuple", [(type(item).__name__, dataclasses.asdict(item)) for item in value])
    return ("ok", type(value).__name__, dataclasses.asdict(value))


def answer(adapter: Any, hook: str, *, asked: int = 1) -> Any:
    """The adapter's answer to ``hook()`` (see ``answer_to``).

    ``asked``: how many times the hook is asked of the same adapter; above
    one, the list of every call's answer, so that a later call that answers
    otherwise than vertebrae's is seen too.
    """
    if asked == 1:
        return answer_to(getattr(adapter, hook))
    return [answer_to(getattr(adapter, hook)) for _ in range(asked)]


def without(values: dict, keys: frozenset) -> dict:
    """``values`` less ``keys``."""
    return {key: value for key, value in values.items() if key not in keys}


def assert_profiles_agree(ours: dict, theirs: dict, adapter: str, *, host_status: str | None = None) -> None:
    """Two finished profiles (``dataclasses.asdict`` of tally's and of
    vertebrae's, each library's profiler with its own ``adapter`` class,
    e.g. ``"JAXResourceProfileAdapter"``) agree.

    Both are measured; ``device_memory``, ``model`` and ``warnings`` are
    equal; ``inference`` is equal but for the ``TIMINGS``, which are present
    (not None) in both or in neither, and ordered in tally's (the slowest
    warm call no faster than the median, which is above zero); ``context``
    is equal but for ``CONTEXT_DIFFERENCES``, and ``resource_adapter`` names
    each library's own class; the host memory status is the same, and
    ``host_status`` when given.
    """
    assert ours["status"] == theirs["status"] == "measured"
    for key in ("device_memory", "model", "warnings"):
        assert ours[key] == theirs[key], key
    assert without(ours["inference"], TIMINGS) == without(theirs["inference"], TIMINGS)
    for key in TIMINGS:
        assert (ours["inference"][key] is None) == (theirs["inference"][key] is None), key
    assert ours["inference"]["warm_max_seconds"] >= ours["inference"]["warm_median_seconds"] > 0
    assert without(ours["context"], CONTEXT_DIFFERENCES) == without(theirs["context"], CONTEXT_DIFFERENCES)
    assert ours["context"]["resource_adapter"] == f"tally.profiling.{adapter}"
    assert theirs["context"]["resource_adapter"] == f"vertebrae.profiling.{adapter}"
    assert ours["host_memory"]["status"] == theirs["host_memory"]["status"]
    if host_status is not None:
        assert ours["host_memory"]["status"] == host_status
