"""An independent exact computation of `tally breakdown`'s figures straight
from a Kineto trace's JSON (issue 17's definitions, transcribed; no tally
code). Prints one JSON object keyed by device ordinal.

Timestamps: `ts` and `dur` read as decimals (json's parse_float=Decimal),
converted to integer nanoseconds rounding half to even, `end = start + dur`.
Every figure is computed by cutting the time axis at every boundary and
testing each elementary segment against every interval set, the plainest
exact method there is.
"""

import bisect
import gzip
import json
import sys
from decimal import ROUND_HALF_EVEN, Decimal

GPU = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset", "memset": "memset"}
RUNTIME = {"cuda_runtime", "runtime", "cuda_driver", "driver"}


def ns(value):
    return int((Decimal(value) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def category(kind, name):
    lowered = name.lower()
    if lowered.startswith("nccl") or lowered.startswith("rccl"):
        return "communication", None
    if kind == "memcpy":
        for direction in ("HtoD", "DtoH", "DtoD", "PtoP"):
            if direction.lower() in [word.lower() for word in name.replace("(", " ").split()]:
                return "memory", "memcpy_" + direction.lower()
        return "memory", "memcpy_unspecified"
    if kind == "memset":
        return "memory", "memset"
    return "compute", None


def union(intervals):
    total, reach_start, reach_end = 0, None, None
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if reach_end is None or start > reach_end:
            if reach_end is not None:
                total += reach_end - reach_start
            reach_start, reach_end = start, end
        else:
            reach_end = max(reach_end, end)
    if reach_end is not None:
        total += reach_end - reach_start
    return total


def merged(intervals):
    out = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def covered(lists, point):
    """Whether `point` lies in one of the merged `lists`."""
    index = bisect.bisect_right(lists, [point, float("inf")]) - 1
    return index >= 0 and lists[index][0] <= point < lists[index][1]


def main():
    with gzip.open(sys.argv[1], "rt", encoding="utf-8") as handle:
        document = json.load(handle, parse_float=Decimal)
    events = document["traceEvents"] if isinstance(document, dict) else document
    base = int(document.get("baseTimeNanoseconds") or 0) if isinstance(document, dict) else 0
    gpu, runtime = [], []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        cat = str(event.get("cat", "")).lower()
        args = event.get("args") or {}
        if cat in GPU:
            start = base + ns(event["ts"])
            end = start + ns(event["dur"])
            device = args.get("device", event.get("pid"))
            gpu.append(dict(start=start, end=end, kind=GPU[cat], name=event.get("name", ""),
                            device=int(device), stream=args.get("stream"), correlation=args.get("correlation") or 0))
        elif cat in RUNTIME:
            start = base + ns(event["ts"])
            runtime.append(dict(start=start, end=start + ns(event["dur"]), pid=event.get("pid"),
                                name=event.get("name", ""), correlation=args.get("correlation") or 0))
    by_correlation = {}
    for call in runtime:
        if call["correlation"]:
            by_correlation.setdefault(call["correlation"], []).append(call)
    result = {}
    for device in sorted({event["device"] for event in gpu}):
        mine = [event for event in gpu if event["device"] == device]
        for event in mine:
            event["category"], event["memory"] = category(event["kind"], event["name"])
        lists = {c: merged([(e["start"], e["end"]) for e in mine if e["category"] == c])
                 for c in ("compute", "communication", "memory", "other")}
        everything = merged([(e["start"], e["end"]) for e in mine])
        # Launches: one process used the correlation ID; its earliest call.
        latencies, in_flight, linked_starts, pids = [], [], set(), set()
        for event in mine:
            calls = by_correlation.get(event["correlation"], []) if event["correlation"] else []
            if calls and len({call["pid"] for call in calls}) == 1:
                call = min(calls, key=lambda call: (call["start"], call["end"]))
                latencies.append(event["start"] - call["start"])
                in_flight.append((call["start"], event["start"]))
                linked_starts.add(event["start"])
                pids.add(call["pid"])
        syncs = merged([(c["start"], c["end"]) for c in runtime
                        if "synchronize" in c["name"].lower() and c["pid"] in pids])
        in_flight = merged(in_flight)
        gaps = [(a[1], b[0]) for a, b in zip(everything, everything[1:])]
        unexplained = merged([gap for gap in gaps if gap[1] not in linked_starts])
        cuts = sorted({point for lst in list(lists.values()) + [in_flight, syncs, unexplained]
                       for interval in lst for point in interval})
        envelope = (everything[0][0], everything[-1][1]) if everything else (0, 0)
        figures = dict(compute_communication=0, memory_compute=0, communication_memory=0, exposed=0,
                       queued=0, sync=0, unknown=0, host=0)
        for left, right in zip(cuts, cuts[1:]):
            here = {c for c, lst in lists.items() if covered(lst, left)}
            length = right - left
            figures["compute_communication"] += length * ({"compute", "communication"} <= here)
            figures["memory_compute"] += length * ({"memory", "compute"} <= here)
            figures["communication_memory"] += length * ({"communication", "memory"} <= here)
            figures["exposed"] += length * ("communication" in here and "compute" not in here)
            if here or not envelope[0] <= left < envelope[1]:
                continue
            if covered(in_flight, left):
                figures["queued"] += length
            elif covered(syncs, left):
                figures["sync"] += length
            elif covered(unexplained, left):
                figures["unknown"] += length
            else:
                figures["host"] += length
        kernels = {}
        for event in mine:
            kernels.setdefault((event["name"], event["category"]), []).append(event)
        kernel_rows = []
        for (name, cat), members in kernels.items():
            durations = sorted(e["end"] - e["start"] for e in members)
            kernel_rows.append([name, cat, len(members), sum(durations),
                                union([(e["start"], e["end"]) for e in members]),
                                durations[0], durations[(len(durations) - 1) // 2], durations[-1]])
        kernel_rows.sort(key=lambda row: (-row[3], row[0], row[1]))
        streams = {}
        for event in mine:
            if event["stream"] is not None:
                streams.setdefault(int(event["stream"]), []).append((event["start"], event["end"]))
        latencies.sort()
        rank = lambda p: latencies[max(1, -(-p * len(latencies) // 100)) - 1] if latencies else None
        memory = {}
        for event in mine:
            if event["memory"]:
                memory.setdefault(event["memory"], []).append((event["start"], event["end"]))
        result[str(device)] = {
            "busy_ns": union([(e["start"], e["end"]) for e in mine]),
            "summed_ns": sum(e["end"] - e["start"] for e in mine),
            "count": len(mine),
            "categories": {c: {"busy_ns": union(lst), "summed_ns": sum(e["end"] - e["start"] for e in mine if e["category"] == c),
                               "count": sum(1 for e in mine if e["category"] == c)} for c, lst in lists.items()},
            "memory_busy": {kind: union(lst) for kind, lst in memory.items()},
            "overlap_ns": {"communication&compute": figures["compute_communication"],
                           "memory&compute": figures["memory_compute"],
                           "communication&memory": figures["communication_memory"]},
            "exposed_communication_ns": figures["exposed"],
            "idle": {"envelope_ns": envelope[1] - envelope[0], "gap_count": len(gaps),
                     "launch_queued_ns": figures["queued"], "sync_wait_ns": figures["sync"],
                     "unknown_ns": figures["unknown"], "host_bound_ns": figures["host"]},
            "launch_latency": {"linked": len(latencies), "unlinked": len(mine) - len(latencies),
                               "min_ns": latencies[0] if latencies else None,
                               "median_ns": latencies[(len(latencies) - 1) // 2] if latencies else None,
                               "p90_ns": rank(90), "p99_ns": rank(99),
                               "max_ns": latencies[-1] if latencies else None},
            "kernels": kernel_rows,
            "streams": {str(stream): union(lst) for stream, lst in streams.items()},
            "stream_envelopes": {str(stream): [min(start for start, _ in lst), max(end for _, end in lst)]
                                 for stream, lst in streams.items()},
        }
    json.dump(result, sys.stdout)


main()
