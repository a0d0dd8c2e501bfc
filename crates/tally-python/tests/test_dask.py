"""tally.dask on a real ``distributed.LocalCluster`` of two worker
processes: files read into partials on the workers, gathered in a tree of
tasks, give exactly ``tally.accounting.account_paths`` / ``breakdown_paths``
of the same files in one process, with the paths as a list or as
``{worker_address: paths}``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tally.accounting as accounting
import tally.dask
from test_partials import EXAMPLE, KINETO, same_accounting, split_artifact

distributed = pytest.importorskip(
    "distributed", reason="Dask's distributed is not installed (python/requirements.txt installs it)"
)


@pytest.fixture(scope="module")
def client():
    """One cluster for the module (starting one takes a second or two)."""
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        yield client


@pytest.fixture
def workers(client) -> list[str]:
    addresses = sorted(client.scheduler_info()["workers"])
    assert len(addresses) == 2
    return addresses


def test_a_list_of_artifacts(client, tmp_path: Path):
    files = split_artifact(EXAMPLE, tmp_path, 7)
    expected = accounting.account_paths(files)
    assert expected[1].device_totals
    same_accounting(tally.dask.account_paths(files, client), expected)
    # A deeper tree: gathers of two at a time, three levels.
    same_accounting(tally.dask.account_paths(files, client, fan_in=2), expected)
    breakdown = accounting.breakdown_paths(files, by_iteration=True)
    assert tally.dask.breakdown_paths(files, client, by_iteration=True, fan_in=3) == breakdown
    patterns = ["communication=*gemm*"]
    assert tally.dask.breakdown_paths(files, client, category_patterns=patterns) == accounting.breakdown_paths(
        files, category_patterns=patterns
    )


def test_a_list_of_traces_shares_the_run_id(client):
    expected = accounting.account_paths(KINETO)
    assert expected[0].run_id.startswith("trace-import-")
    same_accounting(tally.dask.account_paths(KINETO, client), expected)
    assert tally.dask.breakdown_paths(KINETO, client) == accounting.breakdown_paths(KINETO)
    given = tally.dask.account_paths(KINETO, client, run_id="ranks")
    same_accounting(given, accounting.account_paths(KINETO, run_id="ranks"))


def test_paths_per_worker(client, workers, tmp_path: Path):
    first, second = workers
    # Each rank's trace read on its own worker; the run ID is made of what
    # each worker computes of its own traces.
    ranks = {first: [KINETO[0]], second: [str(KINETO[1])]}
    same_accounting(tally.dask.account_paths(ranks, client), accounting.account_paths(KINETO))
    assert tally.dask.breakdown_paths(ranks, client, by_iteration=True) == accounting.breakdown_paths(
        KINETO, by_iteration=True
    )
    files = split_artifact(EXAMPLE, tmp_path, 5)
    placed = {second: files[:2], first: files[2:]}
    same_accounting(tally.dask.account_paths(placed, client, fan_in=2), accounting.account_paths(files))
    assert tally.dask.breakdown_paths(placed, client) == accounting.breakdown_paths(files)
    # An address with no worker there is refused (its tasks would wait
    # forever).
    with pytest.raises(ValueError, match="no worker at tcp://127.0.0.1:1"):
        tally.dask.account_paths({"tcp://127.0.0.1:1": files}, client)


def test_errors_come_back_as_raised(client, tmp_path: Path):
    files = split_artifact(EXAMPLE, tmp_path, 2)
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(FileNotFoundError) as raised:
        tally.dask.account_paths([*files, missing], client)
    assert raised.value.filename == str(missing)
    # Raised on the worker that reads it (the run ID given, nothing is
    # opened here first).
    with pytest.raises(FileNotFoundError) as raised:
        tally.dask.account_paths([*files, missing], client, run_id="r")
    assert raised.value.filename == str(missing)
    same_accounting(tally.dask.account_paths([], client), accounting.account_paths([]))


def test_a_local_cluster_by_default(tmp_path: Path):
    files = split_artifact(EXAMPLE, tmp_path, 3)
    same_accounting(tally.dask.account_paths(files), accounting.account_paths(files))


def test_without_distributed_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"tally.dask needs Dask's distributed package: pip install 'tally-ml\[dask\]'"):
        tally.dask.account_paths([EXAMPLE])
