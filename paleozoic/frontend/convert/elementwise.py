"""Converters of element-wise arithmetic: Add / Sub / Mul / Div of two activations
or with per-channel constants, and Sum."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.patterns import Match
from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops, pattern_converter
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker, channel_vector

onnx_ops({
    "Add": OnnxOp("Add, Binary or Scale"),
    "Sub": OnnxOp("Binary or Scale"),
    "Mul": OnnxOp("Binary or Scale"),
    "Div": OnnxOp("Binary or Scale"),
    "Sum": OnnxOp("Add"),
})


@converter("relax.stack")
def convert_stack(w: Walker, call: Any, args: list[Value]) -> Value:
    raise w.fail("stack is supported as part of ONNX Sum only (stack on axis 0, then sum "
                 "over axis 0)")


@pattern_converter("sum")
def convert_sum(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    items = [operands[f"item{i}"] for i in range(match.attrs["count"])]
    if not all(isinstance(item, Act) for item in items):
        raise w.fail("Sum is supported over activations only")
    out = items[0]
    for item in items[1:]:
        out = w.emit("Add", [out, item])
    return out


def broadcasts_to(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    if len(small) > len(big):
        return False
    return all(d in (1, e) for d, e in zip(reversed(small), reversed(big)))


def binary_layer(w: Walker, op: str, a: Value, b: Value) -> Value:
    """x op y for two activations (Add, or Binary with y broadcast to x) or for an
    activation and a per-channel constant (a Scale layer)."""
    if any(isinstance(v, Act) and w.dtype(v) != "float32" for v in (a, b)):
        from paleozoic.frontend.convert.host import integer_arithmetic

        return integer_arithmetic(w, op, a, b)
    if isinstance(a, Act) and isinstance(b, Act):
        sa, sb = w.tensors[a.name].shape, w.tensors[b.name].shape
        if op == "add" and sa == sb:
            return w.emit("Add", [a, b])
        if sa != sb and not broadcasts_to(sb, sa) and op in ("add", "mul") \
                and broadcasts_to(sa, sb):
            a, b, sa, sb = b, a, sb, sa  # the SDK broadcasts its second operand
        if sa != sb and not broadcasts_to(sb, sa):
            raise w.fail(f"{op} of {sa} and {sb}: the SDK broadcasts the second operand to "
                         f"the first only")
        return w.emit("Binary", [a, b], {"op": op}, part=op)
    if isinstance(a, Const) and isinstance(b, Act):
        if op in ("add", "mul"):
            a, b = b, a
        elif op == "sub":  # c - x = -1 * x + c
            vector = channel_vector(w, b, a)
            if vector is None:
                raise w.fail(f"subtract from a constant of shape {a.value.shape} that is "
                             f"not per-channel")
            return w.emit("Scale", [b], {}, {"alpha": -np.ones_like(vector), "beta": vector},
                          part="rsub")
        else:
            raise w.fail("dividing a constant by an activation is not supported")
    if not (isinstance(a, Act) and isinstance(b, Const)):
        raise w.fail(f"{op} of these operands is not supported")
    vector = channel_vector(w, a, b)
    if vector is None:
        tail = _trailing_constant(w.tensors[a.name].shape, np.asarray(b.value).shape)
        if tail is None:
            raise w.fail(f"{op} with a constant of shape {b.value.shape} on an activation of "
                         f"shape {w.tensors[a.name].shape}: only per-channel, scalar or "
                         f"trailing-axes constants are supported")
        return _trailing_scale(w, op, a, np.asarray(b.value, dtype=np.float64), tail)
    ones, zeros = np.ones_like(vector), np.zeros_like(vector)
    if op == "div" and not np.all(vector):
        raise w.fail("division by a constant that has zeros")
    alpha, beta, part = {"add": (ones, vector, "bias"), "sub": (ones, -vector, "bias"),
                           "mul": (vector, zeros, "scale"),
                           "div": (1.0 / vector.astype(np.float64) if op == "div" else ones,
                                   zeros, "scale")}[op]
    return w.emit("Scale", [a], {}, {"alpha": alpha, "beta": beta}, part=part)


def _trailing_constant(x: tuple[int, ...], c: tuple[int, ...]) -> int | None:
    """The number of trailing axes of `x` a constant of shape `c` spans when it is the same
    for every index of the leading ones (c = [1, ..., 1] + x[-k:], a position embedding's
    [1, seq, width] on [batch, seq, width]); None otherwise."""
    dims = list(c)
    while dims and dims[0] == 1 and len(dims) > 1:
        dims.pop(0)
    k = len(dims)
    if k == 0 or k > len(x) or tuple(dims) != tuple(x[len(x) - k:]):
        return None
    return k


def _trailing_scale(w: Walker, op: str, a: Act, value: np.ndarray, k: int) -> Act:
    """x op c for a constant c over the last k axes: x viewed as [lead, prod(tail), 1, 1],
    where c is one value per channel of a Scale layer, and viewed back."""
    shape = w.tensors[a.name].shape
    lead = int(np.prod(shape[:len(shape) - k]))
    vector = value.reshape(-1)
    if op == "div" and not np.all(vector):
        raise w.fail("division by a constant that has zeros")
    ones, zeros = np.ones_like(vector), np.zeros_like(vector)
    alpha, beta = {"add": (ones, vector), "sub": (ones, -vector), "mul": (vector, zeros),
                   "div": (1.0 / vector if op == "div" else ones, zeros)}[op]
    view = w.emit("Reshape", [a], {"shape": [lead, vector.size, 1, 1]}, part="view",
                  main=False)
    scaled = w.emit("Scale", [view], {}, {"alpha": alpha, "beta": beta},
                    part="bias" if op in ("add", "sub") else "scale")
    return w.emit("Reshape", [scaled], {"shape": list(shape)}, part="reshape", main=False)


@converter("relax.add")
def convert_add(w: Walker, call: Any, args: list[Value]) -> Value:
    return binary_layer(w, "add", *args)


@converter("relax.subtract")
def convert_subtract(w: Walker, call: Any, args: list[Value]) -> Value:
    return binary_layer(w, "sub", *args)


@converter("relax.multiply")
def convert_multiply(w: Walker, call: Any, args: list[Value]) -> Value:
    return binary_layer(w, "mul", *args)


@converter("relax.divide")
def convert_divide(w: Walker, call: Any, args: list[Value]) -> Value:
    return binary_layer(w, "div", *args)
