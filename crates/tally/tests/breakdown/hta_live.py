"""HTA's own analyses of one Kineto trace, as JSON, for breakdown.rs.

    python hta_live.py TRACE FILTERED

Runs Holistic Trace Analysis (PyPI HolisticTraceAnalysis 0.5.0) the way its
users do, ``TraceAnalysis(...)`` then ``get_comm_comp_overlap``,
``get_temporal_breakdown``, ``get_idle_time_breakdown`` and
``get_gpu_kernel_breakdown``, and prints their figures (HTA's microseconds)
with what the test needs to put tally's figures beside them:

- ``FILTERED`` gets a copy of the trace holding only the kernels, copies
  and sets that HTA kept after its ProfilerStep filtering (every other event
  is copied as is, its decimal text unchanged), so that tally can measure
  HTA's selection of work, not all of it.
- ``kept``: how many of those GPU events HTA kept, of how many;
  ``extras``: the other events HTA's analyses take as GPU work because they
  carry a ``stream`` argument (``cuda_sync`` waits, CPU ops), with HTA's
  kernel type of each.
- ``rounding``: HTA reads timestamps as float64 and rounds each GPU event
  inward (``ceil(ts)``, ``floor(ts + dur)``); for each set of events a
  figure is taken over, the sum of ``|HTA's end - the exact end|`` and the
  same for the starts, from the exact decimal text. A union, a sum or an
  envelope of those events moves by at most that much, so it is the
  tolerance the test allows (0 on whole-microsecond traces).
- ``types_by_name``: HTA's kernel type of each kernel, copy and set name.
- ``per_iteration``: HTA's own ``iteration`` column (a GPU event takes the
  ProfilerStep of the CPU call that launched it) over the unfiltered trace:
  count, summed and merged busy time of the kernels, copies and sets of
  each step, beside tally's ``--by iteration``, and how many of them were
  launched by another process than the one that recorded the step.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import sys
import warnings
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")

from hta.common.trace import parse_trace_file  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.utils.utils import get_kernel_type, merge_kernel_intervals  # noqa: E402

# What tally measures as GPU work in a Kineto trace (kernels, copies, sets).
GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def dump(value, out: list[str]) -> None:
    """JSON text of ``value`` with every Decimal written as its own text, so
    the filtered copy keeps the trace's timestamps digit for digit."""
    if isinstance(value, dict):
        out.append("{")
        for position, (key, item) in enumerate(value.items()):
            if position:
                out.append(",")
            out.append(json.dumps(key))
            out.append(":")
            dump(item, out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for position, item in enumerate(value):
            if position:
                out.append(",")
            dump(item, out)
        out.append("]")
    elif isinstance(value, Decimal):
        out.append(str(value))
    else:
        out.append(json.dumps(value))


class Slack:
    """The inward rounding of a set of events, in microseconds."""

    def __init__(self) -> None:
        self.total = Decimal(0)
        self.largest = Decimal(0)

    def add(self, amount: Decimal) -> None:
        self.total += amount
        self.largest = max(self.largest, amount)

    def json(self) -> dict:
        return {"total_us": float(self.total), "largest_us": float(self.largest)}


def main() -> None:
    trace, filtered = Path(sys.argv[1]), Path(sys.argv[2])
    with gzip.open(trace, "rt", encoding="utf-8") as handle:
        record = json.load(handle, parse_float=Decimal)
    events = record["traceEvents"]
    # HTA rounds only when its ts column is float64, that is when any event
    # (CPU ones included) writes a fractional timestamp.
    rounds = any(isinstance(event.get("ts"), Decimal) for event in events if isinstance(event, dict))

    analysis = TraceAnalysis(trace_files={0: str(trace)}, trace_dir=str(trace.parent))
    t = analysis.t
    table = t.symbol_table.get_sym_table()
    df = t.get_trace(0)
    on_streams = df[df["stream"].ne(-1)]
    kept = {int(index) for index, cat in zip(on_streams["index"], on_streams["cat"]) if table[cat].lower() in GPU_CATEGORIES}
    stream_categories = sorted({table[cat] for cat in on_streams["cat"].unique()})

    def slack_of(event: dict) -> Decimal:
        if not rounds:
            return Decimal(0)
        start, duration = Decimal(event["ts"]), Decimal(event["dur"])
        hta_start = math.ceil(float(start))
        hta_end = math.floor(float(start) + float(duration))
        return abs(Decimal(hta_start) - start) + abs(start + duration - Decimal(hta_end))

    def kind(event: dict) -> str:
        return get_kernel_type(event["name"])

    slack: dict[str, Slack] = defaultdict(Slack)
    gpu_total = 0
    kept_events = []
    for index, event in enumerate(events):
        if not isinstance(event, dict) or str(event.get("cat", "")).lower() not in GPU_CATEGORIES:
            continue
        gpu_total += 1
        if index not in kept:
            continue
        kept_events.append(event)
        amount = slack_of(event)
        for key in ("all", f"type:{kind(event)}", f"name:{event['name']}", f"stream:{event['args']['stream']}"):
            slack[key].add(amount)
    dropped = {
        index
        for index, event in enumerate(events)
        if isinstance(event, dict) and str(event.get("cat", "")).lower() in GPU_CATEGORIES and index not in kept
    }
    out: list[str] = []
    dump({**record, "traceEvents": [event for index, event in enumerate(events) if index not in dropped]}, out)
    with gzip.open(filtered, "wt", encoding="utf-8") as handle:
        handle.write("".join(out))

    overlap = analysis.get_comm_comp_overlap(visualize=False).iloc[0]
    temporal = analysis.get_temporal_breakdown(visualize=False).iloc[0]
    idle, _ = analysis.get_idle_time_breakdown(visualize=False)
    kernel_types, kernels = analysis.get_gpu_kernel_breakdown(
        visualize=False, num_kernels=10**9, duration_ratio=1.0, include_memory_kernels=True
    )
    # HTA's kernel table has no count; it is the size of the same groups
    # over the same kept events.
    counts: dict[str, int] = defaultdict(int)
    for name in on_streams["name"]:
        counts[table[name]] += 1

    # Per step, from HTA's parse before any filtering.
    _, whole, symbols = parse_trace_file(str(trace))
    whole_table = symbols.get_sym_table()
    gpu = whole[whole["stream"].ne(-1) & whole["cat"].map(lambda cat: whole_table[cat].lower() in GPU_CATEGORIES)]
    # HTA gives a GPU event the step whose time range holds its launch call
    # on any process; tally only a step of the launching process. The
    # launches whose step is on another process (a step recorded by a
    # parent process) are counted apart.
    steps = whole[whole["name"].map(lambda name: whole_table[name].startswith("ProfilerStep"))]
    step_pids: dict[int, set] = defaultdict(set)
    for name, pid in zip(steps["name"], steps["pid"]):
        step_pids[int(whole_table[name].rsplit("#", 1)[1])].add(pid)
    launcher_pid = whole["pid"].to_dict()
    per_iteration = {}
    for iteration, rows in gpu.groupby("iteration"):
        other_process = sum(
            1
            for correlation in rows["index_correlation"]
            if iteration >= 0 and launcher_pid.get(int(correlation)) not in step_pids[int(iteration)]
        )
        merged = merge_kernel_intervals(rows[["ts", "dur"]].copy())
        step_slack = Slack()
        for index in rows["index"]:
            step_slack.add(slack_of(events[int(index)]))
        per_iteration[str(int(iteration))] = {
            "count": int(len(rows)),
            "summed_us": float(rows["dur"].sum()),
            "busy_us": float((merged["end"] - merged["ts"]).sum()),
            "rounding": step_slack.json(),
            "launched_on_another_process": other_process,
        }

    # Events HTA takes as GPU work for carrying a stream argument that are
    # not kernels, copies or sets (cuda_sync waits, CPU ops with a stream):
    # tally measures none of them as GPU work.
    extras: dict[tuple[str, str], dict] = {}
    for cat, name, dur in zip(on_streams["cat"], on_streams["name"], on_streams["dur"]):
        if table[cat].lower() in GPU_CATEGORIES:
            continue
        entry = extras.setdefault(
            (table[cat], table[name]),
            {"cat": table[cat], "name": table[name], "type": get_kernel_type(table[name]), "count": 0, "summed_us": 0.0},
        )
        entry["count"] += 1
        entry["summed_us"] += float(dur)

    # HTA's kernel type of every kernel, copy and set name of the trace, so
    # that tally can be given the same categories name by name (HTA's
    # regexes are case-sensitive; tally's globs are not).
    types_by_name = {
        event["name"]: get_kernel_type(event["name"])
        for event in events
        if isinstance(event, dict) and str(event.get("cat", "")).lower() in GPU_CATEGORIES
    }

    result = {
        # add_iteration gives a step to GPU events on streams above 0 only:
        # those on stream 0 (ROCm's, CUDA's legacy default) get none.
        "stream_zero_events": int(gpu["stream"].eq(0).sum()),
        "types_by_name": types_by_name,
        "extras": sorted(extras.values(), key=lambda entry: (entry["cat"], entry["name"])),
        "rounds_timestamps": rounds,
        "stream_categories": stream_categories,
        "kept": {"gpu_events": len(kept_events), "of": gpu_total},
        # The steps HTA's filter counts: every ProfilerStep name it parsed.
        "profiler_steps": sorted(name for name in t.symbol_table.get_sym_id_map() if "ProfilerStep" in name),
        # NaN (no communication) is not JSON: null.
        "overlap_pctg": None if math.isnan(overlap["comp_comm_overlap_pctg"]) else float(overlap["comp_comm_overlap_pctg"]),
        "temporal": {
            key: float(temporal[f"{key}(us)"])
            for key in ("idle_time", "compute_time", "non_compute_time", "kernel_time")
        },
        "idle": [
            {"stream": int(row["stream"]), "category": row["idle_category"], "idle_us": float(row["idle_time"])}
            for _, row in idle.iterrows()
        ],
        "kernel_types": {row["kernel_type"]: float(row["sum"]) for _, row in kernel_types.iterrows()},
        "kernels": [
            {
                "name": row["name"],
                "type": row["kernel_type"],
                "count": counts[row["name"]],
                "sum_us": float(row["sum (us)"]),
                "min_us": float(row["min (us)"]),
                "max_us": float(row["max (us)"]),
            }
            for _, row in kernels.iterrows()
        ],
        "rounding": {key: value.json() for key, value in slack.items()},
        "per_iteration": per_iteration,
    }
    json.dump(result, sys.stdout, sort_keys=True, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
