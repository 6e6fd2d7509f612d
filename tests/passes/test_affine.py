"""The bias Scale the frontend leaves after a Deconv (ONNX ConvTranspose's B input) folds
into the Deconv's optional bias, as it does for Conv; a Scale that is not a pure bias stays."""

from __future__ import annotations

import numpy as np

from paleozoic.ir import Layer, LayerQueue, Operator, TensorInfo
from paleozoic.ops import KINDS
from paleozoic.passes import run_passes
from paleozoic.passes.affine import fold_bias_into_producer

DECONV = {"out_channels": 3, "kernel": [2, 2], "stride": [2, 2], "pads": [0, 0, 0, 0],
          "dilation": [1, 1], "groups": 1, "output_padding": [0, 0]}


def deconv_then_scale(alpha: np.ndarray, beta: np.ndarray) -> LayerQueue:
    x = TensorInfo("x", (1, 2, 4, 4))
    up_shape = KINDS["Deconv"].output_shape(DECONV, [x.shape])
    layers = [
        Layer("up", Operator("Deconv", dict(DECONV)), ["x"], "up", {"weight": "up.weight"}),
        Layer("up_bias", Operator("Scale", {}), ["up"], "up_bias",
              {"alpha": "up_bias.alpha", "beta": "up_bias.beta"}),
        Layer("relu", Operator("Active", {"function": "relu"}), ["up_bias"], "relu"),
    ]
    tensors = {"x": x, "up": TensorInfo("up", up_shape),
               "up_bias": TensorInfo("up_bias", up_shape), "relu": TensorInfo("relu", up_shape)}
    weights = {"up.weight": np.ones((2, 3, 2, 2), np.float32), "up_bias.alpha": alpha,
               "up_bias.beta": beta}
    return LayerQueue(layers=layers, inputs=[x], outputs=["relu"], tensors=tensors,
                      weights=weights, source="hand.onnx", opset=13, ir_version=8)


def test_bias_scale_folds_into_deconv() -> None:
    beta = np.array([0.5, -1.0, 2.0], np.float32)
    queue = run_passes(deconv_then_scale(np.ones(3, np.float32), beta))
    assert [layer.kind for layer in queue.layers] == ["Deconv", "Active"]
    up = queue.layers[0]
    np.testing.assert_array_equal(queue.weights[up.weights["bias"]], beta)
    assert queue.layers[1].inputs == ["up"]


def test_scaling_scale_stays_after_deconv() -> None:
    queue = deconv_then_scale(np.full(3, 2.0, np.float32), np.zeros(3, np.float32))
    assert fold_bias_into_producer(queue) == 0
    assert [layer.kind for layer in queue.layers] == ["Deconv", "Scale", "Active"]
