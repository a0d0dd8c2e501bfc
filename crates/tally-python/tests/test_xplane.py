"""XPlane profiles (``*.xplane.pb``): tally's import against an independent
reading.

The files: real profiles the real JAX and TensorFlow profilers write here
(CPU only, made by the test itself), the real JAX profile of an AMD MI355
(tally-trace's fixture), and the synthetic NVIDIA profile written through
TensorFlow's generated proto (python/fixtures/make_xplane_fixtures.py).

The independent reading is python/fixtures/xplane_wire.py: the wire format
decoded by hand. It is itself checked against TensorFlow's ``xplane_pb2`` on
every file, and against the generator's own event list on the synthetic one.
``tally account --format json`` must give, per device, the reading's
activity count, summed and busy nanoseconds exactly; ``tally import`` and
``tally.trace.import_trace`` must link each GPU activity to the host
runtime call the reading links it to.
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import subprocess
import sys
from collections import Counter

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "crates" / "tally-trace" / "tests" / "fixtures" / "xplane"
sys.path.append(str(ROOT / "python" / "fixtures"))
import xplane_wire as wire  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SYNTHETIC = FIXTURES / "synthetic-nvidia-2gpu.xplane.pb"
FIXTURE_FILES = [
    FIXTURES / "jax-rocm_mi355_te-fused-attn.xplane.pb",
    SYNTHETIC,
    FIXTURES / "synthetic-nvidia-2gpu.xplane.pb.gz",
]

# A small jitted computation under jax.profiler.trace, and a tf.function
# under tf.profiler.experimental, three steps each annotated "train_step"
# (as JAX and TensorFlow users mark steps): argv[1] is the log folder.
JAX_PROFILE = """
import sys
import jax, jax.numpy as jnp
@jax.jit
def step(x, w):
    return jnp.tanh(x @ w).sum()
x = jnp.ones((64, 64)); w = jnp.full((64, 64), 0.01)
step(x, w).block_until_ready()
with jax.profiler.trace(sys.argv[1]):
    for i in range(3):
        with jax.profiler.StepTraceAnnotation("train_step", step_num=i):
            step(x, w).block_until_ready()
"""
TF_PROFILE = """
import sys
import tensorflow as tf
@tf.function
def step(x, w):
    return tf.reduce_sum(tf.tanh(tf.matmul(x, w)))
x = tf.ones((64, 64)); w = tf.fill((64, 64), 0.01)
step(x, w)
tf.profiler.experimental.start(sys.argv[1])
for i in range(3):
    with tf.profiler.experimental.Trace("train_step", step_num=i, _r=1):
        step(x, w).numpy()
tf.profiler.experimental.stop()
"""


# xprof's trace-viewer conversion of one XPlane file (argv[1]), in a process
# of its own (its native library next to no TensorFlow): every X event of a
# GPU plane's "Stream #" thread as [start_ns, end_ns], from the JSON's
# decimal microseconds (printed to the picosecond), floored, with its
# correlation_id (0 where none).
XPROF_SPANS = """
import json, math, sys
from decimal import Decimal
from xprof.convert import raw_to_tool_data
data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], 'trace_viewer', {'use_saved_result': False})
doc = json.loads(data, parse_float=Decimal)
names = {}
for e in doc['traceEvents']:
    if e.get('ph') == 'M' and e['name'] in ('process_name', 'thread_name'):
        names[(e['pid'], e.get('tid') if e['name'] == 'thread_name' else None)] = e['args']['name']
spans = {}
for e in doc['traceEvents']:
    plane, line = names.get((e.get('pid'), None), ''), names.get((e.get('pid'), e.get('tid')), '')
    if e.get('ph') == 'X' and plane.startswith('/device:GPU:') and line.startswith('Stream #'):
        start = Decimal(e['ts']) * 1000
        end = (Decimal(e['ts']) + Decimal(e.get('dur', 0))) * 1000
        correlation = int(e.get('args', {}).get('correlation_id', 0))
        spans.setdefault(plane, []).append([math.floor(start), math.floor(end), correlation])
print(json.dumps({plane: sorted(found) for plane, found in spans.items()}))
"""


def tally_bin() -> pathlib.Path:
    """The command under test: TALLY_BIN (what `cargo xtask test` sets),
    else a built one; skips with the reason where none is built."""
    candidates = [os.environ.get("TALLY_BIN"), ROOT / "target" / "debug" / "tally", ROOT / "target" / "release" / "tally"]
    found = next((pathlib.Path(c) for c in candidates if c and pathlib.Path(c).exists()), None)
    if found is None:
        pytest.skip("no tally binary is built (TALLY_BIN, target/debug, target/release)")
    return found


def tally(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(tally_bin()), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def real_profiles(tmp_path_factory) -> dict[str, pathlib.Path]:
    """One profile from each real profiler, written where they write them:
    ``<logdir>/plugins/profile/<run>/<host>.xplane.pb``."""
    made = {}
    for name, script in (("jax", JAX_PROFILE), ("tensorflow", TF_PROFILE)):
        logdir = tmp_path_factory.mktemp(f"{name}-profile")
        run = subprocess.run([sys.executable, "-c", script, str(logdir)], capture_output=True, text=True)
        assert run.returncode == 0, f"{name} profiler run failed:\n{run.stderr[-3000:]}"
        files = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
        assert len(files) == 1, f"{name} wrote {files} under {logdir}"
        made[name] = files[0]
    return made


@pytest.fixture(params=["jax", "tensorflow", *FIXTURE_FILES], ids=lambda p: p if isinstance(p, str) else p.name)
def profile(request, real_profiles) -> pathlib.Path:
    """Every file: the real profilers' (by name) and the fixtures."""
    return real_profiles[request.param] if isinstance(request.param, str) else request.param


@pytest.fixture(params=FIXTURE_FILES, ids=lambda p: p.name)
def gpu_profile(request) -> pathlib.Path:
    return request.param


@pytest.fixture(params=["jax", "tensorflow"])
def host_profile(request, real_profiles) -> pathlib.Path:
    return real_profiles[request.param]


# --------------------------------------------------------------------------
# The oracle checked


def proto_planes(path: pathlib.Path) -> list[wire.Plane]:
    """The same planes read through TensorFlow's generated proto."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    space = xplane_pb2.XSpace.FromString(data)
    planes = []
    for plane in space.planes:
        names = {key: meta.name for key, meta in plane.stat_metadata.items()}

        def stat(s) -> tuple[str, object]:
            which = s.WhichOneof("value")
            value = getattr(s, which) if which else None
            if which == "ref_value":
                value = names.get(value, "")
            return names.get(s.metadata_id, f"#{s.metadata_id}"), value

        result = wire.Plane(plane.id, plane.name, stats=dict(stat(s) for s in plane.stats))
        for line in plane.lines:
            events = []
            for event in line.events:
                meta = plane.event_metadata.get(event.metadata_id)
                meta_stats = dict(stat(s) for s in meta.stats) if meta is not None else {}
                events.append(wire.Event(meta.name if meta is not None else "", event.offset_ps, event.duration_ps,
                                         {**meta_stats, **dict(stat(s) for s in event.stats)}))
            result.lines.append(wire.Line(line.id, line.name, line.timestamp_ns, events))
        planes.append(result)
    return planes


def test_the_wire_reading_equals_tensorflows_proto(profile):
    assert wire.read_space(profile) == proto_planes(profile)


def test_the_synthetic_file_holds_what_its_generator_meant():
    import make_xplane_fixtures as maker

    expected = json.loads((FIXTURES / "synthetic-nvidia-2gpu.expected.json").read_text())
    # The committed expectation is the generator's, and the committed file
    # is the message the generator builds.
    assert expected == json.loads(json.dumps(maker.expected()))
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    assert xplane_pb2.XSpace.FromString(SYNTHETIC.read_bytes()) == maker.space()
    planes = wire.read_space(SYNTHETIC)
    assert wire.gpu_figures(planes) == expected["devices"]
    assert [list(link) for link in wire.launch_links(planes)] == expected["launch_links"]
    assert wire.host_event_count(planes) == expected["host_events"]
    assert len(wire.host_calls(planes)) == expected["runtime_calls"]
    # What the file is for: several copy kinds, a memset, overlap, a graph
    # launch of two kernels (one activity).
    gpu0 = expected["devices"]["/device:GPU:0"]
    assert gpu0["copy"] >= 5 and gpu0["set"] == 1 and gpu0["busy_ns"] < gpu0["summed_ns"]
    assert gpu0["count"] == gpu0["events"] - 1
    assert Counter(call for _, call in wire.launch_links(planes))["cudaGraphLaunch"] == 1


# --------------------------------------------------------------------------
# tally against the reading


def account_json(path: pathlib.Path) -> dict:
    run = tally("account", "--format", "json", str(path))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def device_rows(report: dict) -> list[tuple[int, int, int]]:
    return sorted((row["activity_count"], row["summed_activity_ns"], row["busy_ns"]) for row in report["device_totals"])


def reading_rows(planes: list[wire.Plane]) -> list[tuple[int, int, int]]:
    return sorted((row["count"], row["summed_ns"], row["busy_ns"]) for row in wire.gpu_figures(planes).values())


def imported(path: pathlib.Path, tmp_path: pathlib.Path) -> tuple[list[dict], str]:
    """``tally import``'s records and its summary."""
    out = tmp_path / f"{path.name}.jsonl"
    run = tally("import", str(path), "-o", str(out), "--format", "v2")
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()], run.stderr


def gpu_activity_records(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("event_type") == "infer.activity_ref" and r.get("activity_domain") == "gpu"]


KINDS = {"gpu_kernel": "kernel", "gpu_memcpy": "copy", "gpu_memset": "set"}


def test_account_per_device_equals_the_reading(gpu_profile):
    planes = wire.read_space(gpu_profile)
    expected = reading_rows(planes)
    assert expected, "the file has GPU activity"
    assert device_rows(account_json(gpu_profile)) == expected


def test_import_links_and_kinds_equal_the_reading(gpu_profile, tmp_path):
    planes = wire.read_space(gpu_profile)
    records, summary = imported(gpu_profile, tmp_path)
    gpu = gpu_activity_records(records)
    groups = wire.activities(planes, wire.epoch_start(planes))
    assert len(gpu) == len(groups)
    assert f"{sum(g['events'] for g in groups)} GPU events" in summary, summary
    assert f"{len(wire.host_calls(planes))} runtime calls" in summary, summary
    kinds = Counter()
    for record in gpu:
        kinds[KINDS.get(record["activity_kind"], record["activity_kind"])] += record["metadata"]["event_count"]
    expected_kinds = Counter()
    for group in groups:
        expected_kinds[group["kind"]] += group["events"]
    assert kinds == expected_kinds
    links = sorted((r["cuda_correlation_id"], r["metadata"]["launch_api"]) for r in gpu if "launch_api" in r["metadata"])
    assert links == wire.launch_links(planes)
    # Every activity's span is the reading's (start and end floored alike,
    # relative lines moved onto the epoch), and its summed nanoseconds.
    assert sorted((r["start_ns"], r["end_ns"], r["metadata"]["summed_duration_ns"]) for r in gpu) == sorted(
        (g["start"], g["end"], g["summed_ns"]) for g in groups)


def test_python_import_trace_equals_the_reading(gpu_profile):
    import tally.trace

    planes = wire.read_space(gpu_profile)
    records = tally.trace.import_trace(gpu_profile)
    gpu = [r for r in records if getattr(r, "activity_domain", None) == "gpu"]
    groups = wire.activities(planes, wire.epoch_start(planes))
    assert sorted((r.start_ns, r.end_ns) for r in gpu) == sorted((g["start"], g["end"]) for g in groups)
    calls = wire.host_calls(planes)
    linked = sorted(r.cuda_correlation_id for r in gpu if r.cuda_correlation_id in calls)
    assert linked == [correlation for correlation, _ in wire.launch_links(planes)]


def test_breakdown_reads_the_profile(gpu_profile):
    run = tally("breakdown", str(gpu_profile))
    assert run.returncode == 0, run.stderr
    assert "no measured GPU activity" not in run.stdout


# --------------------------------------------------------------------------
# Real CPU-only profiles: host planes, no GPU plane


STEP = "^train_step$"


def host_steps(planes: list[wire.Plane]) -> list[tuple[int, int]]:
    """The reading's host spans named train_step, on the epoch."""
    epoch = wire.epoch_start(planes)
    return sorted(wire.span_ns(event, line, epoch) for plane in planes if plane.name == wire.HOST_PLANE
                  for line in plane.lines for event in line.events if event.name == "train_step")


def test_a_profile_without_a_gpu_plane_says_so(host_profile, tmp_path):
    planes = wire.read_space(host_profile)
    assert not wire.gpu_figures(planes) and wire.host_event_count(planes) > 0
    # As `tally account` does for any run with no GPU activity: success,
    # no device rows, and the reason said.
    run = tally("account", str(host_profile))
    assert run.returncode == 0, run.stderr
    assert "no measured GPU activity" in run.stdout
    assert "no GPU plane" in run.stderr, run.stderr
    assert account_json(host_profile)["device_totals"] == []
    records, summary = imported(host_profile, tmp_path)
    assert "0 GPU events" in summary and "no GPU plane" in summary, summary
    assert gpu_activity_records(records) == []
    breakdown = tally("breakdown", str(host_profile))
    assert breakdown.returncode == 0, breakdown.stderr
    assert "no measured GPU activity" in breakdown.stdout
    assert "no GPU plane" in breakdown.stderr, breakdown.stderr


def test_the_host_planes_steps_are_its_iterations(host_profile, tmp_path):
    """The host plane read for real: its annotated steps, as iterations,
    at the reading's nanoseconds."""
    steps = host_steps(wire.read_space(host_profile))
    assert len(steps) == 3
    out = tmp_path / "steps.jsonl"
    run = tally("import", str(host_profile), "--iteration-pattern", STEP, "-o", str(out), "--format", "v2")
    assert run.returncode == 0, run.stderr
    assert "3 iterations" in run.stderr, run.stderr
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    iterations = sorted((r["start_ns"], r["end_ns"]) for r in records if r.get("event_type") == "infer.iteration")
    assert iterations == steps
    report = tally("account", "--format", "json", "--iteration-pattern", STEP, str(host_profile))
    assert report.returncode == 0, report.stderr
    elapsed = sorted(row["elapsed_ns"] for row in json.loads(report.stdout)["iterations"])
    assert elapsed == sorted(end - start for start, end in steps)


def test_python_import_of_a_host_only_profile(host_profile):
    import tally.trace

    records = tally.trace.import_trace(host_profile)
    assert not [r for r in records if getattr(r, "activity_domain", None) == "gpu"]


# --------------------------------------------------------------------------
# xprof (TensorBoard's profile plugin) on the same files


def test_xprofs_trace_viewer_agrees_on_the_kernels_times(gpu_profile, tmp_path):
    check = subprocess.run([sys.executable, "-c", "import xprof.convert.raw_to_tool_data"], capture_output=True, text=True)
    if check.returncode != 0:
        pytest.skip(f"xprof is not importable (python/requirements.txt installs it): {check.stderr.strip().splitlines()[-1:]}")
    source = gpu_profile
    if gpu_profile.suffix == ".gz":
        # xprof reads plain XSpace files only.
        source = tmp_path / gpu_profile.name.removesuffix(".gz")
        source.write_bytes(gzip.decompress(gpu_profile.read_bytes()))
    run = subprocess.run([sys.executable, "-c", XPROF_SPANS, str(source)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    xprof = json.loads(run.stdout)
    planes = wire.read_space(gpu_profile)
    reading: dict[str, list[tuple[int, int, int]]] = {}
    for plane, line, event in wire.gpu_activities(planes):
        reading.setdefault(plane.name, []).append((*wire.span_ns(event, line), wire.correlation_of(event)))
    # xprof shows the times as the lines hold them (relative to the
    # profile's start where the profiler made them so): the reading's
    # events, not moved onto the epoch.
    assert {plane: [tuple(event) for event in events] for plane, events in xprof.items()} == {
        plane: sorted(events) for plane, events in reading.items()}
    # tally's activities: xprof's events grouped by launch (one GPU, one
    # correlation id; none of these files shares one across kinds), moved
    # onto the epoch by the profile's start where the lines are relative.
    epoch = wire.epoch_start(planes)
    shifts = {wire.span_ns(event, line, epoch)[0] - wire.span_ns(event, line)[0]
              for _, line, event in wire.gpu_activities(planes)}
    assert len(shifts) == 1, shifts
    shift = shifts.pop()
    launches: dict[tuple, list[int]] = {}
    for plane, events in xprof.items():
        for serial, (start, end, correlation) in enumerate(events):
            key = (plane, correlation) if correlation else (plane, "alone", serial)
            found = launches.setdefault(key, [start, end])
            found[0], found[1] = min(found[0], start), max(found[1], end)
    records, _ = imported(gpu_profile, tmp_path)
    assert sorted((r["start_ns"], r["end_ns"]) for r in gpu_activity_records(records)) == sorted(
        (start + shift, end + shift) for start, end in launches.values())
