"""The breakdown ``tally.accounting.breakdown_paths`` and
``tally.partials.breakdown`` return: a ``dict`` equal to the JSON
``tally breakdown --format json`` prints, which a notebook shows as
``tally report``'s page (made and rendered in Rust by tally-report)."""

from ._native import Breakdown

__all__ = ["Breakdown"]
