"""The converters of MatMul (with a constant 2-D B the paper's GEMM substitution,
FullyConnected; with two activations a BatchDot) and of Softmax and LogSoftmax."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker, act_of

onnx_ops({
    # B is not a weight slot: a B given as a graph input is an activation (BatchDot).
    "MatMul": OnnxOp("FullyConnected (constant 2-D B) or BatchDot (two activations)"),
    # Rewritten before TVM (onnx_rewrites.rewrite_einsum); other equations are refused there.
    "Einsum": OnnxOp("MatMul and Transposes (two-operand batched matrix products)"),
    "Gemm": OnnxOp("FullyConnected", weights=(1, 2)),
    "Softmax": OnnxOp("Softmax"),
    "LogSoftmax": OnnxOp("Softmax (log)"),
})


@converter("relax.matmul")
def convert_matmul(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight = args
    if isinstance(x, Act) and isinstance(weight, Act):
        return batch_dot(w, x, weight)
    if isinstance(x, Const) and isinstance(weight, Act):
        return _constant_times(w, np.asarray(x.value), weight)
    if isinstance(x, Act) and isinstance(weight, Const) and weight.value.ndim > 2:
        return _times_batched_constant(w, x, np.asarray(weight.value))
    if not isinstance(x, Act) or not isinstance(weight, Const) or weight.value.ndim != 2:
        raise w.fail("matmul is supported with an activation and a constant 2-D weight, or "
                     "with two activations")
    return fully_connected(w, x, np.asarray(weight.value))


# Batches a MatMul by a batched constant may split into (a FullyConnected layer each).
_MAX_CONSTANT_BATCHES = 64


def _times_batched_constant(w: Walker, x: Act, weight: np.ndarray) -> Value:
    """x [..., m, k] times a constant [..., k, n] with batch axes: one FullyConnected per
    batch (the SDK's MLP takes one filter), the batches cut apart and concatenated back; a
    constant whose batch axes are all 1 is one 2-D weight."""
    shape = tuple(w.tensors[x.name].shape)
    if len(shape) < 2:
        raise w.fail("matmul of a 1-D activation by a batched constant is not supported")
    if all(d == 1 for d in weight.shape[:-2]):
        return fully_connected(w, x, weight.reshape(weight.shape[-2:]))
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(shape[:-2], weight.shape[:-2]))
    except ValueError:
        raise w.fail(f"matmul of {shape} and a constant {weight.shape}: the batch axes do "
                     f"not broadcast") from None
    count = int(np.prod(batch))
    if count > _MAX_CONSTANT_BATCHES:
        raise w.fail(f"matmul by a constant with {count} batches: one FullyConnected a batch, "
                     f"up to {_MAX_CONSTANT_BATCHES}")
    from paleozoic.frontend.convert.layout import expand, slice_layer

    m, k = shape[-2:]
    x = expand(w, x, batch + (m, k))
    flat = w.emit("Reshape", [x], {"shape": [count, m, k]}, part="batches", main=False)
    weights = np.broadcast_to(weight, batch + weight.shape[-2:]).reshape(
        count, *weight.shape[-2:])
    pieces = [fully_connected(w, slice_layer(w, flat, [0], [i], [i + 1], [1]), weights[i])
              for i in range(count)]
    out = w.emit("Concat", pieces, {"axis": 0}, part="concat")
    return w.emit("Reshape", [out], {"shape": [*batch, m, int(weight.shape[-1])]},
                  part="unbatch")


def _constant_times(w: Walker, constant: np.ndarray, x: Act) -> Value:
    """A constant [..., m, k] times x [..., k, n] (a DETR decoder's first queries, constant
    until they meet the image): (x^T c^T)^T, the constant as the weight."""
    shape = tuple(w.tensors[x.name].shape)
    if constant.ndim < 2 or len(shape) < 2:
        raise w.fail("matmul of a 1-D constant or activation by the other is not supported")
    perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
    xt = w.emit("Transpose", [x], {"perm": perm}, part="xt", main=False)
    product = _times_batched_constant(w, xt, np.swapaxes(constant, -1, -2)) \
        if constant.ndim > 2 else fully_connected(w, xt, constant.T)
    rank = len(w.tensors[product.name].shape)
    back = list(range(rank - 2)) + [rank - 1, rank - 2]
    return w.emit("Transpose", [product], {"perm": back}, part="t")


def fully_connected(w: Walker, x: Act, weight: np.ndarray) -> Act:
    """x [..., k] times a constant 2-D weight [k, n]: a FullyConnected layer."""
    shape = w.tensors[x.name].shape
    if len(shape) < 2:
        raise w.fail("matmul of a 1-D activation is not supported")
    # The paper's GEMM substitution: y = x W becomes a fully-connected layer whose
    # filter is W transposed ([out, in], the SDK's MLP layout). Leading axes of an N-D x
    # fold into the rows and are restored after.
    rows = int(np.prod(shape[:-1]))
    x2 = x if len(shape) == 2 else w.emit("Reshape", [x], {"shape": [rows, shape[-1]]},
                                          part="rows", main=False)
    out = w.emit("FullyConnected", [x2], {"out_features": int(weight.shape[1])},
                 {"weight": np.ascontiguousarray(weight.T)})
    if len(shape) != 2:
        out = w.emit("Reshape", [out], {"shape": [*shape[:-1], int(weight.shape[1])]},
                     part="unrows")
    return out


def batch_dot(w: Walker, a: Act, b: Act) -> Value:
    """ONNX MatMul of two activations: a BatchDot over the last two axes with numpy's
    broadcast of the leading ones. A 1-D operand is numpy's vector case: a as [1, k], b as
    [k, 1], the added axis dropped after (two 1-D operands, a scalar result, are refused)."""
    shape_a, shape_b = (tuple(w.tensors[v.name].shape) for v in (a, b))
    if len(shape_a) == 1 and len(shape_b) == 1:
        raise w.fail(f"matmul of two 1-D activations {shape_a} and {shape_b} has a scalar "
                     f"result, which is not supported")
    if len(shape_a) == 1:
        a = w.emit("Reshape", [a], {"shape": [1, shape_a[0]]}, part="row", main=False)
    if len(shape_b) == 1:
        b = w.emit("Reshape", [b], {"shape": [shape_b[0], 1]}, part="column", main=False)
    out = w.emit("BatchDot", [a, b], {})
    if len(shape_a) == 1 or len(shape_b) == 1:
        full = list(w.tensors[out.name].shape)
        drop = -1 if len(shape_b) == 1 else -2
        del full[drop]
        out = w.emit("Reshape", [out], {"shape": full}, part="vector")
    return out


@converter("relax.nn.softmax")
def convert_softmax(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    rank = len(w.tensors[x.name].shape)
    return w.emit("Softmax", [x], {"axis": int(call.attrs.axis) % rank}, part="softmax")


@converter("relax.nn.log_softmax")
def convert_log_softmax(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    rank = len(w.tensors[x.name].shape)
    return w.emit("Softmax", [x], {"axis": int(call.attrs.axis) % rank, "log": True},
                  part="log_softmax")
