"""Errors as Python raises them: every function that opens a path raises
the ``OSError`` subclass of its errno with ``errno``, ``strerror`` and
``filename``, as ``open`` does and as stormlog's functions (which call
``Path.open``) do."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import conftest as c
import tally
import tally.trace

# The functions stormlog has too: compared with stormlog's own error.
SHARED = ["load_inference_artifact", "read_inference_records", "iter_inference_events", "iter_inference_records"]


def call(side: c.Side, name: str, path) -> None:
    result = getattr(side, name)(path)
    if name.startswith("iter_"):
        list(result)


def shape(error: OSError) -> tuple:
    return (type(error), error.errno, error.strerror, error.filename, str(error))


@pytest.mark.parametrize("name", SHARED)
@pytest.mark.parametrize("kind", ["missing", "directory"])
@pytest.mark.parametrize("as_path", [False, True], ids=["str", "Path"])
def test_opening_errors_are_stormlogs(tmp_path, name, kind, as_path):
    path = tmp_path / "absent.jsonl" if kind == "missing" else tmp_path
    argument = path if as_path else str(path)
    with pytest.raises(OSError) as theirs:
        call(c.STORM, name, argument)
    with pytest.raises(OSError) as ours:
        call(c.TALLY, name, argument)
    assert shape(ours.value) == shape(theirs.value)
    expected = FileNotFoundError if kind == "missing" else IsADirectoryError
    assert type(ours.value) is expected


TALLY_ONLY = [
    ("account_paths", lambda path: c.TALLY.account_paths(path)),
    ("account_paths (a list)", lambda path: c.TALLY.account_paths([path])),
    ("import_trace", lambda path: tally.trace.import_trace(path)),
]


@pytest.mark.parametrize("name,function", TALLY_ONLY, ids=[name for name, _ in TALLY_ONLY])
def test_tallys_own_readers_raise_as_open_does(tmp_path, name, function):
    missing = tmp_path / "absent.json"
    with pytest.raises(FileNotFoundError) as raised:
        function(missing)
    assert raised.value.errno == errno.ENOENT
    assert raised.value.strerror == os.strerror(errno.ENOENT)
    assert raised.value.filename == str(missing)
    with pytest.raises(IsADirectoryError) as raised:
        function(tmp_path)
    assert raised.value.filename == str(tmp_path)


def test_writing_into_a_missing_folder_or_onto_a_folder(tmp_path):
    target = tmp_path / "no-such-folder" / "run.jsonl"
    with pytest.raises(FileNotFoundError) as raised:
        c.TALLY.write_inference_artifact(target, [])
    assert (raised.value.errno, raised.value.filename) == (errno.ENOENT, str(target))
    with pytest.raises(IsADirectoryError) as raised:
        c.TALLY.write_inference_artifact(tmp_path, [])
    assert raised.value.filename == str(tmp_path)
    assert not list(tmp_path.iterdir()), "nothing is left half-written"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may read a file whatever its mode, so no PermissionError")
def test_an_unreadable_file_is_a_permission_error(tmp_path):
    path = tmp_path / "locked.jsonl"
    path.write_text("")
    path.chmod(0)
    with pytest.raises(PermissionError) as theirs:
        c.STORM.load_inference_artifact(path)
    with pytest.raises(PermissionError) as ours:
        c.TALLY.load_inference_artifact(path)
    assert shape(ours.value) == shape(theirs.value)


def test_version_is_the_crates():
    cargo = Path(__file__).resolve().parents[3] / "Cargo.toml"
    text = cargo.read_text()
    workspace = text[text.index("[workspace.package]") :]
    version = workspace.split('version = "', 1)[1].split('"', 1)[0]
    assert tally.__version__ == version
    assert tally._native.__version__ == version
