"""The registry of layer kinds. Adding a kind: a LayerKind here, a wrapper class and mock
kernel in runtime_cpp, a template in templates/layers/, a converter in the frontend."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from paleozoic.ops.conv import CONV, DECONV
from paleozoic.ops.dense import FULLY_CONNECTED, SOFTMAX
from paleozoic.ops.elementwise import ACTIVE, ADD, BINARY, PRELU
from paleozoic.ops.interp import INTERP
from paleozoic.ops.kind import LayerKind, ShapeError
from paleozoic.ops.layout import CONCAT, RESHAPE, SLICE, TRANSPOSE
from paleozoic.ops.normalize import BATCH_NORM, LRN, SCALE
from paleozoic.ops.pool import GLOBAL_AVG_POOL, POOL

KINDS: Mapping[str, LayerKind] = MappingProxyType({
    kind.name: kind for kind in (
        CONV, POOL, GLOBAL_AVG_POOL, LRN, BATCH_NORM, SCALE, ACTIVE, ADD,
        FULLY_CONNECTED, SOFTMAX, CONCAT, RESHAPE, TRANSPOSE, BINARY, SLICE, PRELU,
        DECONV, INTERP,
    )
})


def kind_of(op_type: str) -> LayerKind:
    try:
        return KINDS[op_type]
    except KeyError:
        raise KeyError(f"unknown layer kind {op_type!r}; known: {', '.join(KINDS)}") from None


__all__ = ["KINDS", "LayerKind", "ShapeError", "kind_of"]
