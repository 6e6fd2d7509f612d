"""Data-movement layers: Concat, Reshape, Transpose."""

from __future__ import annotations

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, elements


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


def reshape_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    shape = tuple(attrs["shape"])
    if elements(shape) != elements(x):
        raise ShapeError(f"Reshape from {x} to {shape} changes the element count")
    return shape


def transpose_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    perm = tuple(attrs["perm"])
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"Transpose perm {perm} is not a permutation of {len(x)} axes")
    return tuple(x[p] for p in perm)


CONCAT = LayerKind(name="Concat", cpp_class="pz::ConcatLayer", template="concat",
                   binding="concat", shape=concat_shape, arity=None)
RESHAPE = LayerKind(name="Reshape", cpp_class="pz::ReshapeLayer", template="reshape",
                    binding="reshape", shape=reshape_shape)
TRANSPOSE = LayerKind(name="Transpose", cpp_class="pz::TransposeLayer",
                      template="transpose", binding="transpose", shape=transpose_shape)
