"""Walks the dataflow bindings of TVM's Relax module into Paleozoic layers.

TVM's ONNX frontend is the parser; this package maps its lowered forms back to layer
kinds, one converter per Relax operator, registered with @converter on the operator it
takes and grouped by family (spatial, activation, normalize, dense, layout, elementwise).
Weights stay function parameters (keep_params_in_input=True) so they keep their ONNX
names, which give the layers readable names; the few shape operations TVM applies to
weights are evaluated with numpy (constant.CONST_EVAL).

Multi-binding patterns (TVM's decomposition of LRN, Sum as broadcast/stack/sum, Clip as
TIR maximum/minimum) are tracked as Pending values until the binding that completes them.
"""

from __future__ import annotations

# Importing the family modules registers their converters.
from paleozoic.frontend.convert import (  # noqa: F401
    activation,
    dense,
    elementwise,
    layout,
    normalize,
    spatial,
)
from paleozoic.frontend.convert.constant import CONST_EVAL
from paleozoic.frontend.convert.registry import CONVERTERS, TIR_CONVERTERS, converter
from paleozoic.frontend.convert.values import (
    Act,
    Const,
    ConversionError,
    Pending,
    Tup,
    Value,
)
from paleozoic.frontend.convert.walker import Walker, clean_identifier, stem_from_weight

__all__ = ["CONST_EVAL", "CONVERTERS", "TIR_CONVERTERS", "Act", "Const", "ConversionError",
           "Pending", "Tup", "Value", "Walker", "clean_identifier", "converter",
           "stem_from_weight"]
