"""The package's public surface against stormlog's: every name stormlog's
three correlation modules export exists in ``tally.accounting`` (or is a
documented omission), functions take stormlog's parameters, every public
name has a docstring, and the type stubs name exactly what the native
module defines."""

import ast
import dataclasses
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

# docs/PARITY.md: names stormlog exports that tally does not offer (none).
OMITTED: set[str] = set()

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


def stormlog_exports():
    """``(name, value)`` of every name stormlog's three modules export."""
    for module_name in STORMLOG_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            yield name, getattr(module, name)


def stormlog_functions():
    found = []
    for name, value in stormlog_exports():
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
    return {name for name in names if not name.startswith("_")} - {"InferenceRecord"}


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


# --------------------------------------------------------------------------
# Every public member of every public class, walked live.
#
# The names above are the modules'; a user's code also calls the classes'
# methods and reads their properties and attributes. The walk below takes
# every public class of stormlog's three modules and of vertebrae.profiling,
# and every public member of each (methods with their parameters and
# defaults, properties, class attributes), and requires tally's class to
# have it alike. What differs on purpose is docs/PARITY.md's "Surface
# differences" table, each row with its reason; a row that no longer
# differs fails too, so the table stays true.

PARITY = pathlib.Path(__file__).parents[3] / "docs" / "PARITY.md"


def surface_differences() -> set[str]:
    text = PARITY.read_text()
    section = text.split("### Surface differences", 1)[1].split("\n#", 1)[0]
    rows = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            rows.add(line.split("`", 2)[1])
    return rows


def peer_classes():
    found = [("tally.accounting", name, value) for name, value in stormlog_exports() if inspect.isclass(value)]
    vertebrae = importlib.import_module("vertebrae.profiling")
    for name, value in sorted(vars(vertebrae).items()):
        if inspect.isclass(value) and value.__module__ == vertebrae.__name__ and not name.startswith("_"):
            found.append(("tally.profiling", name, value))
    return found


def public_members(cls) -> dict[str, object]:
    """Public members a user reaches on the class, from the class's own MRO
    below ``object`` (inherited ones included, as a user sees them)."""
    members = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name, value in vars(klass).items():
            if not name.startswith("_"):
                members[name] = value
    if dataclasses.is_dataclass(cls):
        for field in dataclasses.fields(cls):
            members.pop(field.name, None)
    return members


def parameters(callable_) -> list[tuple] | None:
    try:
        signature = inspect.signature(callable_)
    except (TypeError, ValueError):
        return None
    shape = []
    for index, parameter in enumerate(signature.parameters.values()):
        if index == 0 and parameter.name == "self":
            # A native method's `self` is positional-only; nobody passes it
            # by name, so the kinds need not agree.
            shape.append(("self",))
            continue
        default = parameter.default
        if default is not inspect.Parameter.empty and not isinstance(default, (int, float, str, bool, type(None))):
            default = type(default).__name__
        shape.append((parameter.name, parameter.kind, default))
    return shape


def member_kind(value) -> str:
    if isinstance(value, (staticmethod, classmethod)):
        return "method"
    if isinstance(value, property) or inspect.isgetsetdescriptor(value) or inspect.ismemberdescriptor(value):
        return "property"
    if callable(value):
        return "method"
    return "attribute"


def surface_mismatches() -> list[str]:
    mismatches = []
    for module_name, name, peer in peer_classes():
        ours = getattr(importlib.import_module(module_name), name, None)
        if ours is None:
            continue  # the module-level tests above name it
        if issubclass(peer, BaseException):
            peer_bases = [base.__name__ for base in peer.__mro__]
            our_bases = [base.__name__ for base in ours.__mro__]
            if peer_bases != our_bases:
                mismatches.append(f"{name}.__mro__")
        theirs = public_members(peer)
        mine = {member: getattr(ours, member) for member in dir(ours) if not member.startswith("_")}
        for member, value in theirs.items():
            key = f"{name}.{member}"
            if member not in mine:
                mismatches.append(key)
                continue
            peer_kind = member_kind(value)
            our_value = inspect.getattr_static(ours, member, mine[member])
            if peer_kind != member_kind(our_value):
                mismatches.append(key)
            elif peer_kind == "method":
                peer_callable = getattr(peer, member)
                if parameters(peer_callable) != parameters(mine[member]):
                    mismatches.append(key)
            elif peer_kind == "attribute" and value != mine[member]:
                mismatches.append(key)
        if dataclasses.is_dataclass(peer) and not dataclasses.is_dataclass(ours):
            mismatches.append(f"{name}.__dataclass_fields__")
        peer_init = parameters(peer) if not dataclasses.is_dataclass(peer) else None
        if peer_init is not None and parameters(ours) is not None and peer_init != parameters(ours):
            mismatches.append(f"{name}.__init__")
    return mismatches


def test_every_public_member_of_every_class_is_offered_alike():
    differences = surface_differences()
    mismatches = set(surface_mismatches())
    unexplained = sorted(mismatches - differences)
    stale = sorted(differences - mismatches)
    assert not unexplained, f"differ from the peers and are not in docs/PARITY.md's table: {unexplained}"
    assert not stale, f"docs/PARITY.md's surface table lists what no longer differs: {stale}"
