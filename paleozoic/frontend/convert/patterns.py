"""Multi-binding forms of TVM's ONNX frontend, found with TVM's dataflow pattern language.

TVM lowers some ONNX operators to several Relax bindings that have one Paleozoic layer:

  LRN   x / (bias + alpha * squeeze(avg_pool3d(expand_dims(x * x))))) ** beta
  Sum   sum(stack((a, b, ...)), axis=0)
  Clip  minimum(maximum(x, lo), hi)   (TIR functions from emit_te)
  GELU  (x * (erf(x / sqrt 2) + 1)) * 0.5   (PyTorch's export of exact GELU: Div, Erf, Add,
        Mul, Mul; either operand order of the Add and Muls)
  GELU (tanh)  0.5 * (x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * (x * (x * x))))))
        (PyTorch's export of approximate="tanh" before opset 20; either operand order)
  LayerNorm  d = x - mean(x); d / sqrt(mean(d ** 2) + eps), optionally * gamma + beta
        (exporters that decompose LayerNormalization: paddle2onnx, PyTorch before opset
        17; the square as d ** 2 or d * d)
  InstanceNorm  (x - mean(x)) / sqrt(variance(x) + eps) over the axes after the channel
        (TVM's lowering of ONNX InstanceNormalization, before its per-channel scale and
        bias, which stay Scale layers; PyTorch exports GroupNorm as Reshape to [N, G, -1],
        this with a unit scale and zero bias, Reshape back, Mul, Add)

Each match is found before the walk. Its root binding (the last one) is converted in one
step by the function registered with @pattern_converter for its kind; the bindings inside
are absorbed. A match is accepted only when nothing outside it reads its inner bindings.
Kinds are tried in the order of _KINDS over the whole function, so a larger form (LayerNorm
with its affine terms) claims its bindings before a smaller one inside it (the bare
LayerNorm) could.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paleozoic.frontend.convert.nodes import vars_read
from paleozoic.frontend.convert.walker import ints


@dataclass(frozen=True)
class Match:
    """One occurrence of a pattern: the operands its converter reads (Relax variables or
    constants) and the attributes it took from the matched calls."""

    kind: str
    root: Any
    inner: tuple[Any, ...]
    operands: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    error: str = ""  # why the matched bindings are not the operator after all


class _Forms:
    """The patterns, built once per import (pattern objects are TVM objects)."""

    def __init__(self, constant: Callable[[Any], np.ndarray | None]) -> None:
        from tvm.relax.dpl import is_call_tir, is_const, is_op, wildcard

        # A matched operand's value when it is a constant parameter (an initializer), else
        # None: TVM keeps initializers as function parameters, not Relax constants.
        self.constant = constant

        # LRN: `x` appears twice, and the pattern language requires both to be one value.
        self.lrn_x = wildcard()
        self.lrn_square = is_op("relax.multiply")(self.lrn_x, self.lrn_x)
        self.lrn_expand = is_op("relax.expand_dims")(self.lrn_square)
        self.lrn_window = is_op("relax.nn.avg_pool3d")(self.lrn_expand)
        self.lrn_squeeze = is_op("relax.squeeze")(self.lrn_window)
        self.lrn_alpha, self.lrn_bias, self.lrn_beta = is_const(), is_const(), is_const()
        self.lrn_scaled = is_op("relax.multiply")(self.lrn_squeeze, self.lrn_alpha)
        self.lrn_biased = is_op("relax.add")(self.lrn_scaled, self.lrn_bias)
        self.lrn_power = is_op("relax.power")(self.lrn_biased, self.lrn_beta)
        self.lrn = is_op("relax.divide")(self.lrn_x, self.lrn_power)

        self.sum_items = wildcard()
        self.sum_stack = is_op("relax.stack")(self.sum_items)
        self.sum = is_op("relax.sum")(self.sum_stack)
        # ONNX Max and Min: TVM stacks the (broadcast) operands and reduces over axis 0.
        self.max_items, self.min_items = wildcard(), wildcard()
        self.max_stack = is_op("relax.stack")(self.max_items)
        self.max_of = is_op("relax.max")(self.max_stack)
        self.min_stack = is_op("relax.stack")(self.min_items)
        self.min_of = is_op("relax.min")(self.min_stack)

        # TVM numbers its TIR functions per shape (maximum, maximum1, ...); the pattern
        # matches the name as a prefix.
        self.clip_x, self.clip_lo, self.clip_hi = wildcard(), wildcard(), wildcard()
        self.clip_max = is_call_tir("maximum", [self.clip_x, self.clip_lo])
        self.clip = is_call_tir("minimum", [self.clip_max, self.clip_hi])

        def either(op: str, a: Any, b: Any) -> Any:
            return is_op(op)(a, b) | is_op(op)(b, a)

        self.gelu_x, self.gelu_root2 = wildcard(), wildcard()
        self.gelu_one, self.gelu_half = wildcard(), wildcard()
        self.gelu_div = is_op("relax.divide")(self.gelu_x, self.gelu_root2)
        self.gelu_erf = is_op("relax.erf")(self.gelu_div)
        self.gelu_add = either("relax.add", self.gelu_erf, self.gelu_one)
        self.gelu_mul = either("relax.multiply", self.gelu_x, self.gelu_add)
        self.gelu = either("relax.multiply", self.gelu_mul, self.gelu_half)

        ln = {name: wildcard() for name in ("x", "two", "eps", "gamma", "beta")}
        self.ln_x, self.ln_two, self.ln_eps = ln["x"], ln["two"], ln["eps"]
        self.ln_gamma, self.ln_beta = ln["gamma"], ln["beta"]
        self.ln_mean = is_op("relax.mean")(ln["x"])
        self.ln_centred = is_op("relax.subtract")(ln["x"], self.ln_mean)
        self.ln_square = (is_op("relax.power")(self.ln_centred, ln["two"])
                          | is_op("relax.multiply")(self.ln_centred, self.ln_centred))
        self.ln_var = is_op("relax.mean")(self.ln_square)
        self.ln_var_eps = either("relax.add", self.ln_var, ln["eps"])
        self.ln_sqrt = is_op("relax.sqrt")(self.ln_var_eps)
        self.ln_norm = is_op("relax.divide")(self.ln_centred, self.ln_sqrt)
        self.ln_scaled = either("relax.multiply", self.ln_norm, ln["gamma"])
        self.layer_norm_affine = either("relax.add", self.ln_scaled, ln["beta"])
        self.layer_norm = self.ln_norm

        inorm = {name: wildcard() for name in ("x", "eps", "gamma", "beta")}
        self.in_x, self.in_eps = inorm["x"], inorm["eps"]
        self.in_gamma, self.in_beta = inorm["gamma"], inorm["beta"]
        self.in_mean = is_op("relax.mean")(inorm["x"])
        self.in_var = is_op("relax.variance")(inorm["x"])
        self.in_var_eps = either("relax.add", self.in_var, inorm["eps"])
        self.in_sqrt = is_op("relax.sqrt")(self.in_var_eps)
        self.in_centred = is_op("relax.subtract")(inorm["x"], self.in_mean)
        self.instance_norm = is_op("relax.divide")(self.in_centred, self.in_sqrt)
        self.in_scaled = either("relax.multiply", self.instance_norm, inorm["gamma"])
        self.instance_norm_affine = either("relax.add", self.in_scaled, inorm["beta"])

        t = {name: wildcard() for name in ("x", "kappa", "beta", "one", "half")}
        self.tanh_x, self.tanh_kappa, self.tanh_beta = t["x"], t["kappa"], t["beta"]
        self.tanh_one, self.tanh_half = t["one"], t["half"]
        self.tanh_square = is_op("relax.multiply")(t["x"], t["x"])
        self.tanh_cube = either("relax.multiply", t["x"], self.tanh_square)
        self.tanh_scaled_cube = either("relax.multiply", t["kappa"], self.tanh_cube)
        self.tanh_sum = either("relax.add", t["x"], self.tanh_scaled_cube)
        self.tanh_inner = either("relax.multiply", t["beta"], self.tanh_sum)
        self.tanh_tanh = is_op("relax.tanh")(self.tanh_inner)
        self.tanh_plus_one = either("relax.add", t["one"], self.tanh_tanh)
        self.tanh_times_x = either("relax.multiply", t["x"], self.tanh_plus_one)
        self.gelu_tanh = either("relax.multiply", t["half"], self.tanh_times_x)


Found = dict[Any, Any]          # pattern -> the expression it matched
VarOf = Callable[[Any], Any]     # a matched value -> the variable bound to it
Read = tuple[dict[str, Any], dict[str, Any]]  # a match's operands and attributes


class PatternError(ValueError):
    """Bindings have the form of a pattern but not its parameters (the message says why)."""


def find_matches(func: Any, relax: Any,
                 constant: Callable[[Any], np.ndarray | None] = lambda var: None
                 ) -> dict[Any, Match]:
    """Every binding variable that belongs to a match, mapped to the match. `constant`
    gives a parameter's value when it is a constant (None otherwise)."""
    forms = _Forms(constant)
    bound: dict[Any, Any] = {}
    var_of_value: dict[Any, Any] = {}
    readers: dict[Any, int] = {}
    for block in func.body.blocks:
        for binding in block.bindings:
            bound[binding.var] = binding.value
            var_of_value[binding.value] = binding.var
            for var in vars_read(binding.value, relax):
                readers[var] = readers.get(var, 0) + 1
    for var in vars_read(func.body.body, relax):
        readers[var] = readers.get(var, 0) + 1

    from tvm.relax.analysis import get_var2val
    var2val = get_var2val(func)

    def var_of(expr: Any) -> Any:
        # The matcher follows bindings, so it reports a bound value, not its variable.
        return var_of_value.get(expr, expr)

    matches: dict[Any, Match] = {}
    for kind, (root, inner_patterns, read) in _KINDS.items():
        for var, value in bound.items():
            if var in matches:
                continue
            found = getattr(forms, root).extract_matched_expr(value, var2val)
            if found is None:
                continue
            inner = tuple(dict.fromkeys(var_of(found[getattr(forms, p)])
                                        for p in inner_patterns if getattr(forms, p) in found))
            # An inner value read outside the match is needed as a tensor of its own: no
            # match. (One read inside it more than once, LayerNorm's x - mean, is fine.)
            inside: dict[Any, int] = {}
            for member in (*inner, var):
                for read_var in vars_read(bound.get(member), relax) if member in bound else ():
                    inside[read_var] = inside.get(read_var, 0) + 1
            if any(v not in bound or readers.get(v, 0) != inside.get(v, 0) or v in matches
                   for v in inner):
                continue
            try:
                read_result = read(forms, found, var_of)
                if read_result is None:  # the form, but other constants: not this operator
                    continue
                operands, attrs = read_result
                match = Match(kind, var, inner, operands, attrs)
            except PatternError as err:  # raised by the walker, which knows the node
                match = Match(kind, var, inner, error=str(err))
            for member in (*inner, var):
                matches[member] = match
    return matches


def _read_lrn(forms: _Forms, found: Found, var_of: VarOf) -> Read:
    window = found[forms.lrn_window].attrs
    size, rest = ints(window.pool_size)[0], ints(window.pool_size)[1:]
    half = size // 2
    geometry_ok = (
        rest == [1, 1] and ints(window.strides) == [1, 1, 1]
        and ints(window.dilation) == [1, 1, 1] and not window.ceil_mode
        and bool(window.count_include_pad) and size % 2 == 1
        and ints(window.padding) == [half, 0, 0, half, 0, 0]
        and ints(found[forms.lrn_expand].attrs.axis) == [1]
        and ints(found[forms.lrn_squeeze].attrs.axis or []) == [1])
    if not geometry_ok:
        raise PatternError(
            f"has the form of TVM's LRN decomposition but its channel window is not LRN's "
            f"(avg_pool3d pool_size {ints(window.pool_size)}, strides {ints(window.strides)}, "
            f"padding {ints(window.padding)}, count_include_pad {bool(window.count_include_pad)}"
            f"; LRN averages a centred, zero-padded window of channels): this TVM lowers LRN "
            f"unlike the one Paleozoic supports")
    attrs = {"size": size, **{name: _scalar(found[getattr(forms, f"lrn_{name}")])
                              for name in ("alpha", "beta", "bias")}}
    return {"x": var_of(found[forms.lrn_x])}, attrs


def _read_sum(forms: _Forms, found: Found, var_of: VarOf) -> Read:
    total, stack = found[forms.sum].attrs, found[forms.sum_stack].attrs
    if int(stack.axis) != 0 or total.axis is None or ints(total.axis) != [0] \
            or total.keepdims:
        raise PatternError("stack then sum is supported as ONNX Sum only (stack on "
                           "axis 0, sum over axis 0 without keepdims)")
    items = found[forms.sum_items]
    fields = list(getattr(items, "fields", [items]))
    return {f"item{i}": var_of(f) for i, f in enumerate(fields)}, {"count": len(fields)}


def _stacked_reader(which: str) -> Callable[[_Forms, Found, VarOf], Read]:
    """ONNX Max / Min of n operands: TVM's stack on axis 0 and reduction over axis 0."""
    def read(forms: _Forms, found: Found, var_of: VarOf) -> Read:
        total = found[getattr(forms, f"{which}_of")].attrs
        stack = found[getattr(forms, f"{which}_stack")].attrs
        if int(stack.axis) != 0 or total.axis is None or ints(total.axis) != [0] \
                or total.keepdims:
            raise PatternError(f"stack then {which} is supported as ONNX "
                               f"{which.capitalize()} only (stack on axis 0, {which} over "
                               f"axis 0 without keepdims)")
        items = found[getattr(forms, f"{which}_items")]
        fields = list(getattr(items, "fields", [items]))
        return {f"item{i}": var_of(f) for i, f in enumerate(fields)}, {"count": len(fields)}
    return read


def _read_clip(forms: _Forms, found: Found, var_of: VarOf) -> Read:
    return ({"x": var_of(found[forms.clip_x]), "lo": var_of(found[forms.clip_lo]),
             "hi": var_of(found[forms.clip_hi])}, {})


def _constants_are(forms: _Forms, found: Found, var_of: VarOf,
                   expected: dict[str, float]) -> bool:
    """The matched operands named `expected` (pattern attributes) are scalar constants of
    those values (to float32 rounding)."""
    values = [forms.constant(var_of(found[getattr(forms, name)])) for name in expected]
    if any(v is None or np.size(v) != 1 for v in values):
        return False
    return bool(np.allclose([float(np.asarray(v).reshape(-1)[0]) for v in values],
                            list(expected.values()), rtol=1e-6, atol=0.0))


def _read_gelu(forms: _Forms, found: Found, var_of: VarOf) -> Read | None:
    if not _constants_are(forms, found, var_of,
                          {"gelu_root2": np.sqrt(2.0), "gelu_one": 1.0, "gelu_half": 0.5}):
        return None
    return {"x": var_of(found[forms.gelu_x])}, {}


def _read_gelu_tanh(forms: _Forms, found: Found, var_of: VarOf) -> Read | None:
    if not _constants_are(forms, found, var_of, {
            "tanh_kappa": 0.044715, "tanh_beta": np.sqrt(2.0 / np.pi), "tanh_one": 1.0,
            "tanh_half": 0.5}):
        return None
    return {"x": var_of(found[forms.tanh_x])}, {}


def _layer_norm_reader(affine: bool) -> Callable[[_Forms, Found, VarOf], Read | None]:
    def read(forms: _Forms, found: Found, var_of: VarOf) -> Read | None:
        means = [found[forms.ln_mean].attrs, found[forms.ln_var].attrs]
        if not all(m.keepdims for m in means) or ints(means[0].axis or []) != \
                ints(means[1].axis or []) or not means[0].axis:
            return None
        if forms.ln_two in found and not _constants_are(forms, found, var_of,
                                                        {"ln_two": 2.0}):
            return None
        eps = forms.constant(var_of(found[forms.ln_eps]))
        if eps is None or np.size(eps) != 1:
            return None
        operands = {"x": var_of(found[forms.ln_x])}
        if affine:
            operands.update(gamma=var_of(found[forms.ln_gamma]),
                            beta=var_of(found[forms.ln_beta]))
        return operands, {"axes": ints(means[0].axis),
                          "epsilon": float(np.asarray(eps).reshape(-1)[0])}
    return read


def _instance_norm_reader(affine: bool) -> Callable[[_Forms, Found, VarOf], Read | None]:
    def read(forms: _Forms, found: Found, var_of: VarOf) -> Read | None:
        """The mean and the variance over one run of axes, kept; epsilon a scalar
        constant. The converter checks the axes are the ones after the channel axis."""
        mean, var = found[forms.in_mean].attrs, found[forms.in_var].attrs
        axes = ints(mean.axis or [])
        if not (mean.keepdims and var.keepdims and axes and axes == ints(var.axis or [])):
            return None
        eps = forms.constant(var_of(found[forms.in_eps]))
        if eps is None:  # TVM writes InstanceNormalization's epsilon as a Relax constant
            eps = _constant_value(found[forms.in_eps])
        if eps is None or np.size(eps) != 1:
            return None
        operands = {"x": var_of(found[forms.in_x])}
        if affine:
            operands.update(gamma=var_of(found[forms.in_gamma]),
                            beta=var_of(found[forms.in_beta]))
        return operands, {"axes": axes, "epsilon": float(np.asarray(eps).reshape(-1)[0])}
    return read


_IN_INNER = ("in_mean", "in_var", "in_var_eps", "in_sqrt", "in_centred")
_LN_INNER = ("ln_mean", "ln_centred", "ln_square", "ln_var", "ln_var_eps")

# kind -> (root pattern, the inner patterns whose bindings the match absorbs, reader);
# tried in this order (larger forms first).
_KINDS: dict[str, tuple[str, tuple[str, ...], Callable[[_Forms, Found, VarOf], Read | None]]] = {
    "layer_norm_affine": ("layer_norm_affine",
                          (*_LN_INNER, "ln_sqrt", "ln_norm", "ln_scaled"),
                          _layer_norm_reader(affine=True)),
    "layer_norm": ("layer_norm", (*_LN_INNER, "ln_sqrt"), _layer_norm_reader(affine=False)),
    "instance_norm_affine": ("instance_norm_affine",
                             (*_IN_INNER, "instance_norm", "in_scaled"),
                             _instance_norm_reader(affine=True)),
    "instance_norm": ("instance_norm", _IN_INNER, _instance_norm_reader(affine=False)),
    "lrn": ("lrn", ("lrn_square", "lrn_expand", "lrn_window", "lrn_squeeze", "lrn_scaled",
                    "lrn_biased", "lrn_power"), _read_lrn),
    "sum": ("sum", ("sum_stack",), _read_sum),
    "max": ("max_of", ("max_stack",), _stacked_reader("max")),
    "min": ("min_of", ("min_stack",), _stacked_reader("min")),
    "clip": ("clip", ("clip_max",), _read_clip),
    "gelu": ("gelu", ("gelu_div", "gelu_erf", "gelu_add", "gelu_mul"), _read_gelu),
    "gelu_tanh": ("gelu_tanh", ("tanh_square", "tanh_cube", "tanh_scaled_cube", "tanh_sum",
                                "tanh_inner", "tanh_tanh", "tanh_plus_one", "tanh_times_x"),
                  _read_gelu_tanh),
}


def _constant_value(expr: Any) -> np.ndarray | None:
    """A Relax constant's value (None for anything else)."""
    data = getattr(expr, "value", None)
    data = data if data is not None else getattr(expr, "data", None)
    return np.asarray(data.numpy()) if hasattr(data, "numpy") else None


def _scalar(constant: Any) -> float:
    value = _constant_value(constant)
    assert value is not None, f"not a Relax constant: {constant!r}"
    return float(value.reshape(-1)[0])
