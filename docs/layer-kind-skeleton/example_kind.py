"""Skeleton of a layer kind's registry entry: copy into the family module of
paleozoic/ops/ (conv, dense, elementwise, image, layout, normalize, pool, or a new one
a new module there, found by itself) and rename Example throughout.

The example: y = x >= 0 ? x : slope[c] * x along a channel axis, one attribute and one
weight."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, elementwise_ops


@dataclass(frozen=True)
class ExampleAttrs:
    # Every attribute with its type and, where ONNX has one, its default: operators are
    # completed from here, so no other place repeats the default.
    axis: int = 1   # the axis the slope runs along


def example_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    """The output shape, or ShapeError naming what the kind cannot take."""
    (x,) = inputs
    if not 0 <= attrs["axis"] < len(x):
        raise ShapeError(f"Example's axis {attrs['axis']} is not an axis of shape {x}")
    return x


EXAMPLE = LayerKind(
    # The IR's op_type; the wrapper class (pz::ExampleLayer), the template
    # (templates/layers/example.cpp.j2) and the wrapper factory's name ("example") follow
    # from it. Give cpp_class=, template= or binding= only where yours differ.
    name="Example",
    shape=example_shape,
    macs=elementwise_ops,                # what the device cost and `inspect` count
    weight_roles=("slope",),             # in the order configLayer takes them
    attrs=ExampleAttrs,
)

# Add the kind to the family's tuple; paleozoic.ops collects it from there.
FAMILY = (EXAMPLE,)
