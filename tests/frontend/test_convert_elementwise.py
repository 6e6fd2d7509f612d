"""Element-wise arithmetic with constants: per-channel, scalar, and constants spanning
trailing axes (a bias on [batch, tokens, features], ConvNeXt's channels-last blocks), run
in the runtime against onnxruntime and the float64 truth."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend import import_onnx
from paleozoic.passes import run_passes
from paleozoic.accuracy.truth import Float64Reference
from helpers import onnxruntime_outputs, runtime_outputs


def _model(shape: list[int], nodes: list[onnx.NodeProto], consts: dict[str, np.ndarray],
           out: str, out_shape: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "consts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _channels_last_block(rng: np.random.Generator) -> onnx.ModelProto:
    """ConvNeXt's pointwise MLP on [N, H, W, C]: Linear (MatMul + bias), GELU-free scale,
    then constant - x and x / constant, all on the last axis; and a [H, W, C] constant."""
    c, hidden = 12, 20
    consts = {"w": rng.standard_normal((c, hidden)) / np.sqrt(c),
              "b": rng.uniform(-1, 1, hidden), "g": rng.uniform(0.5, 2, hidden),
              "k": rng.uniform(-1, 1, hidden), "d": rng.uniform(0.5, 2, hidden),
              "pos": rng.standard_normal((5, 7, hidden))}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["b", "mm"], ["biased"]),
             helper.make_node("Mul", ["biased", "g"], ["scaled"]),
             helper.make_node("Sub", ["k", "scaled"], ["flipped"]),
             helper.make_node("Div", ["flipped", "d"], ["divided"]),
             helper.make_node("Add", ["divided", "pos"], ["y"])]
    return _model([2, 5, 7, c], nodes, consts, "y", [2, 5, 7, hidden])


def test_trailing_axis_constants_match_onnxruntime_and_truth() -> None:
    rng = np.random.default_rng(0)
    model = _channels_last_block(rng)
    x = (rng.standard_normal((2, 5, 7, 12)) * 30).astype(np.float32)
    queue = import_onnx(model)
    run_passes(queue)
    # The FC's un-flatten and the constants' flatten cancel, and the four affine layers on
    # the last axis merge into one Scale.
    assert [layer.kind for layer in queue.layers] == [
        "Reshape", "FullyConnected", "Scale", "Reshape", "Scale", "Reshape"]
    got = runtime_outputs(queue, [x], plan="per-layer").reshape(2, 5, 7, 20)
    truth = Float64Reference(model).run({"x": x})[0]
    ort = onnxruntime_outputs(model, {"x": x})[0]
    scale = np.abs(truth).max()
    assert np.abs(got - truth).max() / scale < 1e-5
    assert np.abs(got - truth).max() <= 2 * np.abs(ort - truth).max() + 1e-6 * scale


def test_constant_too_large_once_expanded_is_refused_by_name(monkeypatch) -> None:
    from paleozoic.frontend.convert.elementwise import arithmetic as elementwise

    monkeypatch.setattr(elementwise, "_MAX_EXPANDED", 50)
    model = _model([1, 4, 3, 5, 5], [helper.make_node("Add", ["x", "m"], ["y"], name="big")],
                   {"m": np.ones((1, 4, 1, 5, 5))}, "y", [1, 4, 3, 5, 5])
    with pytest.raises(UnsupportedModelError, match=r"big.*\(1, 4, 1, 5, 5\).*at most 50"):
        import_onnx(model)


def test_constant_broadcast_along_a_middle_axis_is_expanded() -> None:
    """Swin's shifted-window mask: [1, windows, 1, n, n] on [1, windows, heads, n, n]."""
    rng = np.random.default_rng(2)
    mask = rng.standard_normal((1, 4, 1, 5, 5))
    model = _model([1, 4, 3, 5, 5], [helper.make_node("Add", ["x", "m"], ["y"])],
                   {"m": mask}, "y", [1, 4, 3, 5, 5])
    queue = import_onnx(model)
    run_passes(queue)
    assert [layer.kind for layer in queue.layers] == ["Reshape", "Scale", "Reshape"]
    x = rng.standard_normal((1, 4, 3, 5, 5)).astype(np.float32)
    got = runtime_outputs(queue, [x]).reshape(1, 4, 3, 5, 5)
    np.testing.assert_allclose(got, x + mask, rtol=1e-6, atol=1e-6)


def test_linear_bias_on_tokens_folds_into_the_fully_connected_layer() -> None:
    rng = np.random.default_rng(1)
    consts = {"w": rng.standard_normal((16, 24)), "b": rng.uniform(-1, 1, 24)}
    model = _model([3, 10, 16], [helper.make_node("MatMul", ["x", "w"], ["mm"]),
                                 helper.make_node("Add", ["mm", "b"], ["y"])],
                   consts, "y", [3, 10, 24])
    queue = import_onnx(model)
    run_passes(queue)
    assert [layer.kind for layer in queue.layers] == ["Reshape", "FullyConnected", "Reshape"]
    x = rng.standard_normal((3, 10, 16)).astype(np.float32)
    got = runtime_outputs(queue, [x]).reshape(3, 10, 24)
    truth = Float64Reference(model).run({"x": x})[0]
    assert np.abs(got - truth).max() / np.abs(truth).max() < 1e-5
