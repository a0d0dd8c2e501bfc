"""Shared helpers of the tally.accounting suite.

The suite's claim is that ``tally.accounting`` is a drop-in for stormlog
0.4.3, so every expected value comes from stormlog itself, live: stormlog is
a hard requirement (it is in the repository's venv), and a missing stormlog
fails the suite instead of skipping it.

The canonicalisation helpers turn either library's objects into plain
Python data (tuples, dicts, strings, integers), so that a comparison says
*what* differs, not just that two objects of different classes differ.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

import stormlog  # noqa: F401  (a hard requirement: fail, do not skip)
from stormlog.infer import correlation_accounting as storm_accounting
from stormlog.infer import correlation_codec as storm_codec
from stormlog.infer import correlation_events as storm_events

import tally.accounting as tally_accounting

ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = ROOT / "tests" / "conformance"

# python/corpus_schema.py writes the corpus's accounting object for the
# scripts that made and check the corpus; it is not a package, so its folder
# goes on sys.path (last, so that it shadows nothing).
sys.path.append(str(ROOT / "python"))
import corpus_schema  # noqa: E402


class Side:
    """One library's API under the names stormlog's three modules give."""

    def __init__(self, name: str, events: Any, codec: Any, accounting: Any) -> None:
        self.name = name
        self.events = events
        self.codec = codec
        self.accounting = accounting

    def __getattr__(self, attribute: str) -> Any:
        for module in (self.events, self.codec, self.accounting):
            if hasattr(module, attribute):
                return getattr(module, attribute)
        raise AttributeError(attribute)

    def __repr__(self) -> str:
        return self.name


STORM = Side("stormlog", storm_events, storm_codec, storm_accounting)
TALLY = Side("tally", tally_accounting, tally_accounting, tally_accounting)


@pytest.fixture(params=[STORM, TALLY], ids=["stormlog", "tally"])
def side(request: pytest.FixtureRequest) -> Side:
    return request.param


# --------------------------------------------------------------------------
# Canonical forms


def ref(value: Any) -> tuple[str, str] | None:
    """An EntityRef (either library's) as ``(producer_id, id)``."""
    if value is None:
        return None
    return (value.producer_id, value.id)


def clock(value: Any) -> tuple[str, str, str]:
    return (value.device_uuid, value.clock_domain, value.clock_kind)


def strict(value: Any) -> str:
    """JSON text that tells ``1`` from ``1.0`` from ``True`` (``==`` does not)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def records(loaded: list[Any]) -> list[str]:
    """Loaded records as their ``to_record()``, typed exactly."""
    return [strict(item.to_record()) for item in loaded]


def graph(value: Any) -> dict[str, Any]:
    """A CorrelationGraph as plain data. Tables compare their values by
    ``to_record()`` with Python's ``==``: of several Python-equal deliveries
    stormlog keeps the last and tally the first (docs/PARITY.md), which only
    shows as ``1`` against ``1.0``."""
    return {
        "run_id": value.run_id,
        "requests": {(ref(r), ref(a)): event.to_record() for (r, a), event in value.requests.items()},
        "iterations": {ref(key): event.to_record() for key, event in value.iterations.items()},
        "stages": {ref(key): event.to_record() for key, event in value.stages.items()},
        "memberships": tuple(event.to_record() for event in value.memberships),
        "activities": {ref(key): event.to_record() for key, event in value.activities.items()},
        "alignments": tuple(event.to_record() for event in value.alignments),
        "unresolved": tuple((item.event_id, item.kind, ref(item.ref)) for item in value.unresolved),
    }


def table_orders(value: Any) -> dict[str, list[Any]]:
    """The iteration order of each dict table: Python dicts keep the first
    insertion, and stormlog's tables are inserted in delivery order."""
    return {
        "requests": [(ref(r), ref(a)) for r, a in value.requests],
        "iterations": [ref(key) for key in value.iterations],
        "stages": [ref(key) for key in value.stages],
        "activities": [ref(key) for key in value.activities],
    }


def gpu_time(value: Any) -> tuple[int, int, int]:
    return (value.summed_activity_ns, value.busy_ns, value.activity_count)


def accounting(value: Any) -> dict[str, Any]:
    """A RunAccounting as plain data."""
    return {
        "run_id": value.run_id,
        "iterations": {
            ref(key): (timing.elapsed_ns, {clock(c): gpu_time(t) for c, t in timing.gpu.items()})
            for key, timing in value.iterations.items()
        },
        "device_totals": {clock(c): gpu_time(t) for c, t in value.device_totals.items()},
        "unattributed": tuple(ref(item) for item in value.unattributed_activity_refs),
        "unmeasured": tuple(ref(item) for item in value.unmeasured_gpu_activity_refs),
    }


def corpus_accounting(graph_value: Any, accounting_value: Any) -> dict[str, Any]:
    """The conformance corpus's accounting object (tests/conformance/README.md)
    from one library's graph and accounting: python/corpus_schema.py's, the
    one the corpus was written with."""
    return corpus_schema.account_json(graph_value, accounting_value)


# --------------------------------------------------------------------------
# Outcomes


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", value)`` or ``("error", (exception class name, message))``."""
    try:
        return ("ok", call())
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return ("error", (type(error).__name__, str(error)))


def line_prefix(message: str) -> str:
    """``"line N:"`` of a reader's message."""
    head, _, _ = message.partition(":")
    return head + ":"


def assert_same_failure(storm: Callable[[], Any], tally: Callable[[], Any], *, prefix_only: bool = False) -> str:
    """Both calls raise the same exception class with the same message (or,
    with ``prefix_only``, the same ``line N:`` prefix); returns stormlog's."""
    storm_result = outcome(storm)
    tally_result = outcome(tally)
    assert storm_result[0] == "error", f"stormlog accepted it: {storm_result[1]!r}"
    assert tally_result[0] == "error", f"tally accepted what stormlog rejects with {storm_result[1]!r}"
    (storm_class, storm_message), (tally_class, tally_message) = storm_result[1], tally_result[1]
    assert tally_class == storm_class, (storm_message, tally_message)
    if prefix_only:
        assert line_prefix(tally_message) == line_prefix(storm_message), (storm_message, tally_message)
    else:
        assert tally_message == storm_message
    return storm_message


def pytest_runtest_logreport(report):
    """A skipped test says why in ``TALLY_SKIP_LOG`` too, so ``cargo xtask
    test`` lists it beside the Rust tests' skips instead of it passing
    silently in pytest's summary."""
    # An expected failure is a documented difference, not a skip.
    if not report.skipped or hasattr(report, "wasxfail") or not os.environ.get("TALLY_SKIP_LOG"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    with open(os.environ["TALLY_SKIP_LOG"], "a", encoding="utf-8") as log:
        log.write(f"skipped: pytest {report.nodeid}: {reason}\n")


def pytest_configure(config):
    # `cargo xtask gpu-check python` runs `pytest -m gpu`: the tests of paths
    # only a GPU exercises, each skipping with its reason elsewhere.
    config.addinivalue_line("markers", "gpu: needs a GPU; run on a GPU machine by `cargo xtask gpu-check python`")
