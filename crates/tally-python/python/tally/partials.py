"""Exact partial results of a run's files, for any engine to map and reduce.

A run whose files live on many machines is accounted where the files are:
each machine makes a partial of its files (``make``, bytes of a few percent
of the files' size), partials travel and merge (``merge``, in any order and
grouping: a partial of partials is a partial), and the merged partial is
accounted (``account``) or broken down (``breakdown``) with exactly the
result ``tally.accounting.account_paths`` / ``breakdown_paths`` give for all
the files in one process, to the nanosecond. The format is tally-partial's
(``docs/partials.md``); a damaged partial is ``ValueError`` naming it, the
byte offset and the rule it breaks.

Traces split between partials must share the run ID: give every ``make``
the run's ``run_id`` (``default_run_id`` of all the run's paths, or, where
no machine sees every file, ``run_id_of_attachments`` of the
``trace_attachment_ids`` each machine computes of its own, in the run's
order). Partials to break down are made with ``per_kernel=True``, as
``breakdown_paths`` reads traces.

Everything here is defined by the native module ``tally._native``; this
module only names what it exports. ``tally.dask`` uses it on Dask.
"""

from ._native import (
    account,
    breakdown,
    default_run_id,
    make,
    merge,
    run_id_of_attachments,
    trace_attachment_ids,
)

__all__ = [
    "account",
    "breakdown",
    "default_run_id",
    "make",
    "merge",
    "run_id_of_attachments",
    "trace_attachment_ids",
]
