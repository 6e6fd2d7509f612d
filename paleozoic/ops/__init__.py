"""The registry of layer kinds. Adding a kind: a LayerKind in its family module (listed in
the module's FAMILY), a wrapper class in runtime_cpp, a template in templates/layers/, a
converter in the frontend (docs/adding-a-layer-kind.md)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from paleozoic.ops import conv, dense, elementwise, interp, layout, normalize, pool
from paleozoic.ops.kind import LayerKind, ShapeError

# A family module lists its kinds in FAMILY, so adding a kind to a family edits that module
# alone; a new family is one more module in this tuple.
_FAMILIES = (conv, dense, elementwise, interp, layout, normalize, pool)

KINDS: Mapping[str, LayerKind] = MappingProxyType({
    kind.name: kind for family in _FAMILIES for kind in family.FAMILY
})


def kind_of(op_type: str) -> LayerKind:
    try:
        return KINDS[op_type]
    except KeyError:
        raise KeyError(f"unknown layer kind {op_type!r}; known: {', '.join(KINDS)}") from None


__all__ = ["KINDS", "LayerKind", "ShapeError", "kind_of"]
