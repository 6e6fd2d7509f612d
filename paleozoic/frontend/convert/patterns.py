"""Multi-binding forms of TVM's ONNX frontend, found with TVM's dataflow pattern language.

TVM lowers some ONNX operators to several Relax bindings that have one Paleozoic layer
(PyTorch's exact GELU as Div, Erf, Add, Mul, Mul, for one). Each such form is registered
with its converter, in the family module of the layer it becomes (@pattern_converter: the
form's patterns, its root and inner bindings, and a reader of its operands and attributes).

Each match is found before the walk. Its root binding (the last one) is converted in one
step by the kind's converter; the bindings inside are absorbed. A match is accepted only
when nothing outside it reads its inner bindings. Larger forms are tried first over the whole
function (more inner bindings, then the kind's name), so a normalisation with its affine
terms claims its bindings before the bare normalisation inside it could.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paleozoic.frontend.convert.nodes import vars_read
from paleozoic.frontend.convert.registry import PATTERNS


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


class Dpl:
    """TVM's dataflow pattern constructors, as a form builds with them (imported when a
    model is parsed, not when Paleozoic is)."""

    def __init__(self) -> None:
        from tvm.relax.dpl import is_call_tir, is_const, is_op, wildcard

        self.is_call_tir, self.is_const, self.is_op, self.wildcard = \
            is_call_tir, is_const, is_op, wildcard

    def either(self, op: str, a: Any, b: Any) -> Any:
        """`op` of a and b in either order (a commutative operator's exporters differ)."""
        return self.is_op(op)(a, b) | self.is_op(op)(b, a)


class Forms:
    """One form's patterns by name (`forms.x`, `forms.root`, ...) and `constant`, a matched
    operand's value when it is a constant parameter (an initializer), else None: TVM keeps
    initializers as function parameters, not Relax constants."""

    def __init__(self, patterns: dict[str, Any],
                 constant: Callable[[Any], np.ndarray | None]) -> None:
        self.patterns = patterns
        self.constant = constant

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["patterns"][name]
        except KeyError:
            raise AttributeError(name) from None


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
    dpl = Dpl()
    built: dict[Callable[[Any], dict[str, Any]], Forms] = {}
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
    for kind, pattern in sorted(PATTERNS.items(), key=lambda item: (-len(item[1].inner),
                                                                     item[0])):
        if pattern.form not in built:
            built[pattern.form] = Forms(pattern.form(dpl), constant)
        forms = built[pattern.form]
        for var, value in bound.items():
            if var in matches:
                continue
            found = getattr(forms, pattern.root).extract_matched_expr(value, var2val)
            if found is None:
                continue
            inner = tuple(dict.fromkeys(var_of(found[getattr(forms, p)])
                                        for p in pattern.inner if getattr(forms, p) in found))
            # An inner value read outside the match is needed as a tensor of its own: no
            # match. (One read inside it more than once, a normalisation's x - mean, is fine.)
            inside: dict[Any, int] = {}
            for member in (*inner, var):
                for read_var in vars_read(bound.get(member), relax) if member in bound else ():
                    inside[read_var] = inside.get(read_var, 0) + 1
            if any(v not in bound or readers.get(v, 0) != inside.get(v, 0) or v in matches
                   for v in inner):
                continue
            try:
                read_result = pattern.read(forms, found, var_of)
                if read_result is None:  # the form, but other constants: not this operator
                    continue
                operands, attrs = read_result
                match = Match(kind, var, inner, operands, attrs)
            except PatternError as err:  # raised by the walker, which knows the node
                match = Match(kind, var, inner, error=str(err))
            for member in (*inner, var):
                matches[member] = match
    return matches


def constant_value(expr: Any) -> np.ndarray | None:
    """A Relax constant's value (None for anything else)."""
    data = getattr(expr, "value", None)
    data = data if data is not None else getattr(expr, "data", None)
    return np.asarray(data.numpy()) if hasattr(data, "numpy") else None


def scalar(constant: Any) -> float:
    value = constant_value(constant)
    assert value is not None, f"not a Relax constant: {constant!r}"
    return float(value.reshape(-1)[0])


def constants_are(forms: Forms, found: Found, var_of: VarOf, expected: dict[str, float]) -> bool:
    """The matched operands named `expected` are scalar constants of those values (to
    float32 rounding)."""
    values = [forms.constant(var_of(found[getattr(forms, name)])) for name in expected]
    if any(v is None or np.size(v) != 1 for v in values):
        return False
    return bool(np.allclose([float(np.asarray(v).reshape(-1)[0]) for v in values],
                            list(expected.values()), rtol=1e-6, atol=0.0))


def stacked_items(found: Found, items: Any, var_of: VarOf) -> dict[str, Any]:
    """The operands of a stack (TVM's lowering of ONNX Sum, Max and Min) as item0, item1..."""
    fields = list(getattr(found[items], "fields", [found[items]]))
    return {f"item{i}": var_of(f) for i, f in enumerate(fields)}
