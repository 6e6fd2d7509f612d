"""The converter tables: which function converts each Relax operator (each TIR primitive
TVM's frontend lowers straight to call_tir, each multi-binding pattern with its form),
filled by the decorators below as the family modules of this package are imported (the
shape of TVM's own converter table).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Callable

ConverterFn = Callable[[Any, Any, list[Any]], Any]   # (walker, call, args) -> value

CONVERTERS: dict[str, ConverterFn] = {}
TIR_CONVERTERS: dict[str, ConverterFn] = {}


def _register(table: dict[str, ConverterFn], op: str) -> Callable[[ConverterFn], ConverterFn]:
    def add(fn: ConverterFn) -> ConverterFn:
        if op in table:
            raise ValueError(f"{op} has two converters: {table[op].__name__} and "
                             f"{fn.__name__}")
        table[op] = fn
        return fn
    return add


# The Relax operators whose converters take held-back values (a bool mask, a device
# comparison's result, a step of an index wrap: values with a `materialize` method) as they
# are; every other converter gets them materialized into layers' tensors first.
TAKES_HELD: set[str] = set()


def converter(relax_op: str, held: bool = False) -> Callable[[ConverterFn], ConverterFn]:
    """Registers the decorated function as the converter of `relax_op` ("relax.nn.conv2d");
    `held`: it reads held-back values itself (TAKES_HELD)."""
    if held:
        TAKES_HELD.add(relax_op)
    return _register(CONVERTERS, relax_op)


def tir_converter(primitive: str) -> Callable[[ConverterFn], ConverterFn]:
    """Registers the decorated function for call_tir of `primitive` ("maximum")."""
    return _register(TIR_CONVERTERS, primitive)


# (walker, match, operands) -> value; operands are the match's operands as walk values.
PatternConverterFn = Callable[[Any, Any, dict[str, Any]], Any]


@dataclass(frozen=True)
class Pattern:
    """A form in which TVM lowers one operator to several Relax bindings that are one layer
    (patterns.py finds them before the walk)."""

    # Builds the form's dataflow patterns by name from patterns.Dpl (TVM's constructors);
    # one build serves every kind that shares the form function.
    form: Callable[[Any], dict[str, Any]]
    root: str                       # the pattern of the last binding, where it converts
    inner: tuple[str, ...]          # the patterns whose bindings the match absorbs
    # (patterns.Forms, found, var_of) -> (operands, attributes), or None when the bindings
    # have the form with other constants (not this operator); PatternError when they have
    # the form but parameters Paleozoic cannot map.
    read: Callable[[Any, Any, Any], Any]
    convert: PatternConverterFn     # called at the root binding with the match's operands


PATTERNS: dict[str, Pattern] = {}


def pattern_converter(kind: str, *, form: Callable[[Any], dict[str, Any]], root: str,
                      inner: tuple[str, ...], read: Callable[[Any, Any, Any], Any]
                      ) -> Callable[[PatternConverterFn], PatternConverterFn]:
    """Registers the pattern `kind` (its form, root, inner bindings and reader) with the
    decorated function as its converter."""
    def add(fn: PatternConverterFn) -> PatternConverterFn:
        if kind in PATTERNS:
            raise ValueError(f"pattern {kind} has two converters: "
                             f"{PATTERNS[kind].convert.__name__} and {fn.__name__}")
        PATTERNS[kind] = Pattern(form, root, inner, read, fn)
        return fn
    return add


@dataclass(frozen=True)
class OnnxNode:
    """One ONNX node as an operator's check hook sees it, before TVM parses the graph."""

    node: Any                        # onnx.NodeProto
    attrs: dict[str, Any]            # attribute name -> value
    constants: Mapping[str, Any]     # initializers and Constant outputs (onnx.TensorProto)
    consumed: frozenset[str]         # every tensor a node or the graph's outputs read


def attr_text(value: object) -> str:
    """An attribute value as a check's message quotes it."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class OnnxOp:
    """What the frontend does with one ONNX operator."""

    becomes: str                        # the layer kinds it becomes (messages and docs)
    # Input slots holding float32 weights the layer stores (checked for dtype, frozen by
    # the backend when given as graph inputs).
    weights: tuple[int, ...] = ()
    # Other input slots that must be constant once shapes are fixed (Resize scales, Clip
    # bounds, Dropout ratio): read at compile time, never a run-time tensor.
    parameters: tuple[int, ...] = ()
    # Attribute values and operands the frontend cannot map faithfully, checked on the ONNX
    # node before TVM parses the graph (frontend.attribute_checks): each problem a sentence
    # without the node's name, which the caller prefixes. Each rule exists because TVM's
    # frontend refuses the value naming no node, or converts it into something that
    # computes a different answer (tests/robustness/test_attribute_checks.py probes them).
    check: Callable[[OnnxNode], list[str]] | None = None
    # Adjusts the copy of the node TVM parses, where TVM's frontend would convert the node
    # as it is into something else; the operator's converter undoes it from the node.
    tvm_form: Callable[[Any], None] | None = None
    # For an operator TVM's frontend has no converter for: reads the node (onnx.NodeProto,
    # its NodeInfo, an onnx_level.OnnxReader, the model's name) into an onnx_level.Cut, and
    # the node is converted from ONNX beside TVM (paleozoic.frontend.beside_tvm).
    cut: Callable[[Any, Any, Any, str], Any] | None = None
    # The operator in float64, for an operator onnx's reference evaluator gets wrong:
    # (inputs..., **the node's attributes) -> outputs, in numpy; the float64 truth
    # (paleozoic.accuracy.truth) runs it instead of the reference's.
    float64: Callable[..., tuple[Any, ...]] | None = None
    # Rewrites the model's nodes of this operator before TVM parses it, where a form of the
    # node is beyond TVM's frontend: (onnx.ModelProto, its source for messages, the
    # streamed weights) -> the number of nodes rewritten (paleozoic.frontend.importer).
    rewrite: Callable[[Any, str, Any], int] | None = None

    @property
    def constant_slots(self) -> tuple[int, ...]:
        return self.weights + self.parameters


# The one table of ONNX operators the frontend maps, filled by each family module with the
# operators its converters take (paleozoic.frontend.support reads it).
ONNX_OPS: dict[str, OnnxOp] = {}


def onnx_ops(table: dict[str, OnnxOp]) -> None:
    """Registers the ONNX operators a family module converts."""
    for op_type, entry in table.items():
        if op_type in ONNX_OPS:
            raise ValueError(f"ONNX operator {op_type} is registered twice")
        ONNX_OPS[op_type] = entry
