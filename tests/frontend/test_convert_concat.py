"""Concat with constant operands: activations only stay Concat, a run of adjacent constants
is one ConcatConstant layer (a second run chains a second layer), constants only fold, and
what the device cannot concatenate is refused naming the node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.errors import PaleozoicError
from paleozoic.pipeline import import_onnx, load_queue
from paleozoic.accuracy.verify import reference_outputs


def _concat_model(parts: list[str], consts: dict[str, np.ndarray], axis: int = 1,
                  dtype: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """Concat of the graph inputs "a" [2, 2, 3] / "b" [2, 1, 3] and constants, in `parts`
    order, then a Relu (floats) so the output is a layer's."""
    shapes = {"a": [2, 2, 3], "b": [2, 1, 3]}
    inputs = [helper.make_tensor_value_info(n, dtype, shapes[n]) for n in ("a", "b")
              if n in parts]
    total = sum(shapes[p][axis] if p in shapes else consts[p].shape[axis] for p in parts)
    out_shape = [2, total, 3]
    nodes = [helper.make_node("Concat", parts, ["cat"], name="join", axis=axis)]
    last = "cat"
    if dtype == TensorProto.FLOAT:
        nodes.append(helper.make_node("Relu", ["cat"], ["y"], name="relu"))
        last = "y"
    graph = helper.make_graph(nodes, "concat", inputs,
                              [helper.make_tensor_value_info(last, dtype, out_shape)],
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _const(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _check_against_onnxruntime(model: onnx.ModelProto) -> None:
    from paleozoic.pipeline import resolve_plan
    from paleozoic.runner.plan_runner import PlanRunner

    rng = np.random.default_rng(3)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
             .astype(np.float32) for i in model.graph.input}
    queue = load_queue(model)
    ours = next(iter(PlanRunner(queue, resolve_plan(queue, "per-layer")).run(
        [feeds[name] for name in queue.onnx_input_names]).values()))
    np.testing.assert_array_equal(ours, reference_outputs(model, feeds)[0])


def test_adjacent_constants_become_one_constant_operand() -> None:
    c1, c2 = _const(2, 1, 3), _const(2, 2, 3, seed=1)
    model = _concat_model(["c1", "a", "c2", "b"], {"c1": c1, "c2": c2})
    layers = [layer for layer in import_onnx(model).layers if layer.kind != "Active"]
    # c1 | a | c2 | b holds two runs of constants: the second run is a second layer.
    assert [(layer.kind, layer.op.attrs["constant_at"]) for layer in layers] == \
        [("ConcatConstant", 0), ("ConcatConstant", 1)]
    _check_against_onnxruntime(model)
    merged = _concat_model(["a", "c1", "c2", "b"], {"c1": c1, "c2": c2})
    queue = import_onnx(merged)
    (layer,) = [layer for layer in queue.layers if layer.kind == "ConcatConstant"]
    assert layer.op.attrs["constant_shape"] == [2, 3, 3]
    assert layer.op.attrs["constant_at"] == 1 and len(layer.inputs) == 2
    np.testing.assert_array_equal(queue.weights[layer.weights["constant"]],
                                  np.concatenate([c1, c2], axis=1))
    _check_against_onnxruntime(merged)


def test_constant_after_the_activations() -> None:
    model = _concat_model(["a", "b", "c"], {"c": _const(2, 4, 3)})
    (layer,) = [layer for layer in import_onnx(model).layers if layer.kind == "ConcatConstant"]
    assert layer.op.attrs["constant_at"] == 2
    _check_against_onnxruntime(model)


def test_concat_of_constants_is_folded() -> None:
    """Concat(c1, c2) + a: the folded constant becomes the bias of one Scale."""
    c1, c2 = _const(2, 1, 3), _const(2, 1, 3, seed=1)
    nodes = [helper.make_node("Concat", ["c1", "c2"], ["cat"], name="join", axis=1),
             helper.make_node("Add", ["a", "cat"], ["y"], name="add")]
    graph = helper.make_graph(
        nodes, "fold", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 3])],
        [numpy_helper.from_array(c1, "c1"), numpy_helper.from_array(c2, "c2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    kinds = {layer.kind for layer in load_queue(model).layers}
    assert not kinds & {"Concat", "ConcatConstant"}
    _check_against_onnxruntime(model)


def test_integer_concat_with_a_constant_is_refused_naming_the_node() -> None:
    model = _concat_model(["a", "c"], {"c": np.zeros((2, 1, 3), np.int64)},
                          dtype=TensorProto.INT64)
    with pytest.raises(PaleozoicError, match=r"'join'.*int64 constant"):
        import_onnx(model)
