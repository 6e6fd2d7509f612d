"""merge_duplicate_layers: a layer that repeats an earlier one (kind, attributes, inputs,
weight values) is computed once, also when repeats chain (the second repeat of a chain
reads the first's output); different weights, attributes or inputs keep both; a repeat that
is a graph output stays. Numbers match onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner


def _model(second_bias: float = 1.0, extra_output: bool = False) -> onnx.ModelProto:
    """x -> (Relu -> Add b1), twice, from the same x (the second Add's bias may differ);
    the two branches multiplied; plus a Sigmoid of x with other attributes (none) kept."""
    inits = [numpy_helper.from_array(np.full((1, 4), 1.0, np.float32), "b1"),
             numpy_helper.from_array(np.full((1, 4), second_bias, np.float32), "b2")]
    nodes = [
        helper.make_node("Relu", ["x"], ["r1"], name="relu_a"),
        helper.make_node("Add", ["r1", "b1"], ["a1"], name="add_a"),
        helper.make_node("Relu", ["x"], ["r2"], name="relu_b"),
        helper.make_node("Add", ["r2", "b2"], ["a2"], name="add_b"),
        helper.make_node("Mul", ["a1", "a2"], ["m"], name="mul"),
        helper.make_node("LeakyRelu", ["m"], ["y"], name="leaky_a", alpha=0.1),
        helper.make_node("LeakyRelu", ["m"], ["z"], name="leaky_b", alpha=0.2),
        helper.make_node("Add", ["y", "z"], ["out"], name="sum"),
    ]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3, 4])]
    if extra_output:
        outputs.append(helper.make_tensor_value_info("a2", TensorProto.FLOAT, [3, 4]))
    graph = helper.make_graph(nodes, "dup", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [3, 4])], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check(model: onnx.ModelProto) -> list[str]:
    queue = load_queue(model)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ours = PlanRunner(queue, resolve_plan(queue, "fuse-all")).run([x])
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    for got, ref in zip(ours.values(), want):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    return [layer.name for layer in queue.layers]


def test_repeats_are_computed_once() -> None:
    names = _check(_model())
    assert "relu_b" not in names and "add_b" not in names
    assert {"relu_a", "add_a", "mul", "leaky_a", "leaky_b", "sum"} <= set(names)
    queue = load_queue(_model())
    merged = next(layer for layer in queue.layers if layer.name == "relu_a")
    assert merged.onnx_nodes == ["relu_a", "relu_b"]


def test_different_weight_values_keep_both() -> None:
    names = _check(_model(second_bias=2.0))
    assert "add_b" in names and "relu_b" not in names  # the Relus still repeat


def test_a_repeat_that_is_a_graph_output_stays() -> None:
    names = _check(_model(extra_output=True))
    assert "add_b" in names
