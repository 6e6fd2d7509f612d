"""Converters of comparisons and logic on run-time float tensors, as the SDK's ops (MLU100
CNML's Equal, NEqual, Less, LessEqual, Greater, GreaterEqual, And, Or, Xor and Not: Binary
and Unary layers writing 1.0 where true and 0.0 where not), and of Where choosing between
run-time tensors, which the SDK has no op for: a host layer (HostWhere), since a blend
c * x + (1 - c) * y would turn the unselected side's inf and nan into nan. Comparisons of
integer tensors, of bool masks and with a number are host layers (HostArith, convert/host.py).

A bool tensor the device computes is a `Cond`: the float activation of 1.0s and 0.0s. A
bool mask of an integer tensor (host.MaskOf) joins them through a HostSelect making its
1.0s and 0.0s."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.host import (IndexTerm, MaskOf, NanOf, WrappedIndex, host_arith,
                                             host_select)
from paleozoic.frontend.convert.values import Act, Cond, Const, Value
from paleozoic.frontend.convert.walker import Walker
from paleozoic.ops.elementwise import broadcasts_to

onnx_ops({
    op: OnnxOp(f"Binary {name} (CNML's {sdk}; float tensors, 1.0 where true), or HostArith "
               f"(integer tensors, bool masks, a number)")
    for op, name, sdk in (("Equal", "equal", "Equal"), ("Greater", "greater", "Greater"),
                          ("GreaterOrEqual", "greater_equal", "GreaterEqual"),
                          ("Less", "less", "Less"), ("LessOrEqual", "less_equal", "LessEqual"),
                          ("Or", "or", "Or"), ("Xor", "xor", "Xor"))
} | {"Not": OnnxOp("Unary not (CNML's Not), or HostArith (a bool mask)")})


# a op b == b op' a: the SDK broadcasts its second operand only.
_SWAPPED = {"equal": "equal", "not_equal": "not_equal", "less": "greater",
            "greater": "less", "less_equal": "greater_equal", "greater_equal": "less_equal",
            "and": "and", "or": "or", "xor": "xor"}


def _float_act(v: Value) -> Act:
    return v.act if isinstance(v, Cond) else v  # type: ignore[return-value]


def _on_device(w: Walker, v: Value) -> bool:
    return isinstance(v, Cond) or (isinstance(v, Act) and w.dtype(v) == "float32")


def binary_bool(w: Walker, op: str, a: Value, b: Value) -> Value:
    """a op b for a comparison or logic op: of two float tensors on the device (b broadcast
    to a, or a to b with the operands swapped), a Cond; with an integer tensor, a bool mask
    or a number, on the host (HostArith), a bool mask."""
    if not (_on_device(w, a) and _on_device(w, b)):
        return host_arith(w, op, a, b)
    x, y = _float_act(a), _float_act(b)
    sx, sy = tuple(w.tensors[x.name].shape), tuple(w.tensors[y.name].shape)
    if sx != sy and not broadcasts_to(sy, sx) and broadcasts_to(sx, sy):
        x, y, sx, sy, op = y, x, sy, sx, _SWAPPED[op]
    if not broadcasts_to(sy, sx):
        raise w.fail(f"{op} of {sx} and {sy}: the SDK broadcasts one operand to the other's "
                     f"shape, not both to a third")
    return Cond(w.emit("Binary", [x, y], {"op": op}, part=op))


def _comparison(op: str):  # type: ignore[no-untyped-def]
    def convert(w: Walker, call: Any, args: list[Value]) -> Value:
        return binary_bool(w, op, *args)  # type: ignore[return-value]
    return convert


for _relax, _op in (("relax.equal", "equal"), ("relax.not_equal", "not_equal"),
                    ("relax.less_equal", "less_equal"), ("relax.greater", "greater"),
                    ("relax.greater_equal", "greater_equal"), ("relax.logical_or", "or"),
                    ("relax.logical_xor", "xor")):
    converter(_relax, held=True)(_comparison(_op))


@converter("relax.logical_not", held=True)
def convert_logical_not(w: Walker, call: Any, args: list[Value]) -> Value:
    if not _on_device(w, args[0]):
        return host_arith(w, "equal", args[0], Const(np.array(0)), truth=True)
    x = _float_act(args[0])
    return Cond(w.emit("Unary", [x], {"function": "not"}, part="not"))  # type: ignore[return-value]


def _scalar(v: Value) -> float | None:
    if isinstance(v, Const) and np.asarray(v.value).size == 1:
        return float(np.asarray(v.value).reshape(-1)[0])
    return None


def where(w: Walker, cond: Value, then: Value, other: Value) -> Value:
    """Where(cond, then, other) with a run-time condition and run-time or scalar values: a
    HostWhere, element by element (inf and nan of the unselected side never reach the
    result)."""
    if not isinstance(cond, (MaskOf, Cond)):
        raise w.fail("Where's condition must be a run-time bool tensor (a comparison, a "
                     "mask) here")
    test = cond.act
    inputs, attrs = [test], {}
    # A mask may stand broadcast (MaskOf.shape); the host layer broadcasts its act itself.
    shapes = [getattr(cond, "shape", None) or tuple(w.tensors[test.name].shape)]
    for key, v in (("then", then), ("otherwise", other)):
        value = _scalar(v)
        if value is not None:
            attrs[key] = value
        elif isinstance(v, Act):
            attrs[key] = "input"
            inputs.append(v)
            shapes.append(tuple(w.tensors[v.name].shape))
        else:
            raise w.fail(f"Where's {key} value must be a run-time tensor or a single number; "
                         f"a constant tensor of another shape is not supported")
    types = {w.dtype(v) for v in inputs[1:]}
    if len(types) > 1:
        raise w.fail(f"Where's values are tensors of different types {sorted(types)}")
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise w.fail(f"Where's operands {shapes} do not broadcast together") from None
    return w.emit("HostWhere", inputs, {**attrs, "shape": list(shape)}, part="where")


@converter("relax.less", held=True)
def convert_less(w: Walker, call: Any, args: list[Value]) -> Value:
    a, b = args
    if isinstance(a, Act) and w.dtype(a) != "float32" and isinstance(b, Const) \
            and b.value.size == 1 and float(b.value.reshape(-1)[0]) == 0:
        return IndexTerm("negative", a)  # type: ignore[return-value]
    return binary_bool(w, "less", a, b)  # type: ignore[return-value]


@converter("relax.where", held=True)
def convert_where(w: Walker, call: Any, args: list[Value]) -> Value:
    cond, then, other = args

    def value(v: Value) -> float | None:
        return float(np.asarray(v.value).reshape(-1)[0]) \
            if isinstance(v, Const) and np.asarray(v.value).size == 1 else None

    if isinstance(cond, MaskOf) and value(then) is not None and value(other) is not None:
        return host_select(w, cond, "nonzero", value(then), value(other))
    if isinstance(cond, NanOf) and value(then) is not None and other == cond.act:
        return host_select(w, MaskOf(cond.act), "isnan", value(then), "x")
    if isinstance(cond, IndexTerm) and cond.kind == "negative" and isinstance(then, IndexTerm) \
            and then.kind == "shifted" and then.act == cond.act == other:
        return WrappedIndex(cond.act, then.shift)  # type: ignore[return-value]
    # Past the patterns, index-wrap steps are plain host arithmetic.
    cond, then, other = (v.materialize(w) if isinstance(v, IndexTerm) else v
                         for v in (cond, then, other))
    if isinstance(cond, Cond) or (isinstance(cond, MaskOf) and (
            isinstance(then, Act) or isinstance(other, Act))):
        return where(w, cond, then, other)
    if isinstance(cond, MaskOf) and value(then) is not None and value(other) is not None:
        return host_select(w, cond, "nonzero", value(then), value(other))
    if isinstance(then, Act) or isinstance(other, Act):
        if isinstance(cond, Const) and (np.all(cond.value) or not np.any(cond.value)):
            return then if np.all(cond.value) else other  # a select of one side throughout
        raise w.fail("Where choosing between run-time tensors element by element: the SDK "
                     "has no select op, and the host select (HostSelect) reads one tensor "
                     "and writes constants or that tensor's own values; blending with the "
                     "condition as 0/1 (c*x + (1-c)*y) would turn inf and nan of the "
                     "unselected side into nan, so it is refused")
    raise w.fail("Where with a run-time condition is supported with a mask (a Cast to bool "
                 "of an integer tensor) or IsNaN(x) as the condition and constant values (x "
                 "itself for IsNaN's), and as the negative-index wrap of a Gather's indices")


@converter("relax.logical_and", held=True)
def convert_logical_and(w: Walker, call: Any, args: list[Value]) -> Value:
    a, b = args
    if isinstance(a, MaskOf):
        a, b = b, a
    if isinstance(b, MaskOf) and isinstance(a, Const) and np.asarray(a.value).all():
        target = np.broadcast_shapes(np.asarray(a.value).shape,
                                     b.shape or w.tensors[b.act.name].shape)
        return MaskOf(b.act, tuple(int(d) for d in target), b.zero_one)  # type: ignore[return-value]
    return binary_bool(w, "and", a, b)  # type: ignore[return-value]
