"""A small transformer encoder layer built with onnx.helper, for the sequence-model kinds.

    x -> LayerNorm -> Q, K, V (MatMul by constants) -> heads (Reshape, Transpose)
      -> MatMul(Q, K^T) -> * 1/sqrt(d) -> Softmax(axis=-1) -> MatMul(., V) -> merge heads
      -> MatMul -> Add residual -> LayerNorm -> MatMul -> GELU -> MatMul -> Add residual

`gelu` picks how GELU is written: "op" (ONNX Gelu, opset 20), "tanh" (Gelu with
approximate="tanh"), "erf" (PyTorch's export: Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5) or
"torch_tanh" (PyTorch's export of approximate="tanh": x * x * x, Mul 0.044715, Add x,
Mul sqrt(2/pi), Tanh, Add 1, Mul x, Mul 0.5).

    from paleozoic.testing.sequence import encoder_layer
    model = encoder_layer(seed=0)
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from paleozoic.testing.workloads import _Graph


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


def encoder_layer(seed: int = 0, batch: int = 2, seq: int = 16, dim: int = 32,
                  heads: int = 4, hidden: int = 64, gelu: str = "op") -> onnx.ModelProto:
    """One pre-norm encoder layer on a [batch, seq, dim] input "x"."""
    g = _Graph("encoder_layer", seed, 1)
    head = dim // heads
    split = g._init("heads.shape", np.array([batch, seq, heads, head]))
    merge = g._init("merge.shape", np.array([batch, seq, dim]))
    g.inits[-2:] = [onnx.numpy_helper.from_array(np.array([batch, seq, heads, head], np.int64),
                                                 "heads.shape"),
                    onnx.numpy_helper.from_array(np.array([batch, seq, dim], np.int64),
                                                 "merge.shape")]
    h = _layer_norm(g, "x", dim)
    q, k, v = (g.op("Transpose", [g.op("Reshape", [_matmul(g, h, dim, dim), split])],
                    perm=perm)
               for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))
    scale = g._init("attention.scale", np.array(1.0 / np.sqrt(head)))
    scores = g.op("Mul", [g.op("MatMul", [q, k]), scale])
    attention = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    merged = g.op("Reshape", [g.op("Transpose", [attention], perm=[0, 2, 1, 3]), merge])
    r = g.op("Add", ["x", _matmul(g, merged, dim, dim)])
    f = _matmul(g, _gelu(g, _matmul(g, _layer_norm(g, r, dim), dim, hidden), gelu), hidden, dim)
    y = g.op("Add", [r, f])
    graph = helper.make_graph(
        g.nodes, g.name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, dim])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [batch, seq, dim])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)],
                              producer_name="paleozoic.testing.sequence")
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


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
    graph = helper.make_graph(
        g.nodes, g.name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, dim])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [batch, classes])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="paleozoic.testing.sequence")
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model
