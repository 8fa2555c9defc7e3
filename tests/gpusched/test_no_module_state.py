"""No module of ``gpusched`` keeps state: what the engine keeps between cycles lives in the
``EngineState`` its caller holds (gpusched/engine/state.py), and constant tables are immutable.

Every module-level value must be code (a module, class or function), a type annotation, or an
immutable constant: a number, string, bytes, ``None``, a path, a plain ``object()`` sentinel, an
``operator`` getter, or a tuple, frozenset, ``MappingProxyType`` or frozen dataclass made of
those. A list, dict, set, lock or any other object fails, so a cache or a lock at module level
cannot come back unnoticed.
"""

from __future__ import annotations

import dataclasses
import importlib
import operator
import pkgutil
import re
import threading
import types
import typing
from pathlib import PurePath

import pytest

import gpusched

SCALARS = (type(None), bool, int, float, complex, str, bytes, range, PurePath, re.Pattern)
CODE = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    operator.attrgetter,
    operator.itemgetter,
    operator.methodcaller,
    type(annotations),  # the __future__ feature every module imports
    typing.TypeVar,
    types.GenericAlias,
    types.UnionType,
)


def _modules() -> list[str]:
    found = pkgutil.walk_packages(gpusched.__path__, "gpusched.")
    return sorted(m.name for m in found if not m.name.endswith("__main__"))


def _immutable(value: object) -> bool:
    if isinstance(value, SCALARS + CODE) or type(value) is object:
        return True
    if type(value).__module__ == "typing":  # Callable[...], Literal[...], Any and the like
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(item) for item in value)
    if isinstance(value, types.MappingProxyType):
        return all(_immutable(k) and _immutable(v) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        frozen = type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
        fields = dataclasses.fields(value)
        return bool(frozen) and all(_immutable(getattr(value, f.name)) for f in fields)
    return False


def test_the_walk_finds_every_part_of_gpusched() -> None:
    names = _modules()
    assert {"gpusched.engine.cycle", "gpusched.sim.simulate", "gpusched.check.checker"} <= set(
        names
    )
    assert any(name.startswith("gpusched.sim.traces.") for name in names)


@pytest.mark.parametrize("name", _modules())
def test_the_module_keeps_no_mutable_state(name: str) -> None:
    module = importlib.import_module(name)
    mutable = sorted(
        f"{key} ({type(value).__name__})"
        for key, value in vars(module).items()
        if not (key.startswith("__") and key.endswith("__")) and not _immutable(value)
    )
    assert not mutable, f"{name} keeps module-level mutable state: {', '.join(mutable)}"


def test_the_check_catches_caches_and_locks() -> None:
    for value in ([], {}, set(), threading.Lock(), threading.RLock(), ({},), object.__new__(_Box)):
        assert not _immutable(value), value
    assert _immutable(types.MappingProxyType({"a": (1, frozenset({"b"}))}))


class _Box:
    pass
