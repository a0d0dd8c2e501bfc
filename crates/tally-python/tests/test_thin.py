"""The package's Python sources add no logic: they name what the native
module defines (imports, ``__all__``, aliases, docstrings) and nothing else,
so every rule stays in tally's Rust crates."""

import ast
import pathlib

import pytest

import tally

PACKAGE = pathlib.Path(tally.__file__).parent
# tally.dask orchestrates a Dask cluster (tasks, a tree of merges): it has
# functions, but calls no rule of its own, only tally.partials' (checked
# below).
ORCHESTRATION = PACKAGE / "dask.py"
SOURCES = sorted(path for path in PACKAGE.glob("*.py") if path != ORCHESTRATION)


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_python_sources_only_re_export(source):
    tree = ast.parse(source.read_text())
    allowed = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        assert docstring or isinstance(node, allowed), (
            f"{source.name}:{node.lineno}: {type(node).__name__} is logic; it belongs in the Rust crates"
        )
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            # Names and unions of names only (`InferenceRecord = A | B`).
            for inner in ast.walk(node.value):
                assert isinstance(inner, (ast.Name, ast.BinOp, ast.BitOr, ast.Load, ast.List, ast.Constant, ast.Tuple)), (
                    f"{source.name}:{node.lineno}: an assignment computes something"
                )


def test_there_are_sources_to_check():
    assert {path.name for path in SOURCES} >= {"__init__.py", "accounting.py", "trace.py"}


def test_orchestration_reaches_tally_only_through_partials():
    tree = ast.parse(ORCHESTRATION.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("tally")):
            names = {alias.name for alias in node.names}
            # tally.partials, and the result classes for annotations.
            assert names <= {"partials", "CorrelationGraph", "RunAccounting"}, (
                f"dask.py:{node.lineno}: imports {sorted(names)}"
            )
        if isinstance(node, ast.Import):
            assert not any(alias.name.startswith("tally") for alias in node.names), f"dask.py:{node.lineno}"
