"""Activations, PRelu, element-wise sums and binary ops (Pow with a tensor exponent, the
comparisons and the logic ops among them), and the unary math ops (Sqrt, Rsqrt, Pow with a
constant exponent, Erf, GELU, Exp, Log, Abs, Neg, Not)."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.enums import TRUTH_OPS, CppEnum, Member
from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError

# The SDK's activation functions; relu1 clips to [0, 1].
ACTIVATIONS = CppEnum.sdk_prefixed("Active", "cnmlActiveFunction_t", "activation",
                                   "CNML_ACTIVE_", "relu", "sigmoid", "tanh", "relu6", "relu1")

# Binary has no SDK enum: pz::BinaryLayer picks an SDK op from it and the operands' shapes.
BINARY_OPS = CppEnum("Binary", "", "binary op", (
    Member("add"),
    Member("sub"),
    Member("mul"),
    Member("div"),
    Member("pow"),            # a ** b (ONNX Pow with a tensor exponent)
    *TRUTH_OPS,                       # 1.0 or 0.0: the SDK's bools are floats
))
# The Binary ops whose result is a bool (1.0 or 0.0).
BOOL_BINARY_OPS = tuple(m.value for m in TRUTH_OPS)

# Unary has no SDK enum either: pz::UnaryLayer picks the SDK op (Sqrt, Rsqrt, Power, Erf,
# Gelu, Exp, Log, Abs, Neg) from it. Reciprocal is "pow" with power -1 (the SDK's BasicDiv,
# 1/x, is MLU270/220 only).
UNARY_FUNCTIONS = CppEnum("Unary", "", "unary function", (
    Member("sqrt"),
    Member("rsqrt"),
    Member("pow"),            # x ** power, a constant exponent
    Member("erf"),
    Member("gelu"),          # x/2 (1 + erf(x / sqrt 2))
    Member("gelu_tanh"),  # x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Member("exp"),
    Member("log"),            # natural log; log(0) = -inf, log(x < 0) = nan
    Member("abs"),
    Member("neg"),
    Member("not"),            # 1.0 where x == 0, else 0.0 (nan is true, so not 0)
    Member("sin"),            # radians (rotary position embeddings at run time)
    Member("cos"),
))


@dataclass(frozen=True)
class ActiveAttrs:
    function: str                    # one of ACTIVATIONS


@dataclass(frozen=True)
class BinaryAttrs:
    op: str                          # one of BINARY_OPS; b broadcasts to a


@dataclass(frozen=True)
class UnaryAttrs:
    function: str                    # one of UNARY_FUNCTIONS
    power: float = 1.0               # the exponent of "pow"


@dataclass(frozen=True)
class ClipAttrs:
    lower: float = float("-inf")     # constants; either may be infinite
    upper: float = float("inf")


def clip_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    if any(v != v for v in (attrs["lower"], attrs["upper"])):
        raise ShapeError("Clip bounds must be numbers (nan is not a bound)")
    return inputs[0]


def unary_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    if attrs["function"] not in UNARY_FUNCTIONS:
        raise ShapeError(f"unary function {attrs['function']!r} is not one of "
                         f"{UNARY_FUNCTIONS.values}")
    return inputs[0]


def active_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    if attrs["function"] not in ACTIVATIONS:
        raise ShapeError(f"activation {attrs['function']!r} is not one of {ACTIVATIONS.values}")
    return inputs[0]


def add_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    a, b = inputs
    if a != b:
        raise ShapeError(f"Add needs equal shapes, got {a} and {b}")
    return a


def broadcasts_to(b: Shape, a: Shape) -> bool:
    """b broadcasts to a in one direction (numpy rules, right-aligned): b's rank is at most
    a's and each of b's dims equals a's or is 1."""
    if len(b) > len(a):
        return False
    return all(db in (1, da) for db, da in zip(b, a[len(a) - len(b):]))


def binary_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    a, b = (tuple(s) for s in inputs)
    op = attrs["op"]
    if op not in BINARY_OPS:
        raise ShapeError(f"Binary op {op!r} is not one of {BINARY_OPS.values}")
    if not broadcasts_to(b, a):
        raise ShapeError(f"Binary {op}: b {b} does not broadcast to a {a} (b's rank at most "
                         f"a's, dims right-aligned, each equal to a's or 1)")
    if op == "div" and a != b:
        raise ShapeError(f"Binary div needs equal shapes (the SDK's RealDiv has no broadcast "
                         f"form), got {a} and {b}")
    return a


def prelu_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if len(x) < 2:
        raise ShapeError(f"PRelu needs a channel axis (axis 1), got shape {x}")
    return x


def any_shape(attrs: Attrs, before: tuple[int, ...], after: tuple[int, ...]) -> Attrs:
    """An element-wise function of one input computes the same numbers in any shape."""
    return attrs


ACTIVE = LayerKind(name="Active", shape=active_shape, attrs=ActiveAttrs, through_reshape=any_shape)
ADD = LayerKind(name="Add", shape=add_shape, arity=2)
# attrs {"op": one of BINARY_OPS}; inputs [a, b], b broadcast to a.
BINARY = LayerKind(name="Binary", shape=binary_shape, arity=2, attrs=BinaryAttrs)
# weight "slope" of shape (C,); LeakyRelu is a PRelu with every slope equal to alpha.
PRELU = LayerKind(name="PRelu", shape=prelu_shape, weight_roles=("slope",))
# ONNX Clip with bounds the SDK's activations lack (cosine attention's [1e-12, inf], Max or
# Min with a number): the SDK's Clip op.
CLIP = LayerKind(name="Clip", shape=clip_shape, attrs=ClipAttrs)
# attrs {"function": one of UNARY_FUNCTIONS, "power": the exponent of "pow"}.
UNARY = LayerKind(name="Unary", shape=unary_shape, attrs=UnaryAttrs, through_reshape=any_shape)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (ACTIVE, ADD, BINARY, CLIP, PRELU, UNARY,)
# The enums of this family, written into runtime_cpp/include/paleozoic/enums.h.
ENUMS = (ACTIVATIONS, BINARY_OPS, UNARY_FUNCTIONS)
