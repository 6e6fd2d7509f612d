"""Max and average pooling (window, stride, pads, ceil mode) and global average pooling."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, nchw_input


@dataclass(frozen=True)
class PoolAttrs:
    mode: str                        # "max" | "avg"
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    ceil_mode: bool = False
    count_include_pad: bool = False


def pooled_size(size: int, kernel: int, stride: int, before: int, after: int,
                ceil_mode: bool) -> int:
    span = size + before + after - kernel
    if span < 0:
        raise ShapeError(f"pool window {kernel} is larger than the padded input {size}")
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + before:  # the last window must start inside
        out -= 1
    return out


def pool_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    n, c, h, w = nchw_input(inputs, "Pool")
    kh, kw = attrs["kernel"]
    sh, sw = attrs["stride"]
    top, bottom, left, right = attrs["pads"]
    ceil_mode = attrs["ceil_mode"]
    return (n, c, pooled_size(h, kh, sh, top, bottom, ceil_mode),
            pooled_size(w, kw, sw, left, right, ceil_mode))


def pool_ops(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    kh, kw = attrs["kernel"]
    return out[0] * out[1] * out[2] * out[3] * kh * kw


def global_pool_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    n, c, _, _ = nchw_input(inputs, "GlobalAvgPool")
    return (n, c, 1, 1)


def global_pool_ops(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    n, c, h, w = inputs[0]
    return n * c * h * w



POOL = LayerKind(name="Pool", shape=pool_shape, macs=pool_ops, attrs=PoolAttrs)
GLOBAL_AVG_POOL = LayerKind(name="GlobalAvgPool", shape=global_pool_shape, macs=global_pool_ops)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (POOL, GLOBAL_AVG_POOL,)
