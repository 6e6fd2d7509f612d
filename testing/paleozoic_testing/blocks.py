"""Small test models in the style exporters write them, built with onnx.helper.

Each is one or two characteristic blocks of a well-known network on a small input, with
the operator patterns PyTorch's exporter emits: Clip(0, 6) for ReLU6, Sigmoid * x for SiLU,
HardSwish, squeeze-and-excite as ReduceMean -> 1x1 convs -> Sigmoid -> broadcast Mul, a
four-branch concat, channel shuffle with Split, and a flatten computed from the run-time
shape with a symbolic batch (`dynamic_resnet_block`, which needs --batch).

    from paleozoic_testing.blocks import BLOCKS
    model = BLOCKS["efficientnet_b0_block"](seed=0)
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
from onnx import helper

from paleozoic_testing.workloads import _Graph

SIZE = 16  # input height and width


def _finish(g: _Graph, output: str, channels: int, classes: int = 10,
            batch: int | str = 1) -> onnx.ModelProto:
    x = g.op("GlobalAveragePool", [output])
    x = g.op("Flatten", [x], axis=1)
    y = g.fc(x, channels, classes)
    return g.finish({"data": [batch, 16, SIZE, SIZE]}, {y: [batch, classes]}, 14,
                    "paleozoic_testing.blocks")


def _silu(g: _Graph, x: str) -> str:
    return g.op("Mul", [x, g.op("Sigmoid", [x])])


def mobilenet_v2_block(seed: int = 0) -> onnx.ModelProto:
    """Two inverted residuals (expand 6, depthwise 3x3, ReLU6 as Clip), the second one
    with its residual Add."""
    g = _Graph("mobilenet_v2_block", seed, 1)
    x, cin = "data", 16
    for stride, cout in ((2, 24), (1, 24)):
        hidden = cin * 6
        y = g.relu6(g.bn(g.conv(x, cin, hidden, 1), hidden))
        y = g.relu6(g.bn(g.conv(y, hidden, hidden, 3, stride=stride, groups=hidden), hidden))
        residual = stride == 1 and cin == cout
        y = g.bn(g.conv(y, hidden, cout, 1), cout, gamma=0.2 if residual else None)
        x, cin = (g.op("Add", [x, y]) if residual else y), cout
    return _finish(g, x, cin)


def efficientnet_b0_block(seed: int = 0) -> onnx.ModelProto:
    """MBConv with squeeze-and-excite: SiLU (x * Sigmoid(x)), ReduceMean over H and W,
    two 1x1 convs with bias, Sigmoid gate broadcast-multiplied onto the activation."""
    g = _Graph("efficientnet_b0_block", seed, 1)
    cin, hidden, squeeze = 16, 96, 4
    y = _silu(g, g.bn(g.conv("data", cin, hidden, 1), hidden))
    y = _silu(g, g.bn(g.conv(y, hidden, hidden, 3, groups=hidden), hidden))
    s = g.op("ReduceMean", [y], axes=[2, 3], keepdims=1)
    s = _silu(g, g.conv(s, hidden, squeeze, 1, bias=True))
    s = g.op("Sigmoid", [g.conv(s, squeeze, hidden, 1, bias=True)])
    y = g.op("Mul", [y, s])
    y = g.bn(g.conv(y, hidden, cin, 1), cin, gamma=0.2)
    return _finish(g, g.op("Add", ["data", y]), cin)


def mobilenet_v3_block(seed: int = 0) -> onnx.ModelProto:
    """HardSwish and a HardSigmoid-gated squeeze-and-excite, as in MobileNetV3."""
    g = _Graph("mobilenet_v3_block", seed, 1)
    cin, hidden = 16, 48
    y = g.op("HardSwish", [g.bn(g.conv("data", cin, hidden, 1), hidden)])
    y = g.op("HardSwish", [g.bn(g.conv(y, hidden, hidden, 3, groups=hidden), hidden)])
    s = g.op("GlobalAveragePool", [y])
    s = g.relu(g.conv(s, hidden, 12, 1, bias=True))
    s = g.op("HardSigmoid", [g.conv(s, 12, hidden, 1, bias=True)], alpha=1 / 6, beta=0.5)
    y = g.op("Mul", [y, s])
    y = g.bn(g.conv(y, hidden, cin, 1), cin, gamma=0.2)
    return _finish(g, g.op("Add", ["data", y]), cin)


def googlenet_block(seed: int = 0) -> onnx.ModelProto:
    """An inception module: 1x1, 1x1 -> 3x3, 1x1 -> 5x5 and 3x3 max pool -> 1x1 branches
    concatenated on channels, then LeakyRelu and PRelu as some exporters emit them."""
    g = _Graph("googlenet_block", seed, 1)
    b1 = g.relu(g.conv("data", 16, 8, 1, bias=True))
    b2 = g.relu(g.conv(g.relu(g.conv("data", 16, 8, 1, bias=True)), 8, 12, 3, bias=True))
    b3 = g.relu(g.conv(g.relu(g.conv("data", 16, 4, 1, bias=True)), 4, 6, 5, bias=True))
    b4 = g.relu(g.conv(g.op("MaxPool", ["data"], kernel_shape=[3, 3], strides=[1, 1],
                            pads=[1, 1, 1, 1]), 16, 6, 1, bias=True))
    x = g.op("Concat", [b1, b2, b3, b4], axis=1)  # 8 + 12 + 6 + 6 = 32 channels
    x = g.op("LeakyRelu", [g.conv(x, 32, 32, 3, bias=True)], alpha=0.1)
    slope = g._init("prelu.slope", g.rng.uniform(0.05, 0.3, size=(32, 1, 1)))
    x = g.op("PRelu", [g.conv(x, 32, 32, 1, bias=True), slope])
    return _finish(g, x, 32)


def resnet18_block(seed: int = 0) -> onnx.ModelProto:
    """Two basic blocks of ResNet-18, the first downsampling with a 1x1 projection."""
    g = _Graph("resnet18_block", seed, 1)
    x, cin = "data", 16
    for stride, cout in ((2, 32), (1, 32)):
        y = g.relu(g.bn(g.conv(x, cin, cout, 3, stride=stride), cout))
        y = g.bn(g.conv(y, cout, cout, 3), cout, gamma=0.2)
        shortcut = x if stride == 1 and cin == cout else g.bn(
            g.conv(x, cin, cout, 1, stride=stride), cout)
        x, cin = g.relu(g.op("Add", [y, shortcut])), cout
    return _finish(g, x, cin)


def shufflenet_v2_block(seed: int = 0) -> onnx.ModelProto:
    """ShuffleNetV2's unit: channel Split in two, a branch on one half, Concat, then the
    channel shuffle (Reshape to groups, Transpose, Reshape back)."""
    g = _Graph("shufflenet_v2_block", seed, 1)
    half = 8
    g.inits.append(onnx.numpy_helper.from_array(np.array([half, half], dtype=np.int64),
                                                "split.sizes"))
    left, right = "split.left", "split.right"
    g.nodes.append(helper.make_node("Split", ["data", "split.sizes"], [left, right], axis=1,
                                    name="split"))
    y = g.relu(g.bn(g.conv(right, half, half, 1), half))
    y = g.bn(g.conv(y, half, half, 3, groups=half), half)
    y = g.relu(g.bn(g.conv(y, half, half, 1), half))
    x = g.op("Concat", [left, y], axis=1)
    for name, value in (("shuffle.groups", [1, 2, half, SIZE, SIZE]),
                        ("shuffle.back", [1, 2 * half, SIZE, SIZE])):
        g.inits.append(onnx.numpy_helper.from_array(np.array(value, dtype=np.int64), name))
    x = g.op("Reshape", [x, "shuffle.groups"])
    x = g.op("Transpose", [x], perm=[0, 2, 1, 3, 4])
    x = g.op("Reshape", [x, "shuffle.back"])
    # Exporters slice rather than split, too: the top-left 12x12 window, every channel.
    for name, value in (("slice.starts", [0, 0]), ("slice.ends", [12, 12]),
                        ("slice.axes", [2, 3])):
        g.inits.append(onnx.numpy_helper.from_array(np.array(value, dtype=np.int64), name))
    x = g.op("Slice", [x, "slice.starts", "slice.ends", "slice.axes"])
    return _finish(g, x, 2 * half)


def dynamic_resnet_block(seed: int = 0) -> onnx.ModelProto:
    """A basic block with a symbolic batch and the flatten PyTorch writes for
    `x.view(x.size(0), -1)`: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    g = _Graph("dynamic_resnet_block", seed, 1)
    y = g.relu(g.bn(g.conv("data", 16, 16, 3), 16))
    y = g.bn(g.conv(y, 16, 16, 3), 16, gamma=0.2)
    x = g.op("GlobalAveragePool", [g.relu(g.op("Add", ["data", y]))])
    for name, value in (("view.zero", np.array(0)), ("view.axes", np.array([0])),
                        ("view.rest", np.array([-1]))):
        g.inits.append(onnx.numpy_helper.from_array(value.astype(np.int64), name))
    n = g.op("Unsqueeze", [g.op("Gather", [g.op("Shape", [x]), "view.zero"], axis=0),
                           "view.axes"])
    flat = g.op("Reshape", [x, g.op("Concat", [n, "view.rest"], axis=0)])
    y = g.fc(flat, 16, 10)
    return g.finish({"data": ["batch", 16, SIZE, SIZE]}, {y: ["batch", 10]}, 14,
                    "paleozoic_testing.blocks")


def detection_head(seed: int = 0) -> onnx.ModelProto:
    """A feature-pyramid style head: a strided backbone conv, a ConvTranspose that doubles
    the resolution, a nearest Resize (as nn.Upsample exports it) and a bilinear one (as
    F.interpolate(align_corners=False) exports it), a skip concat and a per-pixel sigmoid
    score map."""
    g = _Graph("detection_head", seed, 1)
    c1 = g.relu(g.conv("data", 16, 24, 3, stride=2, bias=True))       # 8x8
    c2 = g.relu(g.conv(c1, 24, 32, 3, stride=2, bias=True))           # 4x4
    w = g._init("up.weight", g.rng.normal(0.0, np.sqrt(2.0 / (32 * 9)), size=(32, 24, 3, 3)))
    b = g._init("up.bias", g.rng.uniform(-0.05, 0.05, size=24))
    up = g.op("ConvTranspose", [c2, w, b], strides=[2, 2], pads=[1, 1, 1, 1],
              output_padding=[1, 1])                                   # 8x8
    x = g.relu(g.op("Add", [up, c1]))
    scales = g._init("resize.scales", np.array([1.0, 1.0, 2.0, 2.0]))
    near = g.op("Resize", [x, "", scales], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")  # 16x16
    lin = g.op("Resize", [x, "", scales], mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")
    x = g.op("Concat", [near, lin, "data"], axis=1)                    # 24+24+16 = 64
    score = g.op("Sigmoid", [g.conv(x, 64, 4, 1, bias=True)])
    return g.finish({"data": [1, 16, SIZE, SIZE]}, {score: [1, 4, SIZE, SIZE]}, 14,
                    "paleozoic_testing.blocks")


def _y_block(g: _Graph, x: str, cin: int, width: int, stride: int) -> str:
    """RegNetY's block with BatchNorm folded into the convolutions (as the TorchScript
    exporter writes it): 1x1, grouped 3x3 with 8 channels per group, squeeze-and-excite
    (GlobalAveragePool, 1x1 convs to a quarter of the block's input width and back, Sigmoid
    gate, broadcast Mul), 1x1, residual Add (projected when the shape changes), ReLU."""
    y = g.relu(g.conv(x, cin, width, 1, bias=True))
    y = g.relu(g.conv(y, width, width, 3, stride=stride, groups=width // 8, bias=True))
    s = g.op("GlobalAveragePool", [y])
    s = g.relu(g.conv(s, width, cin // 4, 1, bias=True))
    s = g.op("Sigmoid", [g.conv(s, cin // 4, width, 1, bias=True)])
    y = g.conv(g.op("Mul", [y, s]), width, width, 1, bias=True)
    shortcut = x if stride == 1 and cin == width else g.conv(x, cin, width, 1, stride=stride,
                                                             bias=True)
    return g.relu(g.op("Add", [shortcut, y]))


def regnety_stages(seed: int = 0) -> onnx.ModelProto:
    """Two stages of RegNetY-400MF in miniature on a 3 x 64 x 64 input: stem, three
    Y-blocks of width 48 (6 groups) at 16 x 16, two of width 104 (13 groups) at 8 x 8, the
    global-pool classifier. The squeeze-and-excite gates compound per-op errors, which is
    where an fp32 kernel a few times less accurate than onnxruntime's became a wrong
    answer on the real network."""
    g = _Graph("regnety_stages", seed, 1)
    x = g.relu(g.conv("data", 3, 32, 3, stride=2, bias=True))
    cin = 32
    for width, blocks in ((48, 3), (104, 2)):
        for i in range(blocks):
            x = _y_block(g, x, cin, width, 2 if i == 0 else 1)
            cin = width
    y = g.classifier_head(x, cin, classes=10)
    return g.finish({"data": [1, 3, 64, 64]}, {y: [1, 10]}, 17,
                    "paleozoic_testing.blocks")


BLOCKS: dict[str, Callable[..., onnx.ModelProto]] = {
    "mobilenet_v2_block": mobilenet_v2_block,
    "efficientnet_b0_block": efficientnet_b0_block,
    "mobilenet_v3_block": mobilenet_v3_block,
    "googlenet_block": googlenet_block,
    "resnet18_block": resnet18_block,
    "shufflenet_v2_block": shufflenet_v2_block,
    "dynamic_resnet_block": dynamic_resnet_block,
    "detection_head": detection_head,
    "regnety_stages": regnety_stages,
}

__all__ = ["BLOCKS", *BLOCKS]
