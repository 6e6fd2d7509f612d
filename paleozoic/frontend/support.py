"""Which ONNX operators the frontend maps, checked before parsing so that every
unsupported node is reported at once, by name, before any output is written."""

from __future__ import annotations

import onnx

from paleozoic.errors import UnsupportedModelError

# ONNX op type -> the layer kinds it becomes (for the error message and the docs).
SUPPORTED_ONNX_OPS: dict[str, str] = {
    "Conv": "Conv",
    "ConvTranspose": "Deconv",
    "Resize": "Interp",
    "Relu": "Active",
    "Sigmoid": "Active",
    "Tanh": "Active",
    "Clip": "Active (relu, relu1 or relu6 bounds)",
    "HardSigmoid": "Scale + Active relu1",
    "HardSwish": "Scale + Active relu6 + Binary",
    "LeakyRelu": "PRelu",
    "PRelu": "PRelu",
    "Sub": "Binary or Scale",
    "Div": "Binary or Scale",
    "MatMul": "FullyConnected",
    "GlobalMaxPool": "Pool",
    "ReduceMean": "GlobalAvgPool",
    "ReduceMax": "Pool",
    "Split": "Slice",
    "Slice": "Slice",
    "LRN": "LRN",
    "MaxPool": "Pool",
    "AveragePool": "Pool",
    "GlobalAveragePool": "GlobalAvgPool",
    "BatchNormalization": "BatchNorm + Scale",
    "Dropout": "(removed)",
    "Gemm": "FullyConnected",
    "Reshape": "Reshape",
    "Flatten": "Reshape",
    "Squeeze": "Reshape",
    "Unsqueeze": "Reshape",
    "Transpose": "Transpose",
    "Concat": "Concat",
    "Add": "Add, Binary or Scale",
    "Sum": "Add",
    "Mul": "Binary or Scale",
    "Softmax": "Softmax",
    "Identity": "(removed)",
    "Constant": "(folded)",
    "ConstantOfShape": "(folded)",
}


def check_supported(model: onnx.ModelProto, source: str) -> None:
    bad = [(node.name or f"#{i}", node.op_type) for i, node in enumerate(model.graph.node)
           if node.op_type not in SUPPORTED_ONNX_OPS or node.domain not in ("", "ai.onnx")]
    if bad:
        listed = "\n".join(f"  node {name!r}: {op}" for name, op in bad)
        raise UnsupportedModelError(
            f"{source}: {len(bad)} node(s) use operators Paleozoic does not support (after "
            f"folding the subgraphs that are constant for the given input shapes):\n"
            f"{listed}\nsupported: {', '.join(sorted(SUPPORTED_ONNX_OPS))}")
