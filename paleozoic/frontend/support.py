"""Which ONNX operators the frontend maps, checked before parsing so that every
unsupported node is reported at once, by name, before any output is written."""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from paleozoic.errors import UnsupportedModelError


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

    @property
    def constant_slots(self) -> tuple[int, ...]:
        return self.weights + self.parameters


# The one table of ONNX operators the frontend maps.
ONNX_OPS: dict[str, OnnxOp] = {
    "Conv": OnnxOp("Conv", weights=(1, 2)),
    "ConvTranspose": OnnxOp("Deconv", weights=(1, 2)),
    "Resize": OnnxOp("Interp", parameters=(1, 2, 3)),
    "Relu": OnnxOp("Active"),
    "Sigmoid": OnnxOp("Active"),
    "Tanh": OnnxOp("Active"),
    "Clip": OnnxOp("Active (relu, relu1 or relu6 bounds)", parameters=(1, 2)),
    "HardSigmoid": OnnxOp("Scale + Active relu1"),
    "HardSwish": OnnxOp("Scale + Active relu6 + Binary"),
    "LeakyRelu": OnnxOp("PRelu"),
    "PRelu": OnnxOp("PRelu", weights=(1,)),
    "Sub": OnnxOp("Binary or Scale"),
    "Div": OnnxOp("Binary or Scale"),
    "MatMul": OnnxOp("FullyConnected", weights=(1,)),
    "GlobalMaxPool": OnnxOp("Pool"),
    "ReduceMean": OnnxOp("GlobalAvgPool"),
    "ReduceMax": OnnxOp("Pool"),
    "Split": OnnxOp("Slice"),
    "Slice": OnnxOp("Slice"),
    "LRN": OnnxOp("LRN"),
    "MaxPool": OnnxOp("Pool"),
    "AveragePool": OnnxOp("Pool"),
    "GlobalAveragePool": OnnxOp("GlobalAvgPool"),
    "BatchNormalization": OnnxOp("BatchNorm + Scale", weights=(1, 2, 3, 4)),
    "Dropout": OnnxOp("(removed)", parameters=(1, 2)),
    "Gemm": OnnxOp("FullyConnected", weights=(1, 2)),
    "Reshape": OnnxOp("Reshape"),
    "Flatten": OnnxOp("Reshape"),
    "Squeeze": OnnxOp("Reshape"),
    "Unsqueeze": OnnxOp("Reshape"),
    "Transpose": OnnxOp("Transpose"),
    "Concat": OnnxOp("Concat"),
    "Add": OnnxOp("Add, Binary or Scale"),
    "Sum": OnnxOp("Add"),
    "Mul": OnnxOp("Binary or Scale"),
    "Softmax": OnnxOp("Softmax"),
    "Identity": OnnxOp("(removed)"),
    "Constant": OnnxOp("(folded)"),
    "ConstantOfShape": OnnxOp("(folded)"),
}


def check_supported(model: onnx.ModelProto, source: str) -> None:
    bad = [(node.name or f"#{i}", node.op_type) for i, node in enumerate(model.graph.node)
           if node.op_type not in ONNX_OPS or node.domain not in ("", "ai.onnx")]
    if bad:
        listed = "\n".join(f"  node {name!r}: {op}" for name, op in bad)
        raise UnsupportedModelError(
            f"{source}: {len(bad)} node(s) use operators Paleozoic does not support (after "
            f"folding the subgraphs that are constant for the given input shapes):\n"
            f"{listed}\nsupported: {', '.join(sorted(ONNX_OPS))}")
