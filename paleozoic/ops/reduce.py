"""Reductions over any set of axes: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd
(ONNX's ReduceSumSquare, ReduceL2, ReduceLogSumExp and ReduceL1 are these after a Unary or a
Binary, as TVM writes them)."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.enums import CppEnum
from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, elements

# No SDK enum: pz::ReduceLayer picks the SDK op (NdReduceSum, NdReduceMean, ...) from it.
REDUCE_OPS = CppEnum.of("Reduce", "reduction", "sum", "mean", "max", "min", "prod")


@dataclass(frozen=True)
class ReduceAttrs:
    op: str                          # one of REDUCE_OPS
    axes: tuple[int, ...]            # non-negative, ascending, at least one
    keepdims: bool = True            # reduced axes kept as 1s (else dropped)


def reduce_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    op, axes = attrs["op"], [int(a) for a in attrs["axes"]]
    if op not in REDUCE_OPS:
        raise ShapeError(f"reduction {op!r} is not one of {REDUCE_OPS.values}")
    if not axes or axes != sorted(set(axes)) or not all(0 <= a < len(x) for a in axes):
        raise ShapeError(f"Reduce axes {axes} must be distinct, ascending and within the "
                         f"{len(x)}-D input {x}")
    if attrs["keepdims"]:
        return tuple(1 if i in axes else d for i, d in enumerate(x))
    out = tuple(d for i, d in enumerate(x) if i not in axes)
    if not out:
        raise ShapeError(f"Reduce over every axis of {x} without keepdims is a 0-d tensor; a "
                         f"session's tensors have at least one axis")
    return out


def reduce_ops(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    return elements(inputs[0])


# One SDK op over all the reduced axes (not one per axis): one pass, one rounding, and the
# sum of a long row accumulated in double.
REDUCE = LayerKind(name="Reduce", shape=reduce_shape, macs=reduce_ops, attrs=ReduceAttrs)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (REDUCE,)
# The enums of this family, written into runtime_cpp/include/paleozoic/enums.h.
ENUMS = (REDUCE_OPS,)
