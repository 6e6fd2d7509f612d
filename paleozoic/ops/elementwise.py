"""Activations and element-wise sums."""

from __future__ import annotations

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError

ACTIVATIONS = ("relu", "sigmoid", "tanh", "relu6")


def active_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    if attrs["function"] not in ACTIVATIONS:
        raise ShapeError(f"activation {attrs['function']!r} is not one of {ACTIVATIONS}")
    return inputs[0]


def add_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    a, b = inputs
    if a != b:
        raise ShapeError(f"Add needs equal shapes, got {a} and {b}")
    return a


ACTIVE = LayerKind(name="Active", cpp_class="pz::ActiveLayer", template="active",
                   binding="active", shape=active_shape)
ADD = LayerKind(name="Add", cpp_class="pz::AddLayer", template="add", binding="add",
                shape=add_shape, arity=2)
