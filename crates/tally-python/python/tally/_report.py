"""The breakdown ``tally.accounting.breakdown_paths`` and
``tally.partials.breakdown`` return: a ``dict`` equal to the JSON
``tally breakdown --format json`` prints, which a notebook shows as
``tally report``'s page (rendered in Rust by tally-report)."""

from typing import Any

from . import _native


class Breakdown(dict):  # type: ignore[type-arg]
    """The overlap breakdown of one run (a ``dict``), shown in a notebook as
    ``tally report``'s page."""

    __slots__ = ("_timelines",)

    def _repr_html_(self) -> str:
        return _native.report_html(self, getattr(self, "_timelines", None))

    def report_html(self) -> str:
        """The whole page ``tally report`` writes for this breakdown."""
        return _native.report_html(self, getattr(self, "_timelines", None), page=True)

    def __reduce__(self) -> tuple[Any, ...]:
        # The timelines stay in this process; the figures travel.
        return (Breakdown, (dict(self),))
