"""A Scale after a reshape that keeps the batch and channel axes moves before it (the bias
of a 1-D convolution, which runs in 2-D between such reshapes, then folds into it); one
after a reshape that regroups channels stays."""

from __future__ import annotations

import numpy as np

from paleozoic.ir import Layer, LayerQueue, Operator, TensorInfo
from paleozoic.passes.reshape import move_scales_before_channel_reshapes


def reshape_then_scale(before: tuple[int, ...], after: tuple[int, ...],
                       scale_is_output: bool) -> LayerQueue:
    x = TensorInfo("x", before)
    layers = [
        Layer("r", Operator("Reshape", {"shape": list(after)}), ["x"], "r"),
        Layer("s", Operator("Scale", {}), ["r"], "s", {"alpha": "s.alpha", "beta": "s.beta"}),
    ]
    tensors = {"x": x, "r": TensorInfo("r", after), "s": TensorInfo("s", after)}
    out = "s"
    if not scale_is_output:
        layers.append(Layer("a", Operator("Active", {"function": "relu"}), ["s"], "a"))
        tensors["a"] = TensorInfo("a", after)
        out = "a"
    channels = after[1]
    weights = {"s.alpha": np.full(channels, 2.0, np.float32),
               "s.beta": np.ones(channels, np.float32)}
    return LayerQueue(layers=layers, inputs=[x], outputs=[out], tensors=tensors,
                      weights=weights, source="hand.onnx", opset=17, ir_version=8,
                      onnx_tensors={out: ["y"]})


def test_scale_moves_before_a_channel_keeping_reshape() -> None:
    queue = reshape_then_scale((1, 4, 1, 10), (1, 4, 10), scale_is_output=False)
    assert move_scales_before_channel_reshapes(queue) == 1
    assert [layer.name for layer in queue.layers] == ["s", "r", "a"]
    assert queue.layers[0].inputs == ["x"] and queue.shape("s") == (1, 4, 1, 10)
    assert queue.layers[1].inputs == ["s"] and queue.layers[2].inputs == ["r"]
    assert queue.shape("r") == (1, 4, 10)


def test_a_graph_output_scale_hands_the_output_to_the_reshape() -> None:
    queue = reshape_then_scale((1, 4, 1, 10), (1, 4, 10), scale_is_output=True)
    assert move_scales_before_channel_reshapes(queue) == 1
    assert queue.outputs == ["r"] and queue.shape("r") == (1, 4, 10)
    assert queue.onnx_tensors["r"] == ["y"] and "s" not in queue.onnx_tensors


def test_scale_after_a_regrouping_reshape_stays() -> None:
    queue = reshape_then_scale((1, 8, 10), (1, 4, 20), scale_is_output=False)
    assert move_scales_before_channel_reshapes(queue) == 0
    assert [layer.name for layer in queue.layers] == ["r", "s", "a"]
