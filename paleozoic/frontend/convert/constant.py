"""numpy evaluation of the shape operations TVM applies to weights (bias reshape,
Gemm's weight transpose, Unsqueeze), so weights stay constants."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from paleozoic.frontend.convert.registry import OnnxOp, onnx_ops
from paleozoic.frontend.convert.values import Const
from paleozoic.frontend.convert.walker import ints

onnx_ops({
    "Identity": OnnxOp("(removed)"),
    "Constant": OnnxOp("(folded)"),
    "ConstantOfShape": OnnxOp("(folded)"),
})


def _const_reshape(call: Any, args: list[Const]) -> np.ndarray:
    return args[0].value.reshape(ints(call.args[1].values))


def _const_permute(call: Any, args: list[Const]) -> np.ndarray:
    axes = call.attrs.axes
    return np.transpose(args[0].value, None if axes is None else ints(axes))


def _const_expand_dims(call: Any, args: list[Const]) -> np.ndarray:
    value = args[0].value
    for axis in sorted(ints(call.attrs.axis)):
        value = np.expand_dims(value, axis)
    return value


def _const_squeeze(call: Any, args: list[Const]) -> np.ndarray:
    axis = call.attrs.axis
    return np.squeeze(args[0].value, axis=None if axis is None else tuple(ints(axis)))


def _const_broadcast_to(call: Any, args: list[Const]) -> np.ndarray:
    return np.broadcast_to(args[0].value, ints(call.args[1].values)).copy()


def _const_binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable:
    return lambda call, args: fn(args[0].value, args[1].value)


CONST_EVAL: dict[str, Callable[[Any, list[Const]], np.ndarray]] = {
    "relax.reshape": _const_reshape,
    "relax.permute_dims": _const_permute,
    "relax.expand_dims": _const_expand_dims,
    "relax.squeeze": _const_squeeze,
    "relax.broadcast_to": _const_broadcast_to,
    "relax.add": _const_binary(np.add),
    "relax.subtract": _const_binary(np.subtract),
    "relax.multiply": _const_binary(np.multiply),
    "relax.divide": _const_binary(np.divide),
    "relax.sqrt": lambda call, args: np.sqrt(args[0].value),
    "relax.isnan": lambda call, args: np.isnan(args[0].value),
    "relax.where": lambda call, args: np.where(args[0].value, args[1].value, args[2].value),
    "relax.astype": lambda call, args: args[0].value.astype(str(call.attrs.dtype)),
    "relax.less": lambda call, args: np.less(args[0].value, args[1].value),
    "relax.take": lambda call, args: np.take(
        args[0].value, args[1].value.astype(np.int64),
        axis=0 if call.attrs.axis is None else int(call.attrs.axis), mode="wrap"),
    "relax.shape_to_tensor": lambda call, args: np.asarray(args[0].value, dtype=np.int64),
    # GroupNormalization-21's unit scale and zero bias before its own affine terms.
    "relax.ones_like": lambda call, args: np.ones_like(args[0].value),
    "relax.zeros_like": lambda call, args: np.zeros_like(args[0].value),
}
