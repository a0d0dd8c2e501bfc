"""Profile a callable with the resource profiler and store the profile's dict."""

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

from vertebrae.profiling import (
    ResourceProfiler,
    ResourceProfilingConfig,
    resource_profile_from_dict,
    with_embedding_footprint,
)


def shape_of(value):
    """The profile's structure: keys and value types, not the measured numbers."""
    if isinstance(value, dict):
        return {key: shape_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape_of(item) for item in value[:1]]
    return type(value).__name__


def main(out_dir: str) -> int:
    weights = np.arange(64, dtype=np.float32).reshape(8, 8)
    extractor = lambda batch: batch @ weights  # noqa: E731
    profiler = ResourceProfiler(ResourceProfilingConfig(), extractor, streaming=False, context={"model": "toy"})
    batch = np.ones((4, 8), dtype=np.float32)
    outputs = [profiler.measure_call(lambda: extractor(batch), samples=4, call_type="transform") for _ in range(3)]
    print(all(np.array_equal(out, outputs[0]) for out in outputs))
    profile = profiler.finish()
    print(profile.status, profile.inference.calls if hasattr(profile.inference, "calls") else "")
    stored = dataclasses.asdict(profile)
    print(json.dumps(shape_of(stored), sort_keys=True))
    (Path(out_dir) / "profile.json").write_text(json.dumps(shape_of(stored), sort_keys=True), encoding="utf-8")
    print(resource_profile_from_dict(stored) == profile)
    raw = np.zeros((10, 8), dtype=np.float32)
    evaluated = np.zeros((10, 4), dtype=np.float16)
    first = with_embedding_footprint(profile, raw, evaluated)
    second = with_embedding_footprint(profile, raw, evaluated[:, :2])
    print(first.inference is profile.inference, second.inference is first.inference)
    print(first.embedding.raw_bytes, first.embedding.evaluated_bytes, second.embedding.bytes_per_embedding)
    print(profile.embedding is None, first.warnings)
    try:
        profile.status = "changed"
        print("assigned")
    except dataclasses.FrozenInstanceError:
        print("frozen")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
