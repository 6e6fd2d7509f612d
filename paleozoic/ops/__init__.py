"""The registry of layer kinds. Adding a kind: a LayerKind in its family module (listed in
the module's FAMILY; a new module is found by itself), a wrapper class in runtime_cpp, a
template in templates/layers/, a converter in the frontend (docs/adding-a-layer-kind.md)."""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType, ModuleType
from typing import Mapping

from paleozoic.ops.enums import CppEnum
from paleozoic.ops.kind import LayerKind, ShapeError


def _families() -> list[ModuleType]:
    """The family modules of this package (those that list their kinds in FAMILY), by name:
    a new family is one more module here, nothing to register."""
    modules = [importlib.import_module(f"{__name__}.{info.name}")
               for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    return sorted((m for m in modules if hasattr(m, "FAMILY")), key=lambda m: m.__name__)


_FAMILIES = _families()

# The family names, the one family map: the frontend's converters, the C++ layer headers and
# sources and the SDK's kernels are grouped under the same names (tests/test_layout.py).
FAMILIES: tuple[str, ...] = tuple(m.__name__.rpartition(".")[2] for m in _FAMILIES)

KINDS: Mapping[str, LayerKind] = MappingProxyType({
    kind.name: kind for family in _FAMILIES for kind in family.FAMILY
})

# The enumerated attributes of every family, in family order (the generated enums.h).
ENUMS: tuple[CppEnum, ...] = tuple(e for family in _FAMILIES for e in getattr(family, "ENUMS", ()))


def kind_of(op_type: str) -> LayerKind:
    try:
        return KINDS[op_type]
    except KeyError:
        raise KeyError(f"unknown layer kind {op_type!r}; known: {', '.join(KINDS)}") from None


__all__ = ["ENUMS", "FAMILIES", "KINDS", "LayerKind", "ShapeError", "kind_of"]
