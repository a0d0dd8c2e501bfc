"""Profiler traces as correlation records, as ``tally import`` writes them.

``import_trace(path)`` reads a PyTorch profiler (Kineto) JSON trace, plain
or gzip, or an Nsight Systems SQLite export (or a list of them, one run)
and returns the records, ready for ``tally.accounting``.
"""

from ._native import import_trace

__all__ = ["import_trace"]
