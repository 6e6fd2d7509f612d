"""Converters of element-wise arithmetic: Add / Sub / Mul / Div of two activations
or with per-channel constants, Sum, Pow."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.normalize import lrn_step
from paleozoic.frontend.convert.registry import converter
from paleozoic.frontend.convert.values import Act, Const, Pending, Tup, Value
from paleozoic.frontend.convert.walker import Walker, channel_vector, ints


@converter("relax.stack")
def convert_stack(w: Walker, call: Any, args: list[Value]) -> Value:
    (items,) = args
    if not isinstance(items, Tup) or not all(isinstance(i, Act) for i in items.items):
        raise w.fail("stack is supported as part of Sum over activations only")
    if int(call.attrs.axis) != 0:
        raise w.fail("stack is supported on axis 0 (ONNX Sum) only")
    return Pending("sum", items=list(items.items))


@converter("relax.sum")
def convert_sum(w: Walker, call: Any, args: list[Value]) -> Value:
    (stacked,) = args
    axis = call.attrs.axis
    if not isinstance(stacked, Pending) or stacked.pattern != "sum" or (
            axis is not None and ints(axis) != [0]) or call.attrs.keepdims:
        raise w.fail("sum is supported as ONNX Sum (stack then sum over axis 0) only")
    out = stacked.items[0]
    for item in stacked.items[1:]:
        out = w.emit("Add", [out, item], suffix="add")
    return out


def broadcasts_to(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    if len(small) > len(big):
        return False
    return all(d in (1, e) for d, e in zip(reversed(small), reversed(big)))


def binary_layer(w: Walker, op: str, a: Value, b: Value) -> Value:
    """x op y for two activations (Add, or Binary with y broadcast to x) or for an
    activation and a per-channel constant (a Scale layer)."""
    if isinstance(a, Act) and isinstance(b, Act):
        sa, sb = w.tensors[a.name].shape, w.tensors[b.name].shape
        if op == "add" and sa == sb:
            return w.emit("Add", [a, b], suffix="add")
        if sa != sb and not broadcasts_to(sb, sa) and op in ("add", "mul") \
                and broadcasts_to(sa, sb):
            a, b, sa, sb = b, a, sb, sa  # the SDK broadcasts its second operand
        if sa != sb and not broadcasts_to(sb, sa):
            raise w.fail(f"{op} of {sa} and {sb}: the SDK broadcasts the second operand to "
                         f"the first only")
        return w.emit("Binary", [a, b], {"op": op}, suffix=op)
    if isinstance(a, Const) and isinstance(b, Act):
        if op in ("add", "mul"):
            a, b = b, a
        elif op == "sub":  # c - x = -1 * x + c
            vector = channel_vector(w, b, a)
            if vector is None:
                raise w.fail(f"subtract from a constant of shape {a.value.shape} that is "
                             f"not per-channel")
            return w.emit("Scale", [b], {}, {"alpha": -np.ones_like(vector), "beta": vector},
                          suffix="rsub")
        else:
            raise w.fail("dividing a constant by an activation is not supported")
    if not (isinstance(a, Act) and isinstance(b, Const)):
        raise w.fail(f"{op} of these operands is not supported")
    vector = channel_vector(w, a, b)
    if vector is None:
        raise w.fail(f"{op} with a constant of shape {b.value.shape} on an activation of "
                     f"shape {w.tensors[a.name].shape}: only per-channel or scalar constants "
                     f"are supported")
    ones, zeros = np.ones_like(vector), np.zeros_like(vector)
    if op == "div" and not np.all(vector):
        raise w.fail("division by a constant that has zeros")
    alpha, beta, suffix = {"add": (ones, vector, "bias"), "sub": (ones, -vector, "bias"),
                           "mul": (vector, zeros, "scale"),
                           "div": (1.0 / vector.astype(np.float64) if op == "div" else ones,
                                   zeros, "scale")}[op]
    return w.emit("Scale", [a], {}, {"alpha": alpha, "beta": beta}, suffix=suffix)


@converter("relax.add")
def convert_add(w: Walker, call: Any, args: list[Value]) -> Value:
    a, b = args
    if isinstance(a, Pending) or isinstance(b, Pending):
        return lrn_step(w, call, a if isinstance(a, Pending) else b, b if isinstance(a, Pending) else a)
    return binary_layer(w, "add", a, b)


@converter("relax.subtract")
def convert_subtract(w: Walker, call: Any, args: list[Value]) -> Value:
    return binary_layer(w, "sub", *args)


@converter("relax.multiply")
def convert_multiply(w: Walker, call: Any, args: list[Value]) -> Value:
    a, b = args
    if isinstance(a, Act) and isinstance(b, Act) and a == b and w.lrn_ahead(a):
        # x * x opens TVM's LRN decomposition. TVM converts nodes in graph order and
        # emits this first binding of each eagerly (the final divide may come later), so
        # the k-th opening belongs to the k-th LRN node, whose parameters are used: TVM's
        # own lowering is wrong for even sizes, which the importer hands it as size + 1.
        if w.lrn_count >= len(w.lrn_attrs):
            raise w.fail("more LRN patterns than LRN nodes in the model")
        w.lrn_count += 1
        return Pending("lrn", source=a, params=dict(w.lrn_attrs[w.lrn_count - 1]))
    if isinstance(a, Pending) or isinstance(b, Pending):
        return lrn_step(w, call, a if isinstance(a, Pending) else b, b if isinstance(a, Pending) else a)
    return binary_layer(w, "mul", a, b)


@converter("relax.power")
def convert_power(w: Walker, call: Any, args: list[Value]) -> Value:
    return lrn_step(w, call, args[0], args[1])


@converter("relax.divide")
def convert_divide(w: Walker, call: Any, args: list[Value]) -> Value:
    x, denom = args
    if isinstance(x, Act) and isinstance(denom, Pending) and denom.pattern == "lrn" \
            and denom.source == x and {"size", "alpha", "bias", "beta"} <= denom.attrs.keys():
        attrs = denom.params
        expected = attrs["size"] + (1 - attrs["size"] % 2)  # as handed to TVM
        if int(denom.attrs["size"]) != expected or not np.isclose(
                denom.attrs["beta"], attrs["beta"], rtol=1e-6):
            raise w.fail(f"LRN pattern (size {denom.attrs['size']}, beta "
                         f"{denom.attrs['beta']}) does not match its ONNX node (size "
                         f"{attrs['size']}, beta {attrs['beta']})")
        return w.emit("LRN", [x], attrs, suffix="lrn")
    if isinstance(denom, Pending) or isinstance(x, Pending):
        raise w.fail("divide does not complete the LRN pattern")
    return binary_layer(w, "div", x, denom)
