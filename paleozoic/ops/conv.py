"""Convolution: 2-D, grouped, dilated, with asymmetric pads and an optional bias."""

from __future__ import annotations

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError


def conv_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if len(x) != 4:
        raise ShapeError(f"Conv needs an NCHW input, got shape {x}")
    n, c, h, w = x
    kh, kw = attrs["kernel"]
    sh, sw = attrs["stride"]
    top, bottom, left, right = attrs["pads"]
    dh, dw = attrs["dilation"]
    groups = attrs["groups"]
    if c % groups or attrs["out_channels"] % groups:
        raise ShapeError(f"Conv groups={groups} does not divide channels {c} -> "
                         f"{attrs['out_channels']}")
    ho = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    wo = (w + left + right - dw * (kw - 1) - 1) // sw + 1
    if ho < 1 or wo < 1:
        raise ShapeError(f"Conv kernel {kh}x{kw} does not fit input {h}x{w} with pads")
    return (n, attrs["out_channels"], ho, wo)


def conv_macs(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    n, co, ho, wo = out
    kh, kw = attrs["kernel"]
    return n * co * ho * wo * (inputs[0][1] // attrs["groups"]) * kh * kw


CONV = LayerKind(
    name="Conv", cpp_class="pz::ConvLayer", template="conv", binding="conv",
    shape=conv_shape, macs=conv_macs, weight_roles=("weight",), optional_roles=("bias",),
    spatial=True,
)
