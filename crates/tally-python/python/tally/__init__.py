"""tally: what ML inference really costs.

``tally.accounting`` is a drop-in for stormlog 0.4.3's
``stormlog.infer.correlation_events``, ``correlation_codec`` and
``correlation_accounting``: the same names, signatures, fields and
exceptions, computed by tally's Rust crates. ``tally.trace`` imports
profiler traces (PyTorch profiler JSON, Nsight Systems SQLite) into the same
records. ``tally.partials`` makes exact partial results of some of a run's
files, to merge and account anywhere, and ``tally.dask`` maps and reduces
them on a Dask cluster.
"""

from . import accounting, dask, partials, profiling, trace
from ._native import __version__

__all__ = ["__version__", "accounting", "dask", "partials", "profiling", "trace"]
