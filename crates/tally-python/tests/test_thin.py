"""The package's Python sources add no logic: they name what the native
module defines (imports, ``__all__``, aliases, docstrings) and nothing else,
so every rule stays in tally's Rust crates."""

import ast
import pathlib

import pytest

import tally

SOURCES = sorted(pathlib.Path(tally.__file__).parent.glob("*.py"))


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
