"""Optimizers by name. A spec is one of:

- a built-in name: per-layer, fuse-all, greedy, dp, annealing;
- `package.module:Class` (importable);
- `path/to/file.py:Class` (a file loaded as a module);
- the name of an installed entry point in group `paleozoic.optimizers`, e.g. in a
  plug-in's pyproject.toml: [project.entry-points."paleozoic.optimizers"] my-sa = "pkg:MySA".

No mutable global state: the built-in table is a constant; entry points are looked up on
demand.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from paleozoic.errors import OptimizerError
from paleozoic.optimize.base import Optimizer

ENTRY_POINT_GROUP = "paleozoic.optimizers"

BUILTIN_OPTIMIZERS: Mapping[str, str] = MappingProxyType({
    "per-layer": "paleozoic.optimize.fixed:PerLayer",
    "fuse-all": "paleozoic.optimize.fixed:FuseAll",
    "greedy": "paleozoic.optimize.greedy:Greedy",
    "dp": "paleozoic.optimize.dp:DynamicProgramming",
    "annealing": "paleozoic.optimize.annealing:SimulatedAnnealing",
})


def entry_point_names() -> list[str]:
    return sorted(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def known_names() -> list[str]:
    return list(BUILTIN_OPTIMIZERS) + [n for n in entry_point_names()
                                       if n not in BUILTIN_OPTIMIZERS]


def _load_file(path: Path, spec: str) -> Any:
    name = f"paleozoic_user_optimizer_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise OptimizerError(f"{spec}: cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise OptimizerError(f"{spec}: importing {path} failed: "
                             f"{type(err).__name__}: {err}") from err
    return module


def _resolve_path(spec: str) -> Any:
    """`module:Class` or `file.py:Class` -> the class object."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise OptimizerError(f"{spec}: no such file {where}")
        module = _load_file(path, spec)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as err:
            raise OptimizerError(f"{spec}: cannot import module {where!r} ({err})") from err
    try:
        return getattr(module, attr)
    except AttributeError:
        raise OptimizerError(f"{spec}: module {where!r} has no attribute {attr!r}") from None


def optimizer_class(spec: str) -> type[Optimizer]:
    """The Optimizer subclass a spec names; OptimizerError listing the known names if none."""
    if spec in BUILTIN_OPTIMIZERS:
        found = _resolve_path(BUILTIN_OPTIMIZERS[spec])
    elif ":" in spec:
        found = _resolve_path(spec)
    else:
        points = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
                  if ep.name == spec]
        if not points:
            raise OptimizerError(
                f"unknown optimizer {spec!r}; known: {', '.join(known_names())} (or give "
                f"module:Class, path/to/file.py:Class, or install a plug-in with an entry "
                f"point in group {ENTRY_POINT_GROUP!r})")
        try:
            found = points[0].load()
        except Exception as err:
            raise OptimizerError(f"optimizer {spec!r}: loading entry point "
                                 f"{points[0].value!r} failed: {err}") from err
    if not (isinstance(found, type) and issubclass(found, Optimizer)):
        raise OptimizerError(f"{spec}: {found!r} is not a subclass of "
                             f"paleozoic.optimize.Optimizer")
    return found


def load_optimizer(spec: str, **kwargs: Any) -> Optimizer:
    """An optimizer instance from a spec; kwargs go to its constructor (seed, budget_s,
    options)."""
    cls = optimizer_class(spec)
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise OptimizerError(f"optimizer {spec!r}: {err}") from err
