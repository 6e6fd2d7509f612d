"""The converter of MatMul (the paper's GEMM substitution)."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker

onnx_ops({
    "MatMul": OnnxOp("FullyConnected", weights=(1,)),
    "Gemm": OnnxOp("FullyConnected", weights=(1, 2)),
})


@converter("relax.matmul")
def convert_matmul(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight = args
    if not isinstance(x, Act) or not isinstance(weight, Const) or weight.value.ndim != 2:
        raise w.fail("matmul is supported with an activation and a constant 2-D weight")
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
