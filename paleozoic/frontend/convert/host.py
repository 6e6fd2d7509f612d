"""Converters of the operators computed on the host: Cast (of integer inputs, or to an
integer type) and ArgMax (paleozoic.ops.host)."""

from __future__ import annotations

from typing import Any

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Value
from paleozoic.frontend.convert.walker import Walker, act_of
from paleozoic.ops.host import ELEMENT_TYPES

onnx_ops({
    "Cast": OnnxOp("HostCast, or nothing (a cast of a float to float32)"),
    "ArgMax": OnnxOp("HostArgMax"),
})


@converter("relax.astype")
def convert_astype(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    to = str(call.attrs.dtype)
    if to not in ELEMENT_TYPES:
        raise w.fail(f"Cast to {to}: a session's tensors are {', '.join(ELEMENT_TYPES)}")
    if to == w.dtype(x):
        return x  # a cast to its own type (exporters write them around masks)
    return w.emit("HostCast", [x], {"to": to, "shape": list(w.tensors[x.name].shape)},
                  part="cast")


@converter("relax.argmax")
def convert_argmax(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    rank = len(w.tensors[x.name].shape)
    if call.attrs.axis is None:
        raise w.fail("ArgMax over all axes (no axis) is not an ONNX form; give an axis")
    axis = int(call.attrs.axis) % rank
    return w.emit("HostArgMax", [x], {"axis": axis, "keepdims": bool(call.attrs.keepdims)},
                  part="argmax")
