"""Fully-connected layers (the paper's GEMM substitution), the batched product of two
activations (BatchDot) and softmax."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, elements


@dataclass(frozen=True)
class FullyConnectedAttrs:
    out_features: int


@dataclass(frozen=True)
class AxisAttrs:
    axis: int                        # non-negative


@dataclass(frozen=True)
class SoftmaxAttrs:
    axis: int                        # non-negative
    log: bool = False                # LogSoftmax: x - max - log(sum(exp(x - max)))


@dataclass(frozen=True)
class BatchDotAttrs:
    trans_a: bool = False            # use a's last two axes transposed
    trans_b: bool = False


def _matrix_dims(x: Shape, trans: bool) -> tuple[int, int]:
    return (x[-1], x[-2]) if trans else (x[-2], x[-1])


def batch_dot_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    a, b = (tuple(s) for s in inputs)
    if len(a) < 2 or len(b) < 2:
        raise ShapeError(f"BatchDot needs two inputs of rank >= 2, got {a} and {b}")
    m, ka = _matrix_dims(a, attrs["trans_a"])
    kb, n = _matrix_dims(b, attrs["trans_b"])
    if ka != kb:
        raise ShapeError(f"BatchDot: a {a} (trans_a {attrs['trans_a']}) and b {b} (trans_b "
                         f"{attrs['trans_b']}) disagree on the reduced axis ({ka} vs {kb})")
    batch_a, batch_b = a[:-2], b[:-2]
    rank = max(len(batch_a), len(batch_b))
    batch_a = (1,) * (rank - len(batch_a)) + batch_a
    batch_b = (1,) * (rank - len(batch_b)) + batch_b
    if any(x != y and 1 not in (x, y) for x, y in zip(batch_a, batch_b)):
        raise ShapeError(f"BatchDot: batch dims of a {a} and b {b} do not broadcast")
    return (*(max(x, y) for x, y in zip(batch_a, batch_b)), m, n)


def batch_dot_macs(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    a = inputs[0]
    return elements(out) * (a[-2] if attrs["trans_a"] else a[-1])


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


FULLY_CONNECTED = LayerKind(name="FullyConnected", shape=fc_shape, macs=fc_macs,
                            weight_roles=("weight",), optional_roles=("bias",),
                            attrs=FullyConnectedAttrs, int8_mode=True, sparse_mode=True)
# Two activations, numpy-broadcast batch dims (ONNX MatMul). No int8 mode: in an int8
# block it computes in fp16 (both operands are activations, without a calibrated filter).
BATCH_DOT = LayerKind(name="BatchDot", shape=batch_dot_shape, macs=batch_dot_macs, arity=2,
                      attrs=BatchDotAttrs)
# LogSoftmax is a Softmax with `log`: one op, max-subtracted (the SDK's NdLogSoftmax), so a
# large logit neither overflows exp nor loses the small ones to log(0).
SOFTMAX = LayerKind(name="Softmax", shape=softmax_shape, attrs=SoftmaxAttrs)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (FULLY_CONNECTED, BATCH_DOT, SOFTMAX,)
