"""Per-channel and cross-channel normalisation: BatchNorm, Scale, LRN; LayerNorm over the
trailing axes."""

from __future__ import annotations

from dataclasses import dataclass, field

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, elements


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


@dataclass(frozen=True)
class LayerNormAttrs:
    axis: int                        # non-negative: normalised over axes axis..rank-1
    epsilon: float = 1e-5


def layer_norm_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if not 0 <= attrs["axis"] < len(x):
        raise ShapeError(f"LayerNorm axis {attrs['axis']} is outside a {len(x)}-D input")
    if attrs["epsilon"] < 0:
        raise ShapeError(f"LayerNorm epsilon {attrs['epsilon']} is negative")
    return x


def layer_norm_ops(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    return 6 * elements(out)


def same_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    return inputs[0]


def channel_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if len(x) < 2:
        raise ShapeError(f"per-channel layer needs a channel axis, got shape {x}")
    return x


def lrn_ops(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    return elements(out) * (attrs["size"] + 3)


BATCH_NORM = LayerKind(name="BatchNorm", shape=channel_shape, weight_roles=("mean", "inv_std"),
                       attrs=BatchNormAttrs)
SCALE = LayerKind(name="Scale", shape=channel_shape, weight_roles=("alpha", "beta"))
LRN = LayerKind(name="LRN", cpp_class="pz::LrnLayer", shape=channel_shape, macs=lrn_ops,
                attrs=LrnAttrs)
# One SDK op (cnmlCreateNdLayerNormOp), not MeanVarNorm + Scale: the SDK's Scale is per
# channel (axis 1) and MeanVarNorm normalises NCHW's C*H*W, neither a trailing axis with a
# per-element gamma; one op is also one pass and one rounding in fp16. Weights "gamma" and
# "beta" of prod(shape[axis:]) values (ONNX's Scale and B; the frontend gives zeros for a
# missing B). Not named "bias": that role is per output channel to the passes.
def _rows_through_reshape(attrs: Attrs, before: tuple[int, ...], after: tuple[int, ...]
                          ) -> Attrs | None:
    """Normalised over the last axis alone, the layer sees the same rows on either side of
    a reshape that keeps that axis."""
    if attrs["axis"] != len(after) - 1 or before[-1:] != after[-1:]:
        return None
    return {**attrs, "axis": len(before) - 1}


LAYER_NORM = LayerKind(name="LayerNorm", shape=layer_norm_shape, macs=layer_norm_ops,
                       weight_roles=("gamma", "beta"), attrs=LayerNormAttrs,
                       through_reshape=_rows_through_reshape)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (BATCH_NORM, SCALE, LRN, LAYER_NORM,)
