"""Data-movement layers: Concat (of activations, or with a constant operand), Reshape,
Transpose, Slice, Gather (embeddings)."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.dense import AxisAttrs
from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, reshaped


@dataclass(frozen=True)
class ReshapeAttrs:
    shape: tuple[int, ...]


@dataclass(frozen=True)
class TransposeAttrs:
    perm: tuple[int, ...]


@dataclass(frozen=True)
class SliceAttrs:
    begin: tuple[int, ...]           # one per input axis
    end: tuple[int, ...]
    step: tuple[int, ...]


@dataclass(frozen=True)
class ConcatConstantAttrs:
    axis: int                        # non-negative
    constant_shape: tuple[int, ...]  # the constant operand (weight "constant")
    constant_at: int = 0             # its place: before input i (len(inputs): last)


@dataclass(frozen=True)
class GatherAttrs:
    table_shape: tuple[int, ...]     # the constant table (weight "table")
    axis: int = 0                    # gathered axis of the table, 0..3 (cnmlDimension_t)


def gather_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    """table[:axis] + indices + table[axis+1:] (numpy's take)."""
    (indices,) = inputs
    table, axis = tuple(attrs["table_shape"]), attrs["axis"]
    if not 0 <= axis < min(len(table), 4):
        raise ShapeError(f"Gather axis {axis} of a {len(table)}-D table; the SDK's GatherV2 "
                         f"takes axes 0..3")
    return table[:axis] + tuple(indices) + table[axis + 1:]


def concat_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    axis = attrs["axis"]
    first = inputs[0]
    if not 0 <= axis < len(first):
        raise ShapeError(f"Concat axis {axis} is outside a {len(first)}-D input")
    for other in inputs[1:]:
        if len(other) != len(first) or any(
                a != b for i, (a, b) in enumerate(zip(first, other)) if i != axis):
            raise ShapeError(f"Concat inputs {first} and {other} differ off axis {axis}")
    return first[:axis] + (sum(s[axis] for s in inputs),) + first[axis + 1:]


def concat_constant_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    at = attrs["constant_at"]
    if not 0 <= at <= len(inputs):
        raise ShapeError(f"ConcatConstant: the constant's place {at} is outside "
                         f"0..{len(inputs)}")
    shapes = list(inputs)
    shapes.insert(at, tuple(attrs["constant_shape"]))
    return concat_shape(attrs, shapes)


def reshape_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    return reshaped("Reshape", x, tuple(attrs["shape"]))


def transpose_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    perm = tuple(attrs["perm"])
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"Transpose perm {perm} is not a permutation of {len(x)} axes")
    return tuple(x[p] for p in perm)


def slice_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    """x[begin:end:step] along every axis; the frontend has normalised the indices."""
    (x,) = inputs
    begin, end, step = (tuple(int(v) for v in attrs[key]) for key in ("begin", "end", "step"))
    if not len(begin) == len(end) == len(step) == len(x):
        raise ShapeError(f"Slice needs one begin, end and step per axis of {x}, got begin "
                         f"{begin}, end {end}, step {step}")
    out = []
    for axis, (dim, b, e, s) in enumerate(zip(x, begin, end, step)):
        if s < 1 or not 0 <= b < e <= dim:
            raise ShapeError(f"Slice of axis {axis} (size {dim}) from {b} to {e} step {s} is "
                             f"out of range or empty; need 0 <= begin < end <= size, step >= 1")
        out.append(-(-(e - b) // s))
    return tuple(out)


CONCAT = LayerKind(name="Concat", shape=concat_shape, arity=None, attrs=AxisAttrs)
# A concat with one constant operand (ViT's class token expanded over the batch): the SDK's
# concat reads it as a CNML_CONST tensor, so it needs no layer of its own.
CONCAT_CONSTANT = LayerKind(name="ConcatConstant", cpp_class="pz::ConcatLayer",
                            shape=concat_constant_shape, arity=None, weight_roles=("constant",),
                            attrs=ConcatConstantAttrs)
RESHAPE = LayerKind(name="Reshape", shape=reshape_shape, attrs=ReshapeAttrs)
TRANSPOSE = LayerKind(name="Transpose", shape=transpose_shape, attrs=TransposeAttrs)
# attrs {"begin": [...], "end": [...], "step": [...]}: one int per input axis.
SLICE = LayerKind(name="Slice", shape=slice_shape, attrs=SliceAttrs)

# Rows of a constant table by int32 indices (the SDK's GatherV2): embeddings. The indices are
# an integer tensor (a host cast makes int32 of int64 token ids).
GATHER = LayerKind(name="Gather", cpp_class="pz::GatherV2Layer", template="gather_v2",
                   binding="gather_v2", shape=gather_shape, weight_roles=("table",),
                   attrs=GatherAttrs, index_inputs=(0,))

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (CONCAT, CONCAT_CONSTANT, RESHAPE, TRANSPOSE, SLICE, GATHER)
