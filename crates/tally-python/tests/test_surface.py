"""The package's public surface against stormlog's: every name stormlog's
three correlation modules export exists in ``tally.accounting`` (or is a
documented omission), functions take stormlog's parameters, every public
name has a docstring, and the type stubs name exactly what the native
module defines."""

import ast
import importlib
import inspect
import pathlib

import pytest

import tally
import tally._native as native
import tally.accounting as accounting

STORMLOG_MODULES = [
    "stormlog.infer.correlation_events",
    "stormlog.infer.correlation_codec",
    "stormlog.infer.correlation_accounting",
]

# docs/PARITY.md: stormlog's context registry is an implementation detail of
# its decoder and encoder; tally's decoder keeps its own.
OMITTED = {"ContextRegistry"}

STUB = pathlib.Path(tally.__file__).with_name("_native.pyi")


def stormlog_names():
    names = set()
    for module_name in STORMLOG_MODULES:
        module = importlib.import_module(module_name)
        names.update(module.__all__)
    return sorted(names)


@pytest.mark.parametrize("name", [name for name in stormlog_names() if name not in OMITTED])
def test_every_stormlog_name_is_offered(name):
    assert hasattr(accounting, name), f"tally.accounting lacks stormlog's {name}"
    assert name in accounting.__all__


def test_the_omissions_are_exactly_the_documented_ones():
    assert OMITTED <= set(stormlog_names())
    for name in OMITTED:
        assert not hasattr(accounting, name), f"{name} is offered now: drop it from OMITTED and docs/PARITY.md"
    assert "ContextRegistry" in pathlib.Path(__file__).parents[3].joinpath("docs/PARITY.md").read_text()


def stormlog_functions():
    found = []
    for module_name in STORMLOG_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value) and hasattr(accounting, name):
                found.append((name, value))
    return found


@pytest.mark.parametrize("name,reference", stormlog_functions(), ids=lambda item: item if isinstance(item, str) else "")
def test_functions_take_stormlogs_parameters(name, reference):
    ours = inspect.signature(getattr(accounting, name))
    theirs = inspect.signature(reference)
    shape = lambda signature: [(p.name, p.kind, p.default is inspect.Parameter.empty) for p in signature.parameters.values()]
    assert shape(ours) == shape(theirs), f"{name}{ours} != stormlog's {name}{theirs}"


@pytest.mark.parametrize("name", sorted(set(accounting.__all__) - {"InferenceRecord"}))
def test_every_public_name_has_a_docstring(name):
    value = getattr(accounting, name)
    if isinstance(value, int):
        return
    assert (value.__doc__ or "").strip(), f"tally.accounting.{name} has no docstring"
    if inspect.isclass(value):
        for attribute, member in vars(value).items():
            if attribute.startswith("_") or attribute == "EVENT_TYPE":
                continue
            assert (getattr(member, "__doc__", None) or "").strip(), f"{name}.{attribute} has no docstring"


def test_modules_have_docstrings():
    import tally.trace

    for module in (tally, accounting, tally.trace):
        assert (module.__doc__ or "").strip()
    assert (tally.trace.import_trace.__doc__ or "").strip()


def stub_names():
    tree = ast.parse(STUB.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names - {"_Path", "InferenceRecord"}


def test_the_stubs_name_what_the_module_defines():
    defined = {name for name in dir(native) if not name.startswith("_")}
    assert stub_names() == defined


def test_the_wheel_ships_its_type_information():
    package = pathlib.Path(tally.__file__).parent
    assert (package / "py.typed").exists()
    assert STUB.exists()


def test_classes_live_in_tally_accounting():
    for name in accounting.__all__:
        value = getattr(accounting, name)
        if inspect.isclass(value):
            assert value.__module__ == "tally.accounting", (name, value.__module__)


# tally.profiling against vertebrae.profiling.

import tally.profiling as profiling  # noqa: E402


def vertebrae_profiling_names():
    module = importlib.import_module("vertebrae.profiling")
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if getattr(value, "__module__", None) == module.__name__:
            names.add(name)
    names.add("ResourceProfileLike")
    names.add("ResourceProfilingConfig")
    return sorted(names)


@pytest.mark.parametrize("name", vertebrae_profiling_names())
def test_every_vertebrae_profiling_name_is_offered(name):
    assert hasattr(profiling, name), f"tally.profiling lacks vertebrae's {name}"
    assert name in profiling.__all__
    value = getattr(profiling, name)
    if inspect.isclass(value) or callable(value):
        assert (value.__doc__ or "").strip(), f"tally.profiling.{name} has no docstring"


@pytest.mark.parametrize(
    "name",
    [
        "resource_profile_columns",
        "resource_profile_from_dict",
        "distributed_resource_profile_from_dict",
        "resource_profile_like_from_dict",
        "with_embedding_footprint",
        "with_distributed_embedding_footprint",
        "aggregate_distributed_resource_profiles",
    ],
)
def test_profiling_functions_take_vertebraes_parameters(name):
    reference = getattr(importlib.import_module("vertebrae.profiling"), name)
    shape = lambda signature: [(p.name, p.kind, p.default is inspect.Parameter.empty) for p in signature.parameters.values()]
    assert shape(inspect.signature(getattr(profiling, name))) == shape(inspect.signature(reference))


def test_profiling_classes_live_in_tally_profiling():
    for name in profiling.__all__:
        value = getattr(profiling, name)
        if inspect.isclass(value):
            assert value.__module__ == "tally.profiling", (name, value.__module__)
