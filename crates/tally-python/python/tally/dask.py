"""One run's files accounted on a Dask cluster, where the files are.

``account_paths(paths, client)`` and ``breakdown_paths(paths, client)``
return exactly what ``tally.accounting.account_paths`` and
``tally.accounting.breakdown_paths`` return for the same files in one
process: each file is read into a partial on a worker
(``tally.partials.make``), the partials are gathered in a tree of tasks on
the workers, and accounted or broken down together
(``tally.partials.account`` / ``breakdown``, which read each once). The
tree gathers rather than merges: a merged partial is no smaller than its
parts (``tally.partials.merge`` concatenates them), and merging would
decode and encode every event again at every level.
Only partials travel, never the files. This module orchestrates; every
rule is in ``tally.partials``. Each task reads its file on one thread
(``make(..., threads=1)``): Dask's workers and their threads decide how
many run at once.

``paths`` is either a list of paths, spread over the workers by the
scheduler (every worker must see them: a shared file system), or a mapping
``{worker_address: [paths]}``, each list read on that worker only (the
files on a worker's own disk).

``client`` is any ``distributed.Client``. Without one, a
``distributed.LocalCluster(processes=True, n_workers=2,
threads_per_worker=1)`` (its dashboard on a free port) and a client of it
are started for the call and closed after it: a second or two, so pass a
client to make several calls. Dask's ``distributed`` package is imported only when a
function here is called.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from . import partials
from ._native import CorrelationGraph, RunAccounting

if TYPE_CHECKING:
    from distributed import Client, Future

_Path = Union[str, "os.PathLike[str]"]
#: A list of paths (any worker reads each), or ``{worker_address: paths}``.
Paths = Union[_Path, Iterable[_Path], Mapping[str, Union[_Path, Iterable[_Path]]]]

#: Partials (or lists of them) gathered by one gather task.
FAN_IN = 8

__all__ = ["FAN_IN", "Paths", "account_paths", "breakdown_paths"]


def account_paths(
    paths: Paths,
    client: Client | None = None,
    *,
    run_id: str | None = None,
    fan_in: int = FAN_IN,
) -> tuple[CorrelationGraph, RunAccounting]:
    """``tally.accounting.account_paths(paths, run_id=run_id)``, computed on
    a Dask cluster: ``(graph, accounting)``, equal to the single process's.

    The partials come back to the caller, which accounts them (a graph
    keeps what it was resolved from and is not pickled). ``run_id`` is the
    traces' run; by default the one one process reading every path derives.
    ``fan_in`` is the number of partials (or lists of them) each gather
    task gathers.
    """
    with _client(client) as active:
        gathered = _reduced(active, paths, run_id=run_id, per_kernel=False, fan_in=fan_in)
        parts = [] if gathered is None else gathered.result()
    return partials.account(parts)


def breakdown_paths(
    paths: Paths,
    client: Client | None = None,
    *,
    category_patterns: Sequence[str] = (),
    by_iteration: bool = False,
    run_id: str | None = None,
    fan_in: int = FAN_IN,
) -> dict[str, Any]:
    """``tally.accounting.breakdown_paths(paths, category_patterns=...,
    by_iteration=..., run_id=...)``, computed on a Dask cluster: the object
    ``tally breakdown --format json`` prints, equal to the single
    process's. The breakdown runs on a worker, beside the gathered partials.
    """
    patterns = list(category_patterns)
    with _client(client) as active:
        gathered = _reduced(active, paths, run_id=run_id, per_kernel=True, fan_in=fan_in)
        if gathered is None:
            return partials.breakdown([], category_patterns=patterns, by_iteration=by_iteration)
        return active.submit(
            _breakdown, gathered, category_patterns=patterns, by_iteration=by_iteration, pure=False
        ).result()


def _breakdown(parts: list[bytes], *, category_patterns: list[str], by_iteration: bool) -> dict[str, Any]:
    """The breakdown of the gathered partials (a task's function: pickled by
    name, so a worker imports it)."""
    return partials.breakdown(parts, category_patterns=category_patterns, by_iteration=by_iteration)


def _gather(*parts: bytes | list[bytes]) -> list[bytes]:
    """A gather task: the partials of its arguments (futures, which Dask
    resolves: partials or lists of them), in order."""
    gathered: list[bytes] = []
    for part in parts:
        gathered.extend(part if isinstance(part, list) else [part])
    return gathered


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as error:
        raise ImportError(
            "tally.dask needs Dask's distributed package: pip install 'tally-ml[dask]' (or distributed)"
        ) from error
    return distributed


@contextlib.contextmanager
def _client(client: Client | None) -> Iterator[Client]:
    """The caller's client, or a local cluster of two worker processes for
    the call, closed after it."""
    distributed = _distributed()
    if client is not None:
        yield client
        return
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as local:
        yield local


def _path_list(value: _Path | Iterable[_Path]) -> list[str]:
    """One path or several, as strings (what travels to a worker)."""
    if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        return [os.fsdecode(value)]
    return [os.fsdecode(path) for path in value]


def _placed(client: Client, paths: Paths) -> list[tuple[str, str | None]]:
    """``(path, worker address or None)`` of every path, in the run's order;
    an address the client has no worker at is ``ValueError`` (its tasks
    would wait for that worker forever)."""
    if not isinstance(paths, Mapping):
        return [(path, None) for path in _path_list(paths)]
    workers = client.scheduler_info()["workers"]
    unknown = [address for address in paths if address not in workers]
    if unknown:
        raise ValueError(
            f"no worker at {', '.join(map(str, unknown))}; the client's workers are "
            f"{', '.join(sorted(workers)) or 'none'}"
        )
    return [(path, address) for address, listed in paths.items() for path in _path_list(listed)]


def _run_id(client: Client, paths: Paths, placed: list[tuple[str, str | None]]) -> str | None:
    """The run ID one process reading every path would derive, or None
    where none is a trace: computed here for paths any worker reads (which
    must be visible here too), from the trace attachment IDs each worker
    computes of its own files for a mapping."""
    if not isinstance(paths, Mapping):
        return partials.default_run_id([path for path, _ in placed])
    by_worker: dict[str | None, list[str]] = {}
    for path, address in placed:
        by_worker.setdefault(address, []).append(path)
    futures = [
        client.submit(
            partials.trace_attachment_ids, listed, workers=[address], allow_other_workers=False, pure=False
        )
        for address, listed in by_worker.items()
    ]
    # The mapping's order, then each list's: the order of `placed`.
    return partials.run_id_of_attachments([id_ for found in client.gather(futures) for id_ in found])


def _reduced(
    client: Client, paths: Paths, *, run_id: str | None, per_kernel: bool, fan_in: int
) -> Future | None:
    """The future of the list of every path's partial (None for no path):
    one partial per file, then gathers of ``fan_in`` at a time."""
    if fan_in < 2:
        raise ValueError(f"fan_in must be at least 2, not {fan_in}")
    placed = _placed(client, paths)
    if not placed:
        return None
    if run_id is None:
        run_id = _run_id(client, paths, placed)
    level: list[Future] = []
    for path, address in placed:
        where = {} if address is None else {"workers": [address], "allow_other_workers": False}
        level.append(
            client.submit(
                partials.make, [path], run_id=run_id, per_kernel=per_kernel, threads=1, pure=False, **where
            )
        )
    while True:
        level = [
            client.submit(_gather, *level[start : start + fan_in], pure=False)
            for start in range(0, len(level), fan_in)
        ]
        if len(level) == 1:
            return level[0]
