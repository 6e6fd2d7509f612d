"""Fully-connected layers (the paper's GEMM substitution) and softmax."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, elements


@dataclass(frozen=True)
class FullyConnectedAttrs:
    out_features: int


@dataclass(frozen=True)
class AxisAttrs:
    axis: int                        # non-negative


def fc_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if len(x) < 2:
        raise ShapeError(f"FullyConnected needs a batch axis, got shape {x}")
    return (x[0], attrs["out_features"])


def fc_macs(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    return elements(inputs[0]) * attrs["out_features"]


def softmax_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if not 0 <= attrs["axis"] < len(x):
        raise ShapeError(f"Softmax axis {attrs['axis']} is outside a {len(x)}-D input")
    return x


FULLY_CONNECTED = LayerKind(
    name="FullyConnected", cpp_class="pz::FullyConnectedLayer", template="fully_connected",
    binding="fully_connected", shape=fc_shape, macs=fc_macs, weight_roles=("weight",),
    optional_roles=("bias",), attrs=FullyConnectedAttrs, int8_mode=True)
SOFTMAX = LayerKind(name="Softmax", cpp_class="pz::SoftmaxLayer", template="softmax",
                    binding="softmax", shape=softmax_shape, attrs=AxisAttrs)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (FULLY_CONNECTED, SOFTMAX,)
