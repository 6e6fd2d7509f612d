"""Walks the dataflow bindings of TVM's Relax module into Paleozoic layers.

TVM's ONNX frontend is the parser; this package maps its lowered forms back to layer
kinds, one converter per Relax operator, registered with @converter on the operator it
takes and grouped by the families of paleozoic/ops, a module (or package) here per family,
of the same name.
Weights stay function parameters (keep_params_in_input=True), read from the ONNX
initializers by name; the few shape operations TVM applies to weights are evaluated with
numpy (constant.CONST_EVAL). Layers are named after the ONNX node whose conversion emitted
their binding (nodes.py).

Operators TVM lowers to several bindings are matched with TVM's dataflow pattern language
before the walk (patterns.py lists them) and converted at their last binding by
@pattern_converter functions.
"""

from __future__ import annotations

import importlib

from paleozoic.frontend.convert.constant import CONST_EVAL
from paleozoic.frontend.convert.nodes import NodeInfo, binding_owners, tensor_bindings
from paleozoic.frontend.convert.patterns import Match, find_matches
from paleozoic.frontend.convert.registry import (
    CONVERTERS,
    ONNX_OPS,
    PATTERNS,
    TAKES_HELD,
    TIR_CONVERTERS,
    OnnxOp,
    converter,
    pattern_converter,
)
from paleozoic.frontend.convert.values import (
    Absorbed,
    Deferred,
    Act,
    Const,
    ConversionError,
    Tup,
    Value,
)
from paleozoic.frontend.convert.nodes import clean_identifier
from paleozoic.frontend.convert.walker import Walker
from paleozoic.ops import FAMILIES


def _register_families() -> None:
    # Importing a family's module registers its converters: a new family is one module more.
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")


_register_families()

__all__ = ["ONNX_OPS", "OnnxOp", "CONST_EVAL", "CONVERTERS", "PATTERNS", "TAKES_HELD", "TIR_CONVERTERS", "Absorbed", "Deferred",
           "Act", "Const", "ConversionError", "Match", "NodeInfo", "Tup", "Value", "Walker",
           "binding_owners", "tensor_bindings", "clean_identifier", "converter", "find_matches",
           "pattern_converter"]
