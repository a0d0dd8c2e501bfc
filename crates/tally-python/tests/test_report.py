"""The breakdown shows as ``tally report``'s page in a notebook: what
``breakdown_paths`` and ``tally.partials.breakdown`` return is still the
dict ``tally breakdown --format json`` prints, and its ``_repr_html_`` is
tally-report's page of it (rendered in Rust: the Python package only
binds), self-contained, embedding that same dict and drawing its timeline."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

import tally.accounting as accounting
import tally.partials as partials
from tally import _native

ROOT = Path(__file__).resolve().parents[3]
KINETO = ROOT / "crates" / "tally-trace" / "tests" / "fixtures" / "kineto" / "nccl-distributed.json.gz"
EXAMPLE = ROOT / "examples" / "serving-run.jsonl"


def embedded(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="tally-data">(.*?)</script>', page, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


def references(page: str) -> list[str]:
    found = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", page, re.I)
    found += re.findall(r"url\(\s*([^)]*)\)", page, re.I)
    return [target for target in found if not target.startswith("#") and not target.startswith("data:")]


def test_the_breakdown_is_its_dict_and_shows_as_the_report():
    breakdown = accounting.breakdown_paths(KINETO)
    assert isinstance(breakdown, dict)
    # Still exactly the JSON: the class adds no key.
    assert json.loads(json.dumps(breakdown)) == breakdown
    html = breakdown._repr_html_()
    assert html.startswith('<div class="tally-report" data-kind="breakdown">')
    assert embedded(html) == breakdown
    assert 'class="tally-chart timeline"' in html
    assert 'data-key="/devices/0/exposed_communication_ns"' in html
    assert references(html) == []
    page = breakdown.report_html()
    assert page.startswith("<!DOCTYPE html>") and html in page


def test_every_device_and_iteration_of_the_example_is_on_the_page():
    breakdown = accounting.breakdown_paths(EXAMPLE, by_iteration=True)
    html = breakdown._repr_html_()
    assert embedded(html) == breakdown
    for index in range(len(breakdown["devices"])):
        assert f'id="device-{index}"' in html
    assert 'data-table="iterations"' in html


def test_partials_break_down_to_the_same_page():
    parts = [partials.make(KINETO, per_kernel=True)]
    breakdown = partials.breakdown(parts)
    assert breakdown == accounting.breakdown_paths(KINETO)
    assert embedded(breakdown._repr_html_()) == breakdown


def test_a_pickled_breakdown_keeps_its_figures_and_shows_without_a_timeline():
    breakdown = accounting.breakdown_paths(KINETO)
    copy = pickle.loads(pickle.dumps(breakdown))
    assert copy == breakdown and type(copy) is type(breakdown)
    html = copy._repr_html_()
    assert embedded(html) == breakdown
    assert "No timeline was computed" in html


def test_a_dict_that_is_no_breakdown_is_refused():
    with pytest.raises(ValueError, match="not a breakdown"):
        _native.report_html({"devices": "nope"})
