"""User programs written against stormlog and vertebrae run unchanged on
tally with only their import lines swapped (programs/README.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from generate import random_run, write_v4

PROGRAMS = Path(__file__).with_name("programs")

# The import lines a user changes, and nothing else.
SWAPS = [
    (re.compile(r"^from stormlog\.infer\.correlation_(events|codec|accounting) import", re.M), "from tally.accounting import"),
    (re.compile(r"^import stormlog\.infer\.correlation_(events|codec|accounting) as", re.M), "import tally.accounting as"),
    (re.compile(r"^from vertebrae\.profiling import", re.M), "from tally.profiling import"),
    (re.compile(r"^import vertebrae\.profiling as", re.M), "import tally.profiling as"),
]


def swap_imports(source: str) -> str:
    swapped = source
    for pattern, replacement in SWAPS:
        swapped = pattern.sub(replacement, swapped)

    return swapped


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    """One compact artifact, written by stormlog's own encoder."""
    return write_v4(tmp_path_factory.mktemp("programs") / "run.jsonl", random_run(11, size=120))


ARGUMENTS = {
    "variants.py": lambda artifact, out: [],
    "reencode.py": lambda artifact, out: [str(artifact), str(out)],
    "table.py": lambda artifact, out: [str(artifact)],
    "shares.py": lambda artifact, out: [str(artifact)],
    "align.py": lambda artifact, out: [str(out)],
    "profile.py": lambda artifact, out: [str(out)],
}


def test_every_program_has_its_arguments():
    assert sorted(ARGUMENTS) == sorted(path.name for path in PROGRAMS.glob("*.py"))


def run(script: Path, arguments: list[str], out: Path) -> tuple[int, str, dict[str, bytes], str]:
    completed = subprocess.run(
        [sys.executable, str(script), *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    files = {path.name: path.read_bytes() for path in sorted(out.iterdir())}
    stdout = completed.stdout.replace(str(out), "<out>")
    return completed.returncode, stdout, files, completed.stderr


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_the_program_runs_alike_on_tally(tmp_path, artifact, name):
    source = (PROGRAMS / name).read_text(encoding="utf-8")
    swapped = swap_imports(source)
    assert swapped != source, f"{name} imports neither peer"
    assert not re.search(r"^(from|import) (stormlog|vertebrae)", swapped, re.M)
    results = []
    for side, text in (("peer", source), ("tally", swapped)):
        folder = tmp_path / side
        out = folder / "out"
        out.mkdir(parents=True)
        script = folder / name
        script.write_text(text, encoding="utf-8")
        results.append(run(script, ARGUMENTS[name](artifact, out), out))
    (peer_code, peer_out, peer_files, peer_err), (code, out, files, err) = results
    assert peer_code == 0, f"the program fails on the peer itself:\n{peer_err}"
    assert code == peer_code, err
    assert out == peer_out, err
    assert files == peer_files
