"""Every layer keeps the ONNX nodes it computes and every queue tensor the ONNX tensors of
equal value, through the passes that merge layers (for `paleozoic debug`)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from helpers import float_model
from paleozoic.pipeline import load_queue


def _conv_add_bias_model() -> onnx.ModelProto:
    """Conv without bias, then a per-channel Add the passes fold into it, Relu, Flatten."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((1, 4, 1, 1)).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="my/conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "b"], ["cb"], name="my/bias"),
             helper.make_node("Relu", ["cb"], ["r"], name="my/relu"),
             helper.make_node("Flatten", ["r"], ["y"], name="my/flat")]
    return float_model(nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 256]}, inits)


def test_folded_bias_names_both_nodes_and_the_later_tensor() -> None:
    queue = load_queue(_conv_add_bias_model())
    conv = queue.layers[0]
    assert conv.kind == "Conv" and conv.onnx_nodes == ["my/conv", "my/bias"]
    # The Conv's own output (before the bias) no longer exists in the queue.
    assert queue.onnx_tensors[conv.output] == ["cb"]
    relu = queue.layers[1]
    assert relu.onnx_nodes == ["my/relu"]
    assert queue.onnx_tensors[relu.output] == ["r"]
    assert queue.layers[2].onnx_nodes == ["my/flat"]  # a graph output: the flatten stays
    assert queue.onnx_tensors[queue.outputs[0]] == ["y"]
    assert queue.onnx_tensors[queue.inputs[0].name] == ["x"]


def test_small_cnn_provenance(small_cnn: onnx.ModelProto) -> None:
    queue = load_queue(small_cnn)
    nodes = {layer.name: layer.onnx_nodes for layer in queue.layers}
    assert nodes["conv1"] == ["conv1"]          # its own bias: the node once
    assert nodes["bn1"] == nodes["bn1_scale"] == ["bn1"]  # one node, two layers
    # BatchNorm's first layer is inside the node: no ONNX tensor equals it.
    assert "bn1" not in queue.onnx_tensors
    assert queue.onnx_tensors["bn1_scale"] == ["bn1"]
    every = {t for names in queue.onnx_tensors.values() for t in names}
    produced = {o for n in small_cnn.graph.node for o in n.output}
    assert every <= produced | {i.name for i in small_cnn.graph.input}
