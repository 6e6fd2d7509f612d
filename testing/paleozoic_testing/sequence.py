"""A small transformer encoder layer built with onnx.helper, for the sequence-model kinds.

    x -> LayerNorm -> Q, K, V (MatMul by constants) -> heads (Reshape, Transpose)
      -> MatMul(Q, K^T) -> * 1/sqrt(d) -> Softmax(axis=-1) -> MatMul(., V) -> merge heads
      -> MatMul -> Add residual -> LayerNorm -> MatMul -> GELU -> MatMul -> Add residual

`gelu` picks how GELU is written: "op" (ONNX Gelu, opset 20), "tanh" (Gelu with
approximate="tanh"), "erf" (PyTorch's export: Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5) or
"torch_tanh" (PyTorch's export of approximate="tanh": x * x * x, Mul 0.044715, Add x,
Mul sqrt(2/pi), Tanh, Add 1, Mul x, Mul 0.5).

    from paleozoic_testing.sequence import encoder_layer
    model = encoder_layer(seed=0)

`vit_block` puts a ViT's patch embedding and class token before one such layer.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from paleozoic_testing.workloads import _Graph


def _matmul(g: _Graph, x: str, cin: int, cout: int) -> str:
    name = g._name("matmul")
    w = g.rng.normal(0.0, 1.0 / np.sqrt(cin), size=(cin, cout))
    g.nodes.append(helper.make_node("MatMul", [x, g._init(f"{name}.weight", w)], [name],
                                    name=name))
    # nn.Linear's bias as PyTorch exports it: the constant first, broadcast on the last axis
    # of a [batch, seq, features] activation (a per-channel constant would sit on axis 1).
    bias = g._init(f"{name}.bias", g.rng.uniform(-0.5, 0.5, size=cout))
    return g.op("Add", [bias, name])


def _layer_norm(g: _Graph, x: str, d: int) -> str:
    name = g._name("layernorm")
    scale = g._init(f"{name}.scale", g.rng.uniform(0.8, 1.2, size=d))
    bias = g._init(f"{name}.bias", g.rng.uniform(-0.1, 0.1, size=d))
    g.nodes.append(helper.make_node("LayerNormalization", [x, scale, bias], [name], name=name,
                                    axis=-1, epsilon=1e-5))
    return name


def _gelu(g: _Graph, x: str, form: str) -> str:
    if form == "op":
        return g.op("Gelu", [x])
    if form == "tanh":
        return g.op("Gelu", [x], approximate="tanh")
    if form == "torch_tanh":
        kappa = g._init(g._name("kappa"), np.array(0.044715))
        beta = g._init(g._name("beta"), np.array(np.sqrt(2.0 / np.pi)))
        one = g._init(g._name("one"), np.array(1.0))
        half = g._init(g._name("half"), np.array(0.5))
        cube = g.op("Mul", [x, g.op("Mul", [x, x])])
        inner = g.op("Mul", [beta, g.op("Add", [x, g.op("Mul", [kappa, cube])])])
        return g.op("Mul", [half, g.op("Mul", [x, g.op("Add", [one, g.op("Tanh", [inner])])])])
    root2 = g._init(g._name("sqrt2"), np.array(np.sqrt(2.0)))
    one = g._init(g._name("one"), np.array(1.0))
    half = g._init(g._name("half"), np.array(0.5))
    inner = g.op("Add", [g.op("Erf", [g.op("Div", [x, root2])]), one])
    return g.op("Mul", [g.op("Mul", [x, inner]), half])


def _encoder(g: _Graph, x: str, batch: int, seq: int, dim: int, heads: int, hidden: int,
             gelu: str) -> str:
    """The pre-norm encoder layer on a [batch, seq, dim] tensor `x`; returns its output."""
    head = dim // heads
    split = g._name("heads.shape")
    merge = g._name("merge.shape")
    g.inits += [onnx.numpy_helper.from_array(np.array([batch, seq, heads, head], np.int64),
                                             split),
                onnx.numpy_helper.from_array(np.array([batch, seq, dim], np.int64), merge)]
    h = _layer_norm(g, x, dim)
    q, k, v = (g.op("Transpose", [g.op("Reshape", [_matmul(g, h, dim, dim), split])],
                    perm=perm)
               for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))
    scale = g._init(g._name("attention.scale"), np.array(1.0 / np.sqrt(head)))
    scores = g.op("Mul", [g.op("MatMul", [q, k]), scale])
    attention = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    merged = g.op("Reshape", [g.op("Transpose", [attention], perm=[0, 2, 1, 3]), merge])
    r = g.op("Add", [x, _matmul(g, merged, dim, dim)])
    f = _matmul(g, _gelu(g, _matmul(g, _layer_norm(g, r, dim), dim, hidden), gelu), hidden, dim)
    return g.op("Add", [r, f])


def _finish(g: _Graph, inputs: list[onnx.ValueInfoProto], output: str,
            shape: list[int]) -> onnx.ModelProto:
    return g.finish(inputs, {output: shape}, 20, "paleozoic_testing.sequence", ir_version=9)


def encoder_layer(seed: int = 0, batch: int = 2, seq: int = 16, dim: int = 32,
                  heads: int = 4, hidden: int = 64, gelu: str = "op") -> onnx.ModelProto:
    """One pre-norm encoder layer on a [batch, seq, dim] input "x"."""
    g = _Graph("encoder_layer", seed, 1)
    y = _encoder(g, "x", batch, seq, dim, heads, hidden, gelu)
    return _finish(g, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, dim])],
                   y, [batch, seq, dim])


def vit_block(seed: int = 0, batch: int = 2, image: int = 32, patch: int = 8, dim: int = 32,
              heads: int = 4, hidden: int = 64, classes: int = 10,
              class_token: str = "expand") -> onnx.ModelProto:
    """A ViT in small, as torchvision's VisionTransformer exports: patch embedding (Conv with
    stride = kernel = patch, Reshape to [batch, dim, patches], Transpose), the class token
    concatenated before the patch tokens, the position embedding added, one encoder layer,
    the final LayerNorm, the class token's row (Gather on axis 1) and the head (MatMul).

    `class_token` writes the token as the exporters do: "expand" (TorchScript: a [1, 1, dim]
    initializer Expanded to [batch, 1, dim] by a shape computed from the input's Shape, which
    Concats two constants), "constant" (the dynamo exporter at a fixed batch: the expanded
    [batch, 1, dim] initializer itself) or "last" (the token after the patch tokens, to check
    the constant's place)."""
    g = _Graph("vit_block", seed, batch)
    grid = image // patch
    tokens = grid * grid
    x = g.conv("x", 3, dim, patch, stride=patch, pad=0, bias=True)
    flat = g._name("flat.shape")
    g.inits.append(onnx.numpy_helper.from_array(np.array([batch, dim, tokens], np.int64), flat))
    patches = g.op("Transpose", [g.op("Reshape", [x, flat])], perm=[0, 2, 1])
    token = g.rng.normal(0.0, 1.0, size=(1, 1, dim))
    if class_token == "expand":
        rows = g.op("Slice", [g.op("Shape", ["x"]), *(g._ints(v) for v in ([0], [1], [0]))])
        target = g.op("Concat", [rows, g._ints([1, dim])], axis=0)
        cls = g.op("Expand", [g._init("class_token", token), target])
    else:
        cls = g._init("class_token", np.broadcast_to(token, (batch, 1, dim)))
    parts = [patches, cls] if class_token == "last" else [cls, patches]
    joined = g.op("Concat", parts, axis=1)
    position = g._init("pos_embedding", g.rng.normal(0.0, 0.5, size=(1, tokens + 1, dim)))
    h = _encoder(g, g.op("Add", [joined, position]), batch, tokens + 1, dim, heads, hidden,
                 "erf")
    h = _layer_norm(g, h, dim)
    row = g.op("Gather", [h, g._ints(tokens if class_token == "last" else 0, scalar=True)],
               axis=1)
    head = g._init("head.weight", g.rng.normal(0.0, 1.0 / np.sqrt(dim), size=(dim, classes)))
    logits = g.op("MatMul", [row, head])
    return _finish(g, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                     [batch, 3, image, image])],
                   logits, [batch, classes])


def pooled_classifier(seed: int = 0, batch: int = 2, seq: int = 16, dim: int = 32,
                      classes: int = 10) -> onnx.ModelProto:
    """Token pooling and a log-probability head over a [batch, seq, dim] input "x", for the
    Reduce kind, LogSoftmax, the Unary exp/log/abs/neg, Reciprocal and Pow with a tensor
    exponent (opset 18: the reductions take their axes as an input):

        h = x W + b; mean, max, min, prod over the tokens; e = exp(-|mean|)
        p = e / sum(e) + (e ^ sigmoid(max)) * (max - min) + prod(sigmoid(h)) + 1 / (1 + max^2)
        y = LogSoftmax(log(p) W2 + b2)
    """
    g = _Graph("pooled_classifier", seed, 1)
    g.inits += [onnx.numpy_helper.from_array(np.array([1], np.int64), "tokens"),
                onnx.numpy_helper.from_array(np.array([-1], np.int64), "last")]
    h = _matmul(g, "x", dim, dim)

    def reduce(op: str, x: str, axes: str, keepdims: int = 0) -> str:
        return g.op(op, [x, axes], keepdims=keepdims)

    mean, high, low = (reduce(op, h, "tokens") for op in ("ReduceMean", "ReduceMax",
                                                          "ReduceMin"))
    prod = reduce("ReduceProd", g.op("Sigmoid", [h]), "tokens")
    e = g.op("Exp", [g.op("Neg", [g.op("Abs", [mean])])])
    share = g.op("Div", [e, reduce("ReduceSum", e, "last", keepdims=1)])
    powered = g.op("Mul", [g.op("Pow", [e, g.op("Sigmoid", [high])]), g.op("Sub", [high, low])])
    one = g._init("one", np.array(1.0))
    damp = g.op("Reciprocal", [g.op("Add", [one, g.op("Mul", [high, high])])])
    p = g.op("Add", [g.op("Add", [share, powered]), g.op("Add", [prod, damp])])
    logits = _matmul(g, g.op("Log", [p]), dim, classes)
    y = g.op("LogSoftmax", [logits], axis=-1)
    return g.finish({"x": [batch, seq, dim]}, {y: [batch, classes]}, 18,
                    "paleozoic_testing.sequence", ir_version=9)
