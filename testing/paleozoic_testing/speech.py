"""Small 1-D (speech and temporal) models built with onnx.helper, opset 17, as PyTorch
exports them, for the 1-D layers and group normalisation:

    speech_encoder:  x [N, 1, L] raw audio -> Conv1d(k 10, stride 2, bias) -> GroupNorm
        (Reshape to [N, G, -1], InstanceNormalization with unit scale and zero bias,
        Reshape back, Mul, Add) -> GELU (Div, Erf, Add, Mul, Mul) -> Conv1d(k 3, stride 2)
        -> mean over time (ReduceMean axis -1) -> Linear (MatMul + Add)
    deconv_pool_1d:  x [N, C, L] -> ConvTranspose1d(k 4, stride 2, pads 1, bias) -> Relu
        -> MaxPool1d(k 3, stride 2, pads 1) -> Conv1d(k 1)

The input of speech_encoder has a large offset in its tests (instance normalisation
cancels catastrophically if the variance is taken as E[x^2] - E[x]^2).

    from paleozoic_testing.speech import speech_encoder
    model = speech_encoder(seed=0)
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from paleozoic_testing.workloads import _Graph

OPSET = 17


def _conv1d(g: _Graph, x: str, cin: int, cout: int, k: int, stride: int = 1,
            pads: tuple[int, int] = (0, 0), bias: bool = True) -> str:
    name = g._name("conv1d")
    w = g.rng.normal(0.0, np.sqrt(2.0 / (cin * k)), size=(cout, cin, k))
    inputs = [x, g._init(f"{name}.weight", w)]
    if bias:
        inputs.append(g._init(f"{name}.bias", g.rng.uniform(-0.1, 0.1, size=cout)))
    g.nodes.append(helper.make_node("Conv", inputs, [name], name=name, kernel_shape=[k],
                                    strides=[stride], pads=list(pads)))
    return name


def _group_norm(g: _Graph, x: str, batch: int, channels: int, length: int,
                groups: int) -> str:
    """torch.nn.GroupNorm as torch.onnx exports it at opset 17."""
    grouped = g.op("Reshape", [x, g._ints([batch, groups, -1])])
    normed = g.op("InstanceNormalization",
                  [grouped, g._init(g._name("gn.ones"), np.ones(groups)),
                   g._init(g._name("gn.zeros"), np.zeros(groups))], epsilon=1e-5)
    back = g.op("Reshape", [normed, g._ints([batch, channels, length])])
    scaled = g.op("Mul", [back, g._init(g._name("gn.weight"),
                                        g.rng.uniform(0.5, 1.5, size=(channels, 1)))])
    return g.op("Add", [scaled, g._init(g._name("gn.bias"),
                                        g.rng.uniform(-0.2, 0.2, size=(channels, 1)))])


def _gelu(g: _Graph, x: str) -> str:
    root2 = g._init(g._name("sqrt2"), np.array(np.sqrt(2.0)))
    one = g._init(g._name("one"), np.array(1.0))
    half = g._init(g._name("half"), np.array(0.5))
    inner = g.op("Add", [g.op("Erf", [g.op("Div", [x, root2])]), one])
    return g.op("Mul", [g.op("Mul", [x, inner]), half])


def _finish(g: _Graph, x_shape: list[int], output: str, shape: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph(
        g.nodes, g.name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="paleozoic_testing.speech")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def speech_encoder(seed: int = 0, batch: int = 1, length: int = 800, channels: int = 32,
                   groups: int = 8, hidden: int = 48, classes: int = 10) -> onnx.ModelProto:
    g = _Graph("speech_encoder", seed, batch)
    first = (length - 10) // 2 + 1
    h = _conv1d(g, "x", 1, channels, 10, stride=2)
    h = _gelu(g, _group_norm(g, h, batch, channels, first, groups))
    h = _conv1d(g, h, channels, hidden, 3, stride=2, pads=(1, 1))
    pooled = g.op("ReduceMean", [h], axes=[-1], keepdims=0)           # [N, hidden]
    w = g._init("linear.weight", g.rng.normal(0.0, 1.0 / np.sqrt(hidden), (hidden, classes)))
    b = g._init("linear.bias", g.rng.uniform(-0.1, 0.1, size=classes))
    out = g.op("Add", [g.op("MatMul", [pooled, w]), b])
    return _finish(g, [batch, 1, length], out, [batch, classes])


def deconv_pool_1d(seed: int = 0, batch: int = 1, channels: int = 16,
                   length: int = 64) -> onnx.ModelProto:
    g = _Graph("deconv_pool_1d", seed, batch)
    name = g._name("convtranspose1d")
    w = g.rng.normal(0.0, np.sqrt(2.0 / (channels * 4)), size=(channels, channels // 2, 4))
    g.nodes.append(helper.make_node(
        "ConvTranspose", ["x", g._init(f"{name}.weight", w),
                          g._init(f"{name}.bias", g.rng.uniform(-0.1, 0.1, channels // 2))],
        [name], name=name, kernel_shape=[4], strides=[2], pads=[1, 1]))
    h = g.relu(name)
    h = g.op("MaxPool", [h], kernel_shape=[3], strides=[2], pads=[1, 1])
    out = _conv1d(g, h, channels // 2, channels, 1)
    return _finish(g, [batch, channels, length], out, [batch, channels, length])
