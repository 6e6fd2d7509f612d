"""Workload builders (in the spirit of TVM's relay.testing): the six networks of the
paper's evaluation (Table 5) as ONNX graphs built with onnx.helper, opset 13, a static
[batch, 3, 224, 224] input, seeded He-style weights, logits out (no softmax).

BatchNorm layers get unit statistics (mean 0, variance 1) and near-one scales, with a
small scale (0.2) at the end of every residual branch, so activations keep a sane range
through the deep residual networks. MobileNetV2's ReLU6 is ONNX Clip(0, 6), as PyTorch's
exporter writes it.

    from paleozoic_testing.workloads import WORKLOADS, build
    model = build("resnet50", seed=0)
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IMAGE = (3, 224, 224)


class _Graph:
    """A small graph builder: nodes, seeded initializers, unique names."""

    def __init__(self, name: str, seed: int, batch: int) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.batch = batch
        self.counts: dict[str, int] = {}

    def _name(self, kind: str) -> str:
        n = self.counts.get(kind, 0) + 1
        self.counts[kind] = n
        return f"{kind}{n}"

    def _init(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, pad: int | None = None,
             groups: int = 1, bias: bool = False) -> str:
        name = self._name("conv")
        pad = k // 2 if pad is None else pad
        fan_in = cin // groups * k * k
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(cout, cin // groups, k, k))
        inputs = [x, self._init(f"{name}.weight", w)]
        if bias:
            inputs.append(self._init(f"{name}.bias", self.rng.uniform(-0.05, 0.05, size=cout)))
        self.nodes.append(helper.make_node(
            "Conv", inputs, [name], name=name, kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad] * 4, group=groups))
        return name

    def bn(self, x: str, c: int, gamma: float | None = None) -> str:
        name = self._name("bn")
        scale = (np.full(c, gamma) if gamma is not None
                 else self.rng.uniform(0.8, 1.2, size=c))
        params = [self._init(f"{name}.scale", scale),
                  self._init(f"{name}.bias", self.rng.uniform(-0.05, 0.05, size=c)),
                  self._init(f"{name}.mean", np.zeros(c)),
                  self._init(f"{name}.var", np.ones(c))]
        self.nodes.append(helper.make_node("BatchNormalization", [x] + params, [name],
                                           name=name, epsilon=1e-5))
        return name

    def _ints(self, values: list[int] | int, scalar: bool = False) -> str:
        """An int64 initializer (shapes, axes, indices); `scalar`: a 0-D one."""
        name = self._name("ints")
        value = np.array(values, np.int64)
        self.inits.append(numpy_helper.from_array(value.reshape(()) if scalar else value, name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: object) -> str:
        name = self._name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    def relu(self, x: str) -> str:
        return self.op("Relu", [x])

    def relu6(self, x: str) -> str:
        if "clip.min" not in {t.name for t in self.inits}:
            self._init("clip.min", np.array(0.0))
            self._init("clip.max", np.array(6.0))
        return self.op("Clip", [x, "clip.min", "clip.max"])

    def maxpool(self, x: str, k: int, stride: int, pad: int = 0) -> str:
        return self.op("MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride],
                       pads=[pad] * 4)

    def fc(self, x: str, fin: int, fout: int) -> str:
        name = self._name("fc")
        w = self.rng.normal(0.0, np.sqrt(2.0 / fin), size=(fout, fin))
        b = self.rng.uniform(-0.05, 0.05, size=fout)
        self.nodes.append(helper.make_node(
            "Gemm", [x, self._init(f"{name}.weight", w), self._init(f"{name}.bias", b)],
            [name], name=name, transB=1))
        return name

    def classifier_head(self, x: str, c: int, classes: int = 1000) -> str:
        x = self.op("GlobalAveragePool", [x])
        x = self.op("Flatten", [x], axis=1)
        return self.fc(x, c, classes)

    def model(self, output: str, classes: int = 1000) -> onnx.ModelProto:
        return self.finish({"data": [self.batch, *IMAGE]}, {output: [self.batch, classes]},
                           OPSET, "paleozoic_testing.workloads")

    def finish(self, inputs: dict[str, list] | list[onnx.ValueInfoProto],
               outputs: dict[str, list], opset: int, producer: str,
               ir_version: int = 8) -> onnx.ModelProto:
        """The checked model of the nodes and initializers built so far; `inputs` and
        `outputs` float tensors by name and shape (or `inputs` as value infos)."""
        if isinstance(inputs, dict):
            inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
                      for name, shape in inputs.items()]
        graph = helper.make_graph(
            self.nodes, self.name, inputs,
            [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
             for name, shape in outputs.items()], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name=producer)
        model.ir_version = ir_version
        onnx.checker.check_model(model)
        return model


def resnet(depth: int, seed: int = 0, batch: int = 1) -> onnx.ModelProto:
    """ResNet-18/34 (basic blocks) or ResNet-50/101/152 (bottlenecks), v1 (stride in the 3x3)."""
    stages = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
              152: [3, 8, 36, 3]}[depth]
    bottleneck = depth >= 50
    g = _Graph(f"resnet{depth}", seed, batch)
    x = g.relu(g.bn(g.conv("data", 3, 64, 7, stride=2), 64))
    x = g.maxpool(x, 3, 2, 1)
    cin = 64
    for stage, blocks in enumerate(stages):
        width = 64 * 2 ** stage
        cout = width * 4 if bottleneck else width
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            if bottleneck:
                y = g.relu(g.bn(g.conv(x, cin, width, 1), width))
                y = g.relu(g.bn(g.conv(y, width, width, 3, stride=stride), width))
                y = g.bn(g.conv(y, width, cout, 1), cout, gamma=0.2)
            else:
                y = g.relu(g.bn(g.conv(x, cin, width, 3, stride=stride), width))
                y = g.bn(g.conv(y, width, cout, 3), cout, gamma=0.2)
            shortcut = x
            if stride != 1 or cin != cout:
                shortcut = g.bn(g.conv(x, cin, cout, 1, stride=stride), cout)
            x = g.relu(g.op("Add", [y, shortcut]))
            cin = cout
    return g.model(g.classifier_head(x, cin))


def vgg(depth: int, seed: int = 0, batch: int = 1) -> onnx.ModelProto:
    """VGG-11/13/16/19 (configurations A, B, D, E), convs with bias, no batch norm."""
    layers = {11: [1, 1, 2, 2, 2], 13: [2, 2, 2, 2, 2], 16: [2, 2, 3, 3, 3],
              19: [2, 2, 4, 4, 4]}[depth]
    g = _Graph(f"vgg{depth}", seed, batch)
    x, cin = "data", 3
    for stage, count in enumerate(layers):
        cout = min(64 * 2 ** stage, 512)
        for _ in range(count):
            x, cin = g.relu(g.conv(x, cin, cout, 3, bias=True)), cout
        x = g.maxpool(x, 2, 2)
    x = g.op("Flatten", [x], axis=1)
    x = g.relu(g.fc(x, 512 * 7 * 7, 4096))
    x = g.relu(g.fc(x, 4096, 4096))
    return g.model(g.fc(x, 4096, 1000))


def mobilenet_v2(seed: int = 0, batch: int = 1) -> onnx.ModelProto:
    """MobileNetV2 (width 1.0): inverted residuals with depthwise 3x3 convs."""
    # (expansion t, channels c, repeats n, first stride s), Sandler et al. 2018, Table 2.
    config = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
              (6, 160, 3, 2), (6, 320, 1, 1)]
    g = _Graph("mobilenet_v2", seed, batch)
    x = g.relu6(g.bn(g.conv("data", 3, 32, 3, stride=2), 32))
    cin = 32
    for t, c, n, s in config:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x
            if t != 1:
                y = g.relu6(g.bn(g.conv(y, cin, hidden, 1), hidden))
            y = g.relu6(g.bn(g.conv(y, hidden, hidden, 3, stride=stride, groups=hidden),
                            hidden))
            residual = stride == 1 and cin == c
            y = g.bn(g.conv(y, hidden, c, 1), c, gamma=0.2 if residual else None)
            x = g.op("Add", [x, y]) if residual else y
            cin = c
    x = g.relu6(g.bn(g.conv(x, cin, 1280, 1), 1280))
    return g.model(g.classifier_head(x, 1280))


def alexnet(seed: int = 0, batch: int = 1) -> onnx.ModelProto:
    """AlexNet as in torchvision (single tower, no LRN, 64-192-384-256-256 channels)."""
    g = _Graph("alexnet", seed, batch)
    x = g.maxpool(g.relu(g.conv("data", 3, 64, 11, stride=4, pad=2, bias=True)), 3, 2)
    x = g.maxpool(g.relu(g.conv(x, 64, 192, 5, pad=2, bias=True)), 3, 2)
    x = g.relu(g.conv(x, 192, 384, 3, bias=True))
    x = g.relu(g.conv(x, 384, 256, 3, bias=True))
    x = g.maxpool(g.relu(g.conv(x, 256, 256, 3, bias=True)), 3, 2)
    x = g.op("Flatten", [x], axis=1)
    x = g.relu(g.fc(x, 256 * 6 * 6, 4096))
    x = g.relu(g.fc(x, 4096, 4096))
    return g.model(g.fc(x, 4096, 1000))


# The paper's Table 5 networks, in its order, with its line counts (CNML, Our Work).
WORKLOADS: dict[str, Callable[..., onnx.ModelProto]] = {
    "resnet18": lambda seed=0, batch=1: resnet(18, seed, batch),
    "resnet50": lambda seed=0, batch=1: resnet(50, seed, batch),
    "vgg16": lambda seed=0, batch=1: vgg(16, seed, batch),
    "vgg19": lambda seed=0, batch=1: vgg(19, seed, batch),
    "mobilenet_v2": mobilenet_v2,
    "alexnet": alexnet,
}
PAPER_LOC: dict[str, tuple[int, int]] = {
    "resnet18": (2491, 485), "resnet50": (6225, 1180), "vgg16": (1387, 260),
    "vgg19": (1603, 296), "mobilenet_v2": (5579, 1053), "alexnet": (730, 156),
}
DISPLAY_NAMES: dict[str, str] = {
    "resnet18": "ResNet-18", "resnet50": "ResNet-50", "vgg16": "VGG-16", "vgg19": "VGG-19",
    "mobilenet_v2": "MobileNetV2", "alexnet": "AlexNet",
}


def build(name: str, seed: int = 0, batch: int = 1) -> onnx.ModelProto:
    try:
        builder = WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None
    return builder(seed=seed, batch=batch)


def parameter_count(model: onnx.ModelProto) -> int:
    """Weights of the model (initializer elements), BatchNorm statistics included."""
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer)


__all__ = ["DISPLAY_NAMES", "PAPER_LOC", "WORKLOADS", "alexnet", "build", "mobilenet_v2",
           "parameter_count", "resnet", "vgg"]
