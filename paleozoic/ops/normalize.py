"""Per-channel and cross-channel normalisation: BatchNorm, Scale, LRN."""

from __future__ import annotations

from dataclasses import dataclass, field

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError


@dataclass(frozen=True)
class BatchNormAttrs:
    # Folded into the "inv_std" weight, 1 / sqrt(var + eps): the wrapper never sees it.
    epsilon: float = field(metadata={"runtime": False})


@dataclass(frozen=True)
class LrnAttrs:
    size: int
    alpha: float
    beta: float
    bias: float


def same_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    return inputs[0]


def channel_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if len(x) < 2:
        raise ShapeError(f"per-channel layer needs a channel axis, got shape {x}")
    return x


def lrn_ops(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    total = 1
    for d in out:
        total *= d
    return total * (attrs["size"] + 3)


BATCH_NORM = LayerKind(
    name="BatchNorm", cpp_class="pz::BatchNormLayer", template="batch_norm",
    binding="batch_norm", shape=channel_shape, weight_roles=("mean", "inv_std"),
    attrs=BatchNormAttrs)
SCALE = LayerKind(
    name="Scale", cpp_class="pz::ScaleLayer", template="scale", binding="scale",
    shape=channel_shape, weight_roles=("alpha", "beta"))
LRN = LayerKind(name="LRN", cpp_class="pz::LrnLayer", template="lrn", binding="lrn",
                shape=channel_shape, macs=lrn_ops, attrs=LrnAttrs)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (BATCH_NORM, SCALE, LRN,)
