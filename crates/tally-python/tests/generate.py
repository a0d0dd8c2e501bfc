"""Seeded random correlation artifacts for the live comparison with stormlog.

Every artifact is a list of record dicts, as a producer writes them, small
enough that stormlog resolves hundreds of them in a few seconds. One seed
gives one run with a random mix of everything the accounting must get right:

- requests (some with attempts), iterations on several engines and clocks,
  memberships, stages;
- GPU activities on several device clocks (``device`` and ``monotonic``
  kinds, two devices, one device clock shared by two sessions), overlapping
  on purpose, some with ``metadata.intervals`` (schema 3);
- unmeasured activities (no ``device_uuid``, a ``wall`` clock, no end),
  unattributed ones (``attribution_status: unresolved``), non-GPU domains;
- references to unknown requests, attempts and iterations (unresolved);
- clock alignments with validity windows, and legacy execution-import ones
  with every shape of ``metadata.gap_ns``;
- entities re-reported under other event IDs, repeated deliveries (some with
  ``1``, ``1.0`` and ``True``, which Python finds equal), legacy v1 records,
  shuffled order; records in stormlog's full form or sparse.

The expected values are never computed here: the tests ask stormlog.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import sys
from pathlib import Path
from typing import Any


# The record builders and writers the fixture scripts use too
# (python/fixtures/_common.py), not a package: its folder goes on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python" / "fixtures"))

import _common  # noqa: E402
from _common import ref  # noqa: E402

LEGACY_IMPORT = "stormlog.infer.import_execution"


context = functools.partial(_common.context, source="tally.tests")


class Run(_common.Recorder):
    """The records of one run, with unique event IDs per (session, producer)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.serial = 0

    def event_id(self, ctx: dict | None = None) -> str:
        self.serial += 1
        # Random prefixes, so that which of two re-reports has the smaller
        # event ID (the one stormlog keeps) is not the delivery order.
        return f"{self.rng.getrandbits(16):04x}-{self.serial}"

    def again(self, record: dict) -> None:
        """The same entity reported once more under another event ID."""
        other = copy.deepcopy(record)
        other["event_id"] = self.event_id()
        self.records.append(other)


def random_run(seed: int, *, size: int | None = None, run_id: str | None = None) -> list[dict]:
    """One run's records (see the module docstring), shuffled."""
    rng = random.Random(seed)
    size = size if size is not None else rng.randint(3, 14)
    run = Run(rng)
    name = run_id or f"run-{seed}"
    api = context(name, "s-api", "api", "host-a", "monotonic", host="node-a", pid=7)
    engines = [
        context(name, "s-e0", "engine-0", "host-a", "monotonic", engine="vllm"),
        context(name, "s-e1", "engine-1", "host-b", rng.choice(["wall", "monotonic", "device"]), rank=1, world_size=2),
    ]
    gpus = [
        context(name, "s-t0", "trace-0", "cuda:0", "device", device_uuid="GPU-0", source="kineto"),
        context(name, "s-t1", "trace-1", "host-a", "monotonic", device_uuid="GPU-1", source="nsys"),
        # Another session of trace-0 on the same device clock.
        context(name, "s-t0b", "trace-0", "cuda:0", "device", device_uuid="GPU-0"),
    ]
    unmeasurable = [
        context(name, "s-tw", "trace-w", "wall-a", "wall", device_uuid="GPU-0"),
        context(name, "s-tn", "trace-n", "host-a", "monotonic"),
    ]
    runtime = context(name, "s-rt", "runtime", "host-a", "monotonic", device_uuid="GPU-0")

    if rng.random() < 0.7:
        run.emit("infer.artifact", api, artifact_kind="inference_correlation", created_at_ns=rng.randint(0, 10**18))
    if rng.random() < 0.5:
        run.emit("infer.capabilities", gpus[0], component="cupti", available=True,
                 supported=["kernel", "memcpy"], enabled=["kernel"], collected=rng.choice([[], ["kernel"]]))

    requests = [f"req-{i}" if i % 5 != 3 else f"réq-{i}" for i in range(max(2, size // 2))]
    attempts: dict[str, list[str]] = {}
    entities: list[dict] = []
    for i, request in enumerate(requests):
        start = 1_000 + 500 * i
        if rng.random() < 0.85:
            entities.append(run.emit(
                "infer.request", api, request_ref=ref("api", request), start_ns=start,
                end_ns=rng.choice([None, start + rng.randint(0, 900)]),
                status=rng.choice([None, "ok", "error"]), input_tokens=rng.choice([None, rng.randint(0, 99)]),
            ))
        for k in range(rng.choice([0, 0, 1, 2])):
            attempt = f"{request}/try-{k}"
            attempts.setdefault(request, []).append(attempt)
            entities.append(run.emit("infer.request", api, request_ref=ref("api", request),
                                     attempt_ref=ref("api", attempt), start_ns=start + k))

    iterations: list[tuple[dict, int, int]] = []
    for i in range(max(1, size // 2)):
        engine = engines[i % 2]
        start = 10_000 + 1_000 * i
        end = None if rng.random() < 0.15 else start + rng.randint(0, 2_000)
        iteration = ref(engine["producer_id"], f"step-{i}")
        entities.append(run.emit("infer.iteration", engine, iteration_ref=iteration,
                                 batch_ref=rng.choice([None, ref(engine["producer_id"], f"batch-{i}")]),
                                 start_ns=start, end_ns=end))
        iterations.append((iteration, start, end if end is not None else start + 1_000))

    def some_iteration() -> dict:
        if rng.random() < 0.1:
            return ref("engine-0", f"ghost-step-{rng.randint(0, 3)}")
        return rng.choice(iterations)[0]

    seen_members: set[str] = set()
    for iteration, _start, _end in iterations:
        for _ in range(rng.randint(0, 3)):
            request = rng.choice(requests) if rng.random() < 0.9 else f"ghost-req-{rng.randint(0, 3)}"
            attempt = None
            if request in attempts and rng.random() < 0.5:
                attempt = rng.choice(attempts[request])
            elif rng.random() < 0.05:
                attempt = f"{request}/ghost-try"
            target = iteration if rng.random() < 0.9 else some_iteration()
            role = rng.choice(["prefill", "decode"])
            key = json.dumps([request, attempt, target, role])
            if key in seen_members:
                continue  # one membership entity, one description
            seen_members.add(key)
            entities.append(run.emit(
                "infer.membership", engines[0], request_ref=ref("api", request),
                attempt_ref=ref("api", attempt) if attempt else None, iteration_ref=target, role=role,
                output_tokens=rng.choice([None, rng.randint(0, 9)]),
                metadata=rng.choice([None, {"position": 1}, {"position": 2}]),
            ))

    for i in range(rng.randint(0, 3)):
        roll = rng.random()
        request = ref("api", rng.choice(requests + ["ghost-req-9"])) if roll < 0.7 else None
        iteration = some_iteration() if roll > 0.4 else None
        start = rng.randint(0, 5_000)
        entities.append(run.emit("infer.stage", engines[0], stage_ref=ref("engine-0", f"stage-{i}"),
                                 name=rng.choice(["prefill", "decode"]), request_ref=request,
                                 iteration_ref=iteration, start_ns=start, end_ns=start + rng.randint(0, 99)))

    kernel = 0
    for iteration, start, end in iterations:
        for _ in range(rng.randint(0, 5)):
            kernel += 1
            roll = rng.random()
            ctx = rng.choice(gpus) if roll < 0.75 else rng.choice(unmeasurable) if roll < 0.9 else runtime
            domain = "gpu" if ctx is not runtime else rng.choice(["runtime", "cpu", "unknown", "gpu"])
            a_start = max(0, start + rng.randint(-200, max(1, end - start)))
            length = rng.choice([0, rng.randint(1, 50), rng.randint(50, 3_000)])
            a_end: int | None = a_start + length
            link = rng.random()
            linked = None if link < 0.12 else ref("engine-0", "ghost-step-0") if link < 0.18 else iteration
            metadata = None
            if length >= 10 and rng.random() < 0.3:
                cursor, pieces = 0, []
                while cursor < length and len(pieces) < 3:
                    offset = cursor + rng.randint(0, (length - cursor) // 2)
                    duration = min(rng.randint(0, (length - offset) // 2 + 1), length - offset)
                    pieces.append([offset, duration])
                    cursor = offset + duration + 1
                metadata = {"intervals": pieces}
            elif rng.random() < 0.1:
                metadata = {"name": f"k{kernel}", "grid": [rng.randint(1, 8), 1, 1]}
            if metadata is None and rng.random() < 0.08:
                a_end = None  # an incomplete span: unmeasured
            entities.append(run.emit(
                "infer.activity_ref", ctx, metadata=metadata,
                activity_ref=ref(ctx["producer_id"], f"act-{kernel}"),
                activity_kind=rng.choice(["kernel", "memcpy"]), activity_domain=domain,
                attribution_status="unresolved" if linked is None else "linked", iteration_ref=linked,
                stream_id=rng.choice([None, 7, 13]), start_ns=a_start, end_ns=a_end,
            ))

    aligner = context(name, "s-al", "aligner", "host-a", "monotonic")
    legacy = context(name, "s-imp", "importer", "host-a", "monotonic", source=LEGACY_IMPORT)
    alignments = []
    if rng.random() < 0.8:
        alignments.append(run.emit("infer.clock_alignment", aligner, from_clock_domain="host-a",
                                   to_clock_domain="cuda:0", offset_ns=rng.randint(-9_999, 9_999),
                                   uncertainty_ns=rng.randint(0, 99), valid_from_ns=0, valid_to_ns=5_000))
        alignments.append(run.emit("infer.clock_alignment", aligner, from_clock_domain="host-a",
                                   to_clock_domain="cuda:0", offset_ns=rng.randint(-9_999, 9_999),
                                   uncertainty_ns=rng.randint(0, 99), valid_from_ns=rng.choice([4_000, 5_000])))
    for gap in rng.sample([40, 0, 7, -5, 2.5, True, None, "x"], k=rng.randint(0, 3)):
        metadata = {} if gap is None else {"gap_ns": gap}
        if rng.random() < 0.2:
            metadata["alignment_basis"] = "bracket"
        alignments.append(run.emit("infer.clock_alignment", rng.choice([legacy, legacy, aligner]), metadata=metadata,
                                   from_clock_domain="wall-a", to_clock_domain=f"legacy-{gap}",
                                   offset_ns=rng.randint(-999, 999), uncertainty_ns=rng.randint(0, 9)))

    # Re-reports of entities under other event IDs.
    for record in rng.sample(entities + alignments, k=min(len(entities + alignments), rng.randint(0, 3))):
        run.again(record)
    # Legacy v1 records take no part in the accounting.
    for i in range(rng.randint(0, 2)):
        run.records.append({"event_type": "infer.request", "request_id": f"v1-{i}", "latency_ms": 1.5})
        run.records.append({"schema_version": 1, "event_type": "infer.response", "status": 200})
    # Repeated deliveries, with values Python finds equal.
    repeats = []
    for record in rng.sample(run.records, k=len(run.records) // 6):
        again = copy.deepcopy(record)
        metadata = again.get("metadata")
        if isinstance(metadata, dict) and metadata.get("position") == 1:
            metadata["position"] = rng.choice([1, 1.0, True])
        repeats.append(again)
    run.records.extend(repeats)
    rng.shuffle(run.records)
    return run.records


write_v2 = _common.write_embedded
write_v4 = _common.write_compact


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def retag(value: Any, tag: str) -> Any:
    """Every producer and session renamed: one rank's producers are not another's."""
    if isinstance(value, list):
        return [retag(item, tag) for item in value]
    if isinstance(value, dict):
        return {
            key: item + tag if key in ("producer_id", "session_id") and isinstance(item, str) else retag(item, tag)
            for key, item in value.items()
        }
    return value
