"""Converters of activations (Clip's bounds arrive as TIR maximum/minimum),
PRelu / LeakyRelu, and the unary math ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from paleozoic.frontend.convert.patterns import (
    Dpl, Forms, Found, Match, PatternError, Read, VarOf, constants_are, stacked_items,
)
from paleozoic.frontend.convert.elementwise.arithmetic import binary_layer
from paleozoic.frontend.convert.registry import (
    OnnxOp,
    converter,
    onnx_ops,
    pattern_converter,
    tir_converter,
)
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker, act_of, ints, scalar

onnx_ops({
    "Relu": OnnxOp("Active"),
    "Sigmoid": OnnxOp("Active"),
    "Tanh": OnnxOp("Active"),
    "Clip": OnnxOp("Active (relu, relu1 or relu6 bounds), else Clip (the SDK's Clip op)",
                   parameters=(1, 2)),
    "Max": OnnxOp("Clip (of an activation and a number)"),
    "Min": OnnxOp("Clip (of an activation and a number)"),
    "HardSigmoid": OnnxOp("Scale + Active relu1"),
    "HardSwish": OnnxOp("Scale + Active relu6 + Binary"),
    "LeakyRelu": OnnxOp("PRelu"),
    "PRelu": OnnxOp("PRelu", weights=(1,)),
    "Erf": OnnxOp("Unary erf"),
    "Gelu": OnnxOp("Unary gelu or gelu_tanh"),
    "Sqrt": OnnxOp("Unary sqrt"),
    # The exponent is not a constant slot: a run-time tensor exponent is a Binary pow.
    "Pow": OnnxOp("Unary pow (a constant scalar exponent) or Binary pow (a tensor exponent)"),
    "Exp": OnnxOp("Unary exp"),
    "Log": OnnxOp("Unary log"),
    "Sin": OnnxOp("Unary sin (CNML's Sin)"),
    "Cos": OnnxOp("Unary cos (CNML's Cos)"),
    "Abs": OnnxOp("Unary abs"),
    "Neg": OnnxOp("Unary neg"),
    "Reciprocal": OnnxOp("Unary pow (power -1)"),
})


def unary(w: Walker, x: Value, function: str, power: float = 1.0) -> Value:
    attrs: dict[str, Any] = {"function": function}
    if function == "pow":
        attrs["power"] = power
    return w.emit("Unary", [act_of(w, x)], attrs, part=function)


def _unary_converter(function: str) -> Callable[[Walker, Any, list[Value]], Value]:
    def convert(w: Walker, call: Any, args: list[Value]) -> Value:
        return unary(w, args[0], function)

    convert.__name__ = f"convert_{function}"
    return convert


def _register_unary_converters() -> None:
    """The one-input Relax operators that are one Unary layer each."""
    for relax_op, function in (("relax.erf", "erf"), ("relax.nn.gelu", "gelu"),
                               ("relax.nn.gelu_tanh", "gelu_tanh"), ("relax.sqrt", "sqrt"),
                               ("relax.rsqrt", "rsqrt"), ("relax.exp", "exp"),
                               ("relax.log", "log"), ("relax.abs", "abs"),
                               ("relax.negative", "neg"), ("relax.sin", "sin"),
                               ("relax.cos", "cos")):
        converter(relax_op)(_unary_converter(function))


_register_unary_converters()


def _gelu_form(dpl: Dpl) -> dict[str, Any]:
    """PyTorch's export of exact GELU: Div, Erf, Add, Mul, Mul (either operand order of the
    Add and the Muls)."""
    p = {name: dpl.wildcard() for name in ("x", "root2", "one", "half")}
    p["div"] = dpl.is_op("relax.divide")(p["x"], p["root2"])
    p["erf"] = dpl.is_op("relax.erf")(p["div"])
    p["add"] = dpl.either("relax.add", p["erf"], p["one"])
    p["mul"] = dpl.either("relax.multiply", p["x"], p["add"])
    p["root"] = dpl.either("relax.multiply", p["mul"], p["half"])
    return p


def _x_if_constants(expected: dict[str, float]) -> Callable[[Forms, Found, VarOf], Read | None]:
    """A reader of a one-input form whose other operands must be these constants (else the
    bindings are another computation of the same shape)."""
    def read(forms: Forms, found: Found, var_of: VarOf) -> Read | None:
        if not constants_are(forms, found, var_of, expected):
            return None
        return {"x": var_of(found[forms.x])}, {}
    return read


def _gelu_tanh_form(dpl: Dpl) -> dict[str, Any]:
    """PyTorch's export of GELU(approximate="tanh") before opset 20: 0.5 * (x * (1 +
    tanh(sqrt(2/pi) * (x + 0.044715 * (x * (x * x)))))), either operand order."""
    p = {name: dpl.wildcard() for name in ("x", "kappa", "beta", "one", "half")}
    p["square"] = dpl.is_op("relax.multiply")(p["x"], p["x"])
    p["cube"] = dpl.either("relax.multiply", p["x"], p["square"])
    p["scaled_cube"] = dpl.either("relax.multiply", p["kappa"], p["cube"])
    p["sum"] = dpl.either("relax.add", p["x"], p["scaled_cube"])
    p["inner"] = dpl.either("relax.multiply", p["beta"], p["sum"])
    p["tanh"] = dpl.is_op("relax.tanh")(p["inner"])
    p["plus_one"] = dpl.either("relax.add", p["one"], p["tanh"])
    p["times_x"] = dpl.either("relax.multiply", p["x"], p["plus_one"])
    p["root"] = dpl.either("relax.multiply", p["half"], p["times_x"])
    return p


@pattern_converter("gelu", form=_gelu_form, root="root", inner=("div", "erf", "add", "mul"),
                   read=_x_if_constants({"root2": np.sqrt(2.0), "one": 1.0, "half": 0.5}))
def convert_gelu_pattern(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    """PyTorch's exact GELU, x * (1 + erf(x / sqrt 2)) * 0.5: one layer."""
    return unary(w, operands["x"], "gelu")


@pattern_converter("gelu_tanh", form=_gelu_tanh_form, root="root",
                   inner=("square", "cube", "scaled_cube", "sum", "inner", "tanh", "plus_one",
                          "times_x"),
                   read=_x_if_constants({"kappa": 0.044715, "beta": np.sqrt(2.0 / np.pi),
                                         "one": 1.0, "half": 0.5}))
def convert_gelu_tanh_pattern(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    """PyTorch's tanh GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): one layer."""
    return unary(w, operands["x"], "gelu_tanh")


@converter("relax.power")
def convert_power(w: Walker, call: Any, args: list[Value]) -> Value:
    x, exponent = args
    if isinstance(x, Act) and isinstance(exponent, Act):
        return binary_layer(w, "pow", x, exponent)
    if not isinstance(x, Act) or not isinstance(exponent, Const):
        raise w.fail("Pow is supported with an activation base and a constant or run-time "
                     "exponent")
    if np.asarray(exponent.value).size != 1:
        values = np.unique(np.asarray(exponent.value, dtype=np.float64))
        if values.size != 1:
            # The SDK's Pow reads its exponent as an activation; a constant tensor is no
            # layer's output here (no constant-producing layer), so it cannot be one.
            raise w.fail(f"Pow with a constant exponent of shape {exponent.value.shape} "
                         f"holding different values: a constant exponent must be one "
                         f"number (give a tensor exponent as a run-time input)")
        exponent = Const(values.reshape(()))
    power = scalar(w, exponent, "Pow's exponent")
    if power == 1.0:
        return x
    # x^0.5 and x^-0.5 are the SDK's Sqrt and Rsqrt (one correctly rounded op each).
    if power == 0.5:
        return unary(w, x, "sqrt")
    if power == -0.5:
        return unary(w, x, "rsqrt")
    return unary(w, x, "pow", power)


@converter("relax.nn.relu")
def convert_relu(w: Walker, call: Any, args: list[Value]) -> Value:
    return w.emit("Active", [act_of(w, args[0])], {"function": "relu"}, part="relu")


@converter("relax.sigmoid")
def convert_sigmoid(w: Walker, call: Any, args: list[Value]) -> Value:
    return w.emit("Active", [act_of(w, args[0])], {"function": "sigmoid"}, part="sigmoid")


@converter("relax.tanh")
def convert_tanh(w: Walker, call: Any, args: list[Value]) -> Value:
    return w.emit("Active", [act_of(w, args[0])], {"function": "tanh"}, part="tanh")


# The SDK's bounded activations: Clip becomes one of these or is refused.
_CLIP_FUNCTIONS = {(0.0, float("inf")): "relu", (0.0, 1.0): "relu1", (0.0, 6.0): "relu6"}


def clip_layer(w: Walker, x: Act, lo: float, hi: float) -> Act:
    """An activation's bounds as the SDK's activation that has them, else its Clip op."""
    function = _CLIP_FUNCTIONS.get((float(lo), float(hi)))
    if function is None:
        if np.isnan(lo) or np.isnan(hi):
            raise w.fail(f"Clip to [{lo:g}, {hi:g}]: a nan bound is not a bound")
        # float32 bounds, as ONNX's min and max tensors hold them
        return w.emit("Clip", [x], {"lower": float(np.float32(lo)),
                                    "upper": float(np.float32(hi))}, part="clip")
    return w.emit("Active", [x], {"function": function}, part=function)


def _bound_of(w: Walker, match: Match, operands: dict[str, Value], which: str,
              pick: Callable[[list[float]], float]) -> tuple[Act, float]:
    """ONNX Max / Min of one activation and numbers (TVM broadcasts each number to the
    activation's shape: a constant holding one value): the activation and the bound."""
    items = [operands[f"item{i}"] for i in range(match.attrs["count"])]
    acts = [item for item in items if isinstance(item, Act)]
    values = [np.unique(np.asarray(item.value)) for item in items if isinstance(item, Const)]
    if len(acts) != 1 or not values or any(v.size != 1 for v in values):
        raise w.fail(f"{which} is supported of one activation and single numbers (the SDK's "
                     f"Clip); of two run-time tensors, or of a constant tensor of several "
                     f"values, it is not")
    bound = pick([float(v[0]) for v in values])
    if np.isnan(bound):
        raise w.fail(f"{which} with nan: every result would be nan")
    return acts[0], bound


def _stacked_form(reduction: str) -> Callable[[Dpl], dict[str, Any]]:
    """ONNX Max / Min of n operands: TVM stacks the (broadcast) operands on axis 0 and
    reduces over axis 0."""
    def form(dpl: Dpl) -> dict[str, Any]:
        p = {"items": dpl.wildcard()}
        p["stack"] = dpl.is_op("relax.stack")(p["items"])
        p["root"] = dpl.is_op(reduction)(p["stack"])
        return p
    return form


def _stacked_reader(which: str) -> Callable[[Forms, Found, VarOf], Read]:
    def read(forms: Forms, found: Found, var_of: VarOf) -> Read:
        total, stack = found[forms.root].attrs, found[forms.stack].attrs
        if int(stack.axis) != 0 or total.axis is None or ints(total.axis) != [0] \
                or total.keepdims:
            raise PatternError(f"stack then {which} is supported as ONNX "
                               f"{which.capitalize()} only (stack on axis 0, {which} over "
                               f"axis 0 without keepdims)")
        items = stacked_items(found, forms.items, var_of)
        return items, {"count": len(items)}
    return read


@pattern_converter("max", form=_stacked_form("relax.max"), root="root", inner=("stack",),
                   read=_stacked_reader("max"))
def convert_max(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    x, bound = _bound_of(w, match, operands, "Max", max)
    return clip_layer(w, x, bound, float("inf"))


@pattern_converter("min", form=_stacked_form("relax.min"), root="root", inner=("stack",),
                   read=_stacked_reader("min"))
def convert_min(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    x, bound = _bound_of(w, match, operands, "Min", min)
    return clip_layer(w, x, float("-inf"), bound)


@converter("relax.clip")
def convert_clip(w: Walker, call: Any, args: list[Value]) -> Value:
    x, lo, hi = args
    if not isinstance(x, Act) or not isinstance(lo, Const) or not isinstance(hi, Const):
        raise w.fail("clip is supported on an activation with constant bounds")
    return clip_layer(w, x, scalar(w, lo, "clip's lower bound"),
                      scalar(w, hi, "clip's upper bound"))


@converter("relax.nn.leakyrelu")
def convert_leakyrelu(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    shape = w.tensors[x.name].shape
    if len(shape) < 2:
        raise w.fail("LeakyRelu needs an input with a channel axis")
    slope = np.full(shape[1], float(call.attrs.alpha), dtype=np.float32)
    return w.emit("PRelu", [x], {}, {"slope": slope}, part="leakyrelu")


@converter("relax.nn.prelu")
def convert_prelu(w: Walker, call: Any, args: list[Value]) -> Value:
    x, slope = args
    if not isinstance(x, Act) or not isinstance(slope, Const):
        raise w.fail("PRelu is supported with a constant slope")
    shape = w.tensors[x.name].shape
    if len(shape) < 2:
        raise w.fail("PRelu needs an input with a channel axis (axis 1)")
    # TVM hands a 1-D slope and its axis: (C,) on axis 1, or one shared value.
    values = np.asarray(slope.value, dtype=np.float32).reshape(-1)
    if values.size == 1:
        per_channel = np.full(shape[1], values[0], dtype=np.float32)
    elif int(call.attrs.axis) % len(shape) == 1 and values.size == shape[1]:
        per_channel = values
    else:
        raise w.fail(f"PRelu slope of shape {slope.value.shape} on axis {call.attrs.axis} "
                     f"is not per-channel")
    return w.emit("PRelu", [x], {}, {"slope": per_channel}, part="prelu")


_OPSET_6_CLIP = ("opset-6 Clip with min/max attributes is not supported: re-export at "
                 "opset 11+")


@tir_converter("maximum")
def convert_tir_maximum(w: Walker, call: Any, args: list[Value]) -> Value:
    """Clip with a lower bound only (Clip with both bounds is the "clip" pattern)."""
    if len(args) != 2 or not isinstance(args[0], Act) or not isinstance(args[1], Const):
        raise w.fail(f"maximum is supported as Clip's lower bound (a constant operand; "
                     f"{_OPSET_6_CLIP})")
    return clip_layer(w, args[0], scalar(w, args[1], "Clip's lower bound"), float("inf"))


@tir_converter("minimum")
def convert_tir_minimum(w: Walker, call: Any, args: list[Value]) -> Value:
    """Clip with an upper bound only."""
    if len(args) != 2 or not isinstance(args[0], Act) or not isinstance(args[1], Const):
        raise w.fail(f"minimum is supported as Clip's upper bound (a constant operand; "
                     f"{_OPSET_6_CLIP})")
    return clip_layer(w, args[0], float("-inf"), scalar(w, args[1], "Clip's upper bound"))


def _clip_form(dpl: Dpl) -> dict[str, Any]:
    """Clip with both bounds, which TVM emits as TIR functions (emit_te), numbered per shape
    (maximum, maximum1, ...): the pattern matches the name as a prefix."""
    p = {name: dpl.wildcard() for name in ("x", "lo", "hi")}
    p["max"] = dpl.is_call_tir("maximum", [p["x"], p["lo"]])
    p["root"] = dpl.is_call_tir("minimum", [p["max"], p["hi"]])
    return p


def _read_clip(forms: Forms, found: Found, var_of: VarOf) -> Read:
    return {name: var_of(found[getattr(forms, name)]) for name in ("x", "lo", "hi")}, {}


@pattern_converter("clip", form=_clip_form, root="root", inner=("max",), read=_read_clip)
def convert_clip_pattern(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    x, lo, hi = operands["x"], operands["lo"], operands["hi"]
    if not isinstance(x, Act) or not isinstance(lo, Const) or not isinstance(hi, Const):
        raise w.fail(f"Clip is supported on an activation with constant bounds "
                     f"({_OPSET_6_CLIP})")
    return clip_layer(w, x, scalar(w, lo, "Clip's lower bound"),
                      scalar(w, hi, "Clip's upper bound"))
