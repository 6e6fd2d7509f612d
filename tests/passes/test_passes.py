"""Passes: each rewrite keeps the numbers (checked against the unrewritten queue through a
numpy evaluation of the affected layers) and removes what it claims to."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.passes import (
    DEFAULT_PASSES,
    run_passes,
)
from paleozoic.passes.affine import fold_bias_into_producer, merge_scale_chains
from paleozoic.passes.dead import drop_unread_layers
from paleozoic.passes.reshape import collapse_reshapes, drop_flatten_before_fc


def test_default_pipeline_on_small_cnn(small_cnn: onnx.ModelProto) -> None:
    queue = run_passes(import_onnx(small_cnn))
    kinds = [layer.kind for layer in queue.layers]
    assert kinds == ["Conv", "BatchNorm", "Scale", "Active", "Pool", "Conv", "Add",
                     "GlobalAvgPool", "FullyConnected", "Softmax"]
    conv = queue.layers[0]
    assert "bias" in conv.weights  # the Add of the ONNX Conv bias folded back in
    fc = queue.layers[-2]
    assert "bias" in fc.weights
    # Weights no layer references are gone.
    referenced = {w for layer in queue.layers for w in layer.weights.values()}
    assert set(queue.weights) == referenced


def test_bias_fold_keeps_values(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    scale = queue.layers[1]
    beta = queue.weights[scale.weights["beta"]].copy()
    assert fold_bias_into_producer(queue) == 2
    np.testing.assert_array_equal(queue.weights[queue.layers[0].weights["bias"]], beta)


def test_merge_scale_chains_composes_affine_maps(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    # conv1's bias Scale and BN's Scale are not adjacent; make two adjacent Scales.
    first = next(l for l in queue.layers if l.kind == "Scale" and l.name.endswith("scale"))
    a1, b1 = (queue.weights[first.weights[r]].copy() for r in ("alpha", "beta"))
    x = np.linspace(-2, 2, a1.size).astype(np.float32)
    # Append a second Scale after `first` by hand.
    from paleozoic.ir import Layer, Operator, TensorInfo
    second = Layer("extra", Operator("Scale", {}), [first.output], "extra",
                   {"alpha": "extra.alpha", "beta": "extra.beta"})
    queue.weights["extra.alpha"] = np.full_like(a1, 2.0)
    queue.weights["extra.beta"] = np.full_like(a1, -1.0)
    queue.tensors["extra"] = TensorInfo("extra", queue.shape(first.output))
    index = queue.layers.index(first)
    for layer in queue.layers[index + 1:]:
        layer.inputs = ["extra" if n == first.output else n for n in layer.inputs]
    queue.layers.insert(index + 1, second)
    assert merge_scale_chains(queue) == 1
    a, b = (queue.weights[first.weights[r]] for r in ("alpha", "beta"))
    np.testing.assert_allclose(a * x + b, 2 * (a1 * x + b1) - 1, rtol=1e-6)
    assert all(layer.name != "extra" for layer in queue.layers)


def test_reshape_passes(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    assert sum(layer.kind == "Reshape" for layer in queue.layers) == 1
    assert collapse_reshapes(queue) == 0  # the flatten changes the shape
    assert drop_flatten_before_fc(queue) == 1
    assert not any(layer.kind == "Reshape" for layer in queue.layers)


def test_pass_list_is_ordered() -> None:
    # Dead layers go first, so no later pass rewrites what nothing reads.
    assert DEFAULT_PASSES[:2] == (drop_unread_layers, collapse_reshapes)


def test_unread_layers_are_dropped_to_a_fixed_point() -> None:
    from helpers import hand_built_queue

    queue = hand_built_queue([
        ("relu", "Active", ["x"], {"function": "relu"}, {}),
        ("dead1", "Active", ["relu"], {"function": "sigmoid"}, {}),
        ("dead2", "Active", ["dead1"], {"function": "tanh"}, {}),  # reads a dead layer only
        ("out", "Active", ["relu"], {"function": "tanh"}, {}),
        ("also_out", "Active", ["out"], {"function": "relu"}, {}),
    ], (2, 3), outputs=["out", "also_out"])
    assert drop_unread_layers(queue) == 2
    assert [layer.name for layer in queue.layers] == ["relu", "out", "also_out"]
    assert "dead1" not in queue.tensors and "dead2" not in queue.tensors


def _mlp(activation: str) -> onnx.ModelProto:
    """Two Linear layers on [batch, tokens, features] with an activation between them, the
    way transformers and ConvNeXt write their MLP."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in {
        "w1": rng.standard_normal((8, 12)), "b1": rng.standard_normal(12),
        "w2": rng.standard_normal((12, 8)), "b2": rng.standard_normal(8)}.items()]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node(activation, ["hb"], ["a"]),
             helper.make_node("MatMul", ["a", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["y"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("activation", ["Relu", "Tanh", "Erf"])
def test_activation_between_linear_layers_leaves_one_reshape_each_side(activation) -> None:
    from helpers import runtime_outputs

    from paleozoic.accuracy.truth import Float64Reference

    model = _mlp(activation)
    queue = run_passes(import_onnx(model))
    assert [layer.kind for layer in queue.layers] == [
        "Reshape", "FullyConnected", "Unary" if activation == "Erf" else "Active",
        "FullyConnected", "Reshape"]
    x = np.random.default_rng(1).standard_normal((2, 5, 8)).astype(np.float32)
    got = runtime_outputs(queue, [x]).reshape(2, 5, 8)
    truth = Float64Reference(model).run({"x": x})[0]
    assert np.abs(got - truth).max() < 1e-5 * np.abs(truth).max()


def test_layer_norm_moves_only_when_the_reshape_keeps_its_axis() -> None:
    from onnx import TensorProto, helper, numpy_helper

    def model(target: list[int]) -> onnx.ModelProto:
        inits = [numpy_helper.from_array(np.array(target, np.int64), "t"),
                 numpy_helper.from_array(np.array([2, 5, 8], np.int64), "back"),
                 numpy_helper.from_array(np.ones(target[-1], np.float32), "g"),
                 numpy_helper.from_array(np.zeros(target[-1], np.float32), "b")]
        nodes = [helper.make_node("Reshape", ["x", "t"], ["r"]),
                 helper.make_node("LayerNormalization", ["r", "g", "b"], ["n"], axis=-1),
                 helper.make_node("Reshape", ["n", "back"], ["y"])]
        graph = helper.make_graph(
            nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 8])], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    assert [layer.kind for layer in run_passes(import_onnx(model([10, 8]))).layers] == [
        "LayerNorm"]   # the same rows of 8: both reshapes go
    assert [layer.kind for layer in run_passes(import_onnx(model([5, 16]))).layers] == [
        "Reshape", "LayerNorm", "Reshape"]   # rows of 16 are other rows: nothing moves
