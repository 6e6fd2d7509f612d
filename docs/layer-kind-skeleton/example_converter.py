"""Skeleton of a converter: copy into the family module of paleozoic/frontend/convert/ and
rename Example throughout. It registers the ONNX operator it takes (the one table of ONNX
operators) and the function converting the Relax operator TVM's frontend makes of it."""

from __future__ import annotations

from typing import Any

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Const, Value
from paleozoic.frontend.convert.walker import Walker, act_of, channel_vector

onnx_ops({
    # The layers it becomes (for messages), its float32 weight input slots, and the input
    # slots that must be constant once shapes are fixed.
    "Example": OnnxOp("Example", weights=(1,)),
})


@converter("relax.nn.prelu")  # the Relax operator TVM makes of the ONNX node
def convert_example(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    slope = args[1]
    if not isinstance(slope, Const):
        raise w.fail("Example's slope must be a constant")  # errors name the node
    per_channel = channel_vector(w, x, slope)
    if per_channel is None:
        raise w.fail(f"Example's slope must hold one value per channel, got shape "
                     f"{slope.value.shape}")
    # The layer is named after the ONNX node; `part` names any further layer of the node.
    return w.emit("Example", [x], {"axis": 1}, {"slope": per_channel})
