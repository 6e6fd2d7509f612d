"""The converter of MatMul: with a constant 2-D B the paper's GEMM substitution
(FullyConnected), with two activations a BatchDot."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker

onnx_ops({
    # B is not a weight slot: a B given as a graph input is an activation (BatchDot).
    "MatMul": OnnxOp("FullyConnected (constant 2-D B) or BatchDot (two activations)"),
    # Rewritten before TVM (prepare.rewrite_einsum); other equations are refused there.
    "Einsum": OnnxOp("MatMul and Transposes (two-operand batched matrix products)"),
    "Gemm": OnnxOp("FullyConnected", weights=(1, 2)),
})


@converter("relax.matmul")
def convert_matmul(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight = args
    if isinstance(x, Act) and isinstance(weight, Act):
        return batch_dot(w, x, weight)
    if not isinstance(x, Act) or not isinstance(weight, Const) or weight.value.ndim != 2:
        raise w.fail("matmul is supported with an activation and a constant 2-D weight, or "
                     "with two activations")
    shape = w.tensors[x.name].shape
    if len(shape) < 2:
        raise w.fail("matmul of a 1-D activation is not supported")
    # The paper's GEMM substitution: y = x W becomes a fully-connected layer whose
    # filter is W transposed ([out, in], the SDK's MLP layout). Leading axes of an N-D x
    # fold into the rows and are restored after.
    rows = int(np.prod(shape[:-1]))
    x2 = x if len(shape) == 2 else w.emit("Reshape", [x], {"shape": [rows, shape[-1]]},
                                          part="rows", main=False)
    out = w.emit("FullyConnected", [x2], {"out_features": int(weight.value.shape[1])},
                 {"weight": np.ascontiguousarray(weight.value.T)})
    if len(shape) != 2:
        out = w.emit("Reshape", [out], {"shape": [*shape[:-1], int(weight.value.shape[1])]},
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
