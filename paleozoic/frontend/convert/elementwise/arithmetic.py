"""Converters of element-wise arithmetic: Add / Sub / Mul / Div (and Pow's tensor form) of
two activations or with per-channel constants, and Sum; CastLike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from paleozoic.frontend.convert.patterns import (
    Dpl, Forms, Found, Match, PatternError, Read, VarOf, stacked_items,
)
from paleozoic.frontend.convert.registry import (
    OnnxOp,
    converter,
    onnx_ops,
    pattern_converter,
)
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker, channel_vector, ints

onnx_ops({
    "Add": OnnxOp("Add, Binary or Scale"),
    "Sub": OnnxOp("Binary or Scale"),
    "Mul": OnnxOp("Binary or Scale"),
    "Div": OnnxOp("Binary or Scale"),
    "Sum": OnnxOp("Add"),
    # TVM makes it a Cast to the target's type (relax.astype): nothing for float32 to
    # float32, folded for constants, a HostCast otherwise (convert/host.py).
    "CastLike": OnnxOp("nothing (float32 to float32), or HostCast"),
})


@converter("relax.stack")
def convert_stack(w: Walker, call: Any, args: list[Value]) -> Value:
    raise w.fail("stack is supported as part of ONNX Sum only (stack on axis 0, then sum "
                 "over axis 0)")


def _sum_form(dpl: Dpl) -> dict[str, Any]:
    """ONNX Sum of n operands: TVM stacks them and sums over the stacked axis."""
    p = {"items": dpl.wildcard()}
    p["stack"] = dpl.is_op("relax.stack")(p["items"])
    p["root"] = dpl.is_op("relax.sum")(p["stack"])
    return p


def _read_sum(forms: Forms, found: Found, var_of: VarOf) -> Read:
    total, stack = found[forms.root].attrs, found[forms.stack].attrs
    if int(stack.axis) != 0 or total.axis is None or ints(total.axis) != [0] \
            or total.keepdims:
        raise PatternError("stack then sum is supported as ONNX Sum only (stack on "
                           "axis 0, sum over axis 0 without keepdims)")
    items = stacked_items(found, forms.items, var_of)
    return items, {"count": len(items)}


@pattern_converter("sum", form=_sum_form, root="root", inner=("stack",), read=_read_sum)
def convert_sum(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    items = [operands[f"item{i}"] for i in range(match.attrs["count"])]
    acts = [item for item in items if isinstance(item, Act)]
    consts = [np.asarray(item.value) for item in items if isinstance(item, Const)]
    if not acts or len(acts) + len(consts) != len(items):
        raise w.fail("Sum is supported over activations and constants, with at least one "
                     "activation")
    out: Value = acts[0]
    for item in acts[1:]:
        out = binary_layer(w, "add", out, item)
    if consts:  # the constant terms (ONNX's Gelu function body adds a 1) as one bias
        out = binary_layer(w, "add", out, Const(sum(consts[1:], consts[0])))
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
    for v in (a, b):
        if isinstance(v, Const) and np.asarray(v.value).dtype.kind in "iub":
            raise w.fail(f"{op} of a float32 tensor and a {np.asarray(v.value).dtype} "
                         f"constant: ONNX takes operands of one type")
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
        if op == "div" and sa != sb:
            # RealDiv has no broadcast form: a * b^-1 (one more rounding, < 1 ulp).
            inverse = w.emit("Unary", [b], {"function": "pow", "power": -1.0},
                             part="reciprocal")
            return w.emit("Binary", [a, inverse], {"op": "mul"}, part=op)
        return w.emit("Binary", [a, b], {"op": op}, part=op)
    if isinstance(a, Const) and isinstance(b, Act):
        if op == "div":  # c / x = c * x^-1 (ONNX Reciprocal is 1 / x)
            inverse = w.emit("Unary", [b], {"function": "pow", "power": -1.0},
                             part="reciprocal")
            if np.all(np.asarray(a.value) == 1) and np.asarray(a.value).size == 1:
                return inverse
            return binary_layer(w, "mul", inverse, a)
        if op in ("add", "mul"):
            a, b = b, a
        elif op == "sub":  # c - x = -1 * x + c
            vector, view = affine_operand(w, b, a)
            if vector is None:
                raise w.fail(f"subtract from a constant of shape {a.value.shape} that is "
                             f"that does not broadcast to the input "
                             f"{w.tensors[b.name].shape}")
            return _scale(w, b, view, -np.ones_like(vector), vector, "rsub")
        else:
            raise w.fail("dividing a constant by an activation is not supported")
    if not (isinstance(a, Act) and isinstance(b, Const)) or op == "pow":
        raise w.fail(f"{op} of these operands is not supported")
    shape, const_shape = tuple(w.tensors[a.name].shape), np.asarray(b.value).shape
    if not broadcasts_to(const_shape, shape):
        try:
            target = tuple(int(d) for d in np.broadcast_shapes(shape, const_shape))
        except ValueError:
            target = shape
        if target != shape:  # the constant widens the result (rotary angles: p * freqs)
            from paleozoic.frontend.convert.layout import expand

            a = expand(w, a, target)
    vector, view = affine_operand(w, a, b)
    if vector is None:
        raise w.fail(f"{op} with a constant of shape {b.value.shape} on an activation of "
                     f"shape {w.tensors[a.name].shape}: the constant must broadcast to the "
                     f"activation and, expanded over the axes it broadcasts along, hold at "
                     f"most {_MAX_EXPANDED} values")
    ones, zeros = np.ones_like(vector), np.zeros_like(vector)
    if op == "div" and not np.all(vector):
        raise w.fail("division by a constant that has zeros")
    alpha, beta, part = {"add": (ones, vector, "bias"), "sub": (ones, -vector, "bias"),
                           "mul": (vector, zeros, "scale"),
                           "div": (1.0 / vector.astype(np.float64) if op == "div" else ones,
                                   zeros, "scale")}[op]
    return _scale(w, a, view, alpha, beta, part)


# A constant expanded to more elements than this (64 MB of fp32) is refused, not stored.
_MAX_EXPANDED = 1 << 24


def affine_operand(w: Walker, act: Act, const: Const) -> tuple[np.ndarray | None,
                                                                 list[int] | None]:
    """The constant as the per-channel vector of a Scale layer, and the 2-D view of `act`
    the Scale reads when the constant is not per-channel (axis 1) but spans the trailing
    axes of `act` (a transformer's bias on [batch, tokens, features], ConvNeXt's on
    channels-last [N, H, W, C], ViT's position embedding), or broadcasts along some of
    them: the view puts those axes on its channel axis. (None, None) when it does not
    broadcast to `act`."""
    shape = tuple(w.tensors[act.name].shape)
    value = np.asarray(const.value)
    if len(shape) >= 2:
        vector = channel_vector(w, act, const)
        if vector is not None:
            return vector, None
    if value.ndim > len(shape) or any(d not in (1, e) for d, e in
                                       zip(value.shape[::-1], shape[::-1])):
        return None, None
    dims = [1] * (len(shape) - value.ndim) + list(value.shape)
    first = next((i for i, d in enumerate(dims) if d != 1), len(dims))
    # From its first non-1 axis on, the constant is expanded over the axes it broadcasts
    # along (Swin's attention mask, [1, windows, 1, 49, 49] on [1, windows, heads, 49,
    # 49]): a Scale can hold one value per element of that trailing span.
    span = shape[first:]
    if int(np.prod(span, dtype=np.int64)) > _MAX_EXPANDED:
        return None, None
    full = np.broadcast_to(value.reshape(dims), shape)[(0,) * first]
    view = [int(np.prod(shape[:first], dtype=np.int64)), int(np.prod(span, dtype=np.int64))]
    return np.ascontiguousarray(full, dtype=np.float32).reshape(-1), view


def _scale(w: Walker, act: Act, view: list[int] | None, alpha: np.ndarray, beta: np.ndarray,
           part: str) -> Value:
    """A Scale layer, on `view` of `act` (reshaped there and back) when given. The reshape
    after a fully-connected layer's own un-flattening cancels in the passes, which then
    fold a pure bias into the layer."""
    if view is None:
        return w.emit("Scale", [act], {}, {"alpha": alpha, "beta": beta}, part=part)
    shape = list(w.tensors[act.name].shape)
    flat = w.emit("Reshape", [act], {"shape": view}, part=f"{part}_view", main=False)
    out = w.emit("Scale", [flat], {}, {"alpha": alpha, "beta": beta}, part=part)
    return w.emit("Reshape", [out], {"shape": shape}, part=f"{part}_unview", main=False)


def _binary_converter(op: str) -> Callable[[Walker, Any, list[Value]], Value]:
    def convert(w: Walker, call: Any, args: list[Value]) -> Value:
        return binary_layer(w, op, *args)

    convert.__name__ = f"convert_{op}"
    return convert


for _relax_op, _op in (("relax.add", "add"), ("relax.subtract", "sub"),
                       ("relax.multiply", "mul"), ("relax.divide", "div")):
    converter(_relax_op)(_binary_converter(_op))
