"""Converters of the reductions (ONNX ReduceSum / ReduceMean / ReduceMax / ReduceMin /
ReduceProd, and the ReduceSumSquare / ReduceL2 / ReduceL1 / ReduceLogSumExp forms TVM writes
as a Unary or Binary and one of those): one Reduce layer over every reduced axis. A mean or
max over the H and W axes of an NCHW tensor stays the SDK's pooling (pool.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import SCALAR_SHAPE, Walker, act_of, ints

onnx_ops({
    "ReduceSum": OnnxOp("Reduce sum", parameters=(1,)),
    "ReduceMean": OnnxOp("Reduce mean (GlobalAvgPool over NCHW's H and W)", parameters=(1,)),
    "ReduceMax": OnnxOp("Reduce max (Pool over NCHW's H and W)", parameters=(1,)),
    "ReduceMin": OnnxOp("Reduce min", parameters=(1,)),
    "ReduceProd": OnnxOp("Reduce prod", parameters=(1,)),
    "ReduceSumSquare": OnnxOp("Binary mul + Reduce sum", parameters=(1,)),
    "ReduceL1": OnnxOp("Unary abs + Reduce sum", parameters=(1,)),
    "ReduceL2": OnnxOp("Binary mul + Reduce sum + Unary sqrt", parameters=(1,)),
    "ReduceLogSum": OnnxOp("Reduce sum + Unary log", parameters=(1,)),
    "ReduceLogSumExp": OnnxOp("Unary exp + Reduce sum + Unary log", parameters=(1,)),
})

_NUMPY = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def reduce_axes(w: Walker, call: Any, x: Value) -> list[int]:
    """The reduced axes, non-negative and ascending (every axis when the call has none)."""
    rank = len(w.tensors[x.name].shape) if isinstance(x, Act) else np.ndim(x.value)
    if call.attrs.axis is None:
        return list(range(rank))
    return sorted({a % rank for a in ints(call.attrs.axis)}) if rank else []


def reduce_layer(w: Walker, call: Any, x: Value, op: str) -> Value:
    axes = reduce_axes(w, call, x)
    keepdims = bool(call.attrs.keepdims)
    if isinstance(x, Const):  # shapes and masks TVM leaves to us: numpy's reduction
        value = np.asarray(x.value)
        return Const(_NUMPY[op](value, axis=tuple(axes), keepdims=keepdims).astype(value.dtype))
    x = act_of(w, x)
    shape = w.tensors[x.name].shape
    if w.dtype(x) != "float32":
        raise w.fail(f"Reduce{op.capitalize()} of an integer tensor: reductions are "
                     f"computed on float32 tensors")
    if not axes:
        return x
    if not keepdims and len(axes) == len(shape):  # a 0-d result: one element, SCALAR_SHAPE
        kept = w.emit("Reduce", [x], {"op": op, "axes": axes, "keepdims": True},
                      part=f"reduce_{op}")
        return w.emit("Reshape", [kept], {"shape": list(SCALAR_SHAPE)}, part="scalar")
    return w.emit("Reduce", [x], {"op": op, "axes": axes, "keepdims": keepdims},
                  part=f"reduce_{op}")


def _pooled_over_hw(w: Walker, call: Any, x: Value, mode: str) -> Act | None:
    """A mean or max over H and W of an NCHW activation is the SDK's pooling (global
    average, or max over the whole window), as CNNs write global pooling; so is ONNX's
    GlobalAveragePool / GlobalMaxPool of an [N, C, L] one (seen as [N, C, 1, L], as the 1-D
    convolutions are). A ReduceMean over the last axis of a 3-D tensor stays a Reduce
    layer: it is as often a transformer's mean over features. None otherwise."""
    if not isinstance(x, Act):
        return None
    shape = w.tensors[x.name].shape
    node = w.current_node
    global_pool = node is not None and node.op_type in ("GlobalAveragePool", "GlobalMaxPool")
    if (len(shape), reduce_axes(w, call, x)) not in ((4, [2, 3]), (3, [2])) or \
            (len(shape) == 3 and not global_pool):
        return None
    if len(shape) == 3:
        x = w.emit("Reshape", [x], {"shape": [shape[0], shape[1], 1, shape[2]]},
                   part="to2d", main=False)
    height, width = w.tensors[x.name].shape[2:]
    if mode == "mean":
        out = w.emit("GlobalAvgPool", [x], part="gap")
    else:
        out = w.emit("Pool", [x], {"mode": "max", "kernel": [height, width],
                                   "stride": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": False,
                                   "count_include_pad": False}, part="gmp")
    if not call.attrs.keepdims:
        out = w.emit("Reshape", [out], {"shape": [shape[0], shape[1]]}, part="flatten")
    elif len(shape) == 3:
        out = w.emit("Reshape", [out], {"shape": [shape[0], shape[1], 1]}, part="to1d",
                     main=False)
    return out


@converter("relax.mean")
def convert_mean(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pooled_over_hw(w, call, args[0], "mean") or reduce_layer(w, call, args[0], "mean")


@converter("relax.max")
def convert_max(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pooled_over_hw(w, call, args[0], "max") or reduce_layer(w, call, args[0], "max")


@converter("relax.sum")
def convert_sum(w: Walker, call: Any, args: list[Value]) -> Value:
    return reduce_layer(w, call, args[0], "sum")


@converter("relax.min")
def convert_min(w: Walker, call: Any, args: list[Value]) -> Value:
    return reduce_layer(w, call, args[0], "min")


@converter("relax.prod")
def convert_prod(w: Walker, call: Any, args: list[Value]) -> Value:
    return reduce_layer(w, call, args[0], "prod")
