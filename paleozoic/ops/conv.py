"""Convolution and transposed convolution (Deconv): 2-D, grouped, dilated, with asymmetric
pads and an optional bias."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, nchw_input

Pair = tuple[int, int]
Quad = tuple[int, int, int, int]


@dataclass(frozen=True)
class ConvAttrs:
    out_channels: int
    kernel: Pair
    stride: Pair = (1, 1)
    pads: Quad = (0, 0, 0, 0)        # top, bottom, left, right
    dilation: Pair = (1, 1)
    groups: int = 1


@dataclass(frozen=True)
class DeconvAttrs(ConvAttrs):
    output_padding: Pair = (0, 0)    # extra rows / columns at the bottom / right


def _window(attrs: Attrs) -> tuple[Pair, Pair, Quad, Pair, int]:
    """Kernel, stride, pads (top, bottom, left, right), dilation and groups."""
    return (tuple(attrs["kernel"]), tuple(attrs["stride"]), tuple(attrs["pads"]),
            tuple(attrs["dilation"]), attrs["groups"])


def conv_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    n, c, h, w = nchw_input(inputs, "Conv")
    (kh, kw), (sh, sw), (top, bottom, left, right), (dh, dw), groups = _window(attrs)
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



def conv_sparse_refusal(attrs: Attrs) -> str | None:
    """CNML's sparse mode is on cnmlCreateConvOpParam (MLU100), whose pads are per-axis
    totals split evenly, and no group convolution has one."""
    if attrs["groups"] != 1:
        return "it has groups (CNML has no sparse group convolution)"
    top, bottom, left, right = attrs["pads"]
    if top != bottom or left != right:
        return (f"cnmlCreateConvOpParam, which takes the sparse mode, splits each axis' pad "
                f"evenly, and its pads are {top},{bottom},{left},{right} (top, bottom, left, "
                f"right)")
    return None


CONV = LayerKind(name="Conv", shape=conv_shape, macs=conv_macs, weight_roles=("weight",),
                 optional_roles=("bias",), attrs=ConvAttrs, int8_mode=True, sparse_mode=True,
                 sparse_refusal=conv_sparse_refusal)


def deconv_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    """ONNX ConvTranspose: H_out = (H - 1) * sh - top - bottom + dh * (kh - 1) + oh + 1."""
    n, c, h, w = nchw_input(inputs, "Deconv")
    (kh, kw), (sh, sw), (top, bottom, left, right), (dh, dw), groups = _window(attrs)
    oh, ow = attrs["output_padding"]
    co = attrs["out_channels"]
    if groups < 1 or c % groups or co % groups:
        raise ShapeError(f"Deconv groups={groups} does not divide channels {c} -> {co}")
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(top, bottom, left, right) < 0:
        raise ShapeError(f"Deconv needs kernel, stride and dilation >= 1 and pads >= 0, got "
                         f"kernel {[kh, kw]}, stride {[sh, sw]}, dilation {[dh, dw]}, "
                         f"pads {[top, bottom, left, right]}")
    if not (0 <= oh < max(sh, dh) and 0 <= ow < max(sw, dw)):
        raise ShapeError(f"Deconv output_padding {[oh, ow]} must be >= 0 and smaller than "
                         f"the stride or the dilation of its axis (stride {[sh, sw]}, "
                         f"dilation {[dh, dw]})")
    ho = (h - 1) * sh - top - bottom + dh * (kh - 1) + oh + 1
    wo = (w - 1) * sw - left - right + dw * (kw - 1) + ow + 1
    if ho < 1 or wo < 1:
        raise ShapeError(f"Deconv pads {[top, bottom, left, right]} crop away the whole "
                         f"{(h - 1) * sh + dh * (kh - 1) + 1}x{(w - 1) * sw + dw * (kw - 1) + 1} "
                         f"output")
    return (n, co, ho, wo)


def deconv_macs(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    """Every input pixel scatters into (out_channels / groups) * kh * kw outputs."""
    n, c, h, w = inputs[0]
    kh, kw = attrs["kernel"]
    return n * c * h * w * (attrs["out_channels"] // attrs["groups"]) * kh * kw


# attrs {"out_channels", "kernel": [kh, kw], "stride", "pads": [top, bottom, left, right],
# "dilation", "groups", "output_padding": [oh, ow]}; weight (C_in, C_out / groups, kh, kw)
# as ONNX's ConvTranspose; optional bias (C_out,), folded from a following Scale.

DECONV = LayerKind(name="Deconv", shape=deconv_shape, macs=deconv_macs, weight_roles=("weight",),
                   optional_roles=("bias",), attrs=DeconvAttrs, weight_channel_axis=1)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (CONV, DECONV,)
