"""Hypothesis strategies for random valid small CNNs (chains and DAGs with residual adds and
channel concats) and random valid plans over their layer queues, plus the check that runs
one through Paleozoic and compares it with onnxruntime. Used by test_fuzz.py and
scripts/fuzz_long.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize.base import spans_to_plan

OPSET = 13


@dataclass
class GraphBuilder:
    rng: np.random.Generator
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    consumed: set[str] = field(default_factory=set)
    count: int = 0

    def name(self, op: str) -> str:
        self.count += 1
        return f"{op.lower()}{self.count}"

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], shape: tuple[int, ...], **attrs: object) -> str:
        name = self.name(op)
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        self.consumed.update(inputs)
        self.shapes[name] = shape
        return name


def _out(size: int, kernel: int, stride: int, pad: int, dilation: int = 1,
         ceil: bool = False) -> int:
    span = size + pad - dilation * (kernel - 1) - 1
    return (math.ceil(span / stride) if ceil else span // stride) + 1


@st.composite
def conv_step(draw: st.DrawFn, g: GraphBuilder, x: str) -> str:
    _, c, h, w = g.shapes[x]
    groups = draw(st.sampled_from([d for d in range(1, c + 1) if c % d == 0]))
    out_c = groups * draw(st.integers(1, max(1, 8 // groups)))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pads = [draw(st.integers(0, k - 1)) for k in (kh, kw, kh, kw)]
    oh = _out(h, kh, sh, pads[0] + pads[2], dh)
    ow = _out(w, kw, sw, pads[1] + pads[3], dw)
    if oh < 1 or ow < 1:
        return x
    weight = g.const(f"{g.name('w')}", g.rng.standard_normal((out_c, c // groups, kh, kw))
                     * (1.0 / math.sqrt(c // groups * kh * kw)))
    inputs = [x, weight]
    if draw(st.booleans()):
        inputs.append(g.const(g.name("b"), g.rng.standard_normal(out_c) * 0.1))
    return g.node("Conv", inputs, (1, out_c, oh, ow), kernel_shape=[kh, kw],
                  strides=[sh, sw], pads=pads, dilations=[dh, dw], group=groups)


@st.composite
def pool_step(draw: st.DrawFn, g: GraphBuilder, x: str) -> str:
    _, c, h, w = g.shapes[x]
    op = draw(st.sampled_from(["MaxPool", "AveragePool"]))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pads = [draw(st.integers(0, k - 1)) for k in (kh, kw, kh, kw)]
    ceil = draw(st.booleans())
    oh = _out(h, kh, sh, pads[0] + pads[2], ceil=ceil)
    ow = _out(w, kw, sw, pads[1] + pads[3], ceil=ceil)
    # ceil_mode: ONNX (like PyTorch) drops a last window that would start in the end padding
    if ceil:
        oh -= (oh - 1) * sh >= h + pads[0]
        ow -= (ow - 1) * sw >= w + pads[1]
    if oh < 1 or ow < 1 or kh > h + pads[0] + pads[2] or kw > w + pads[1] + pads[3]:
        return x
    attrs: dict[str, object] = {"kernel_shape": [kh, kw], "strides": [sh, sw], "pads": pads,
                                "ceil_mode": int(ceil)}
    if op == "AveragePool":
        attrs["count_include_pad"] = int(draw(st.booleans()))
    return g.node(op, [x], (1, c, oh, ow), **attrs)


@st.composite
def cnn_models(draw: st.DrawFn, max_steps: int = 7) -> onnx.ModelProto:
    seed = draw(st.integers(0, 2**31 - 1))
    g = GraphBuilder(np.random.default_rng(seed))
    c = draw(st.integers(1, 8))
    h, w = draw(st.integers(5, 20)), draw(st.integers(5, 20))
    g.shapes["x"] = (1, c, h, w)
    tensors = ["x"]
    for _ in range(draw(st.integers(1, max_steps))):
        # mostly extend the newest tensor; sometimes branch from an older one (a DAG)
        x = tensors[-1] if draw(st.integers(0, 3)) else draw(st.sampled_from(tensors))
        kind = draw(st.sampled_from(["conv", "conv", "pool", "relu", "bn", "add", "concat"]))
        if kind == "conv":
            y = draw(conv_step(g, x))
        elif kind == "pool":
            y = draw(pool_step(g, x))
        elif kind == "relu":
            y = g.node("Relu", [x], g.shapes[x])
        elif kind == "bn":
            ch = g.shapes[x][1]
            names = [g.const(g.name(role), value) for role, value in (
                ("gamma", g.rng.uniform(0.5, 1.5, ch)), ("beta", g.rng.standard_normal(ch)),
                ("mean", g.rng.standard_normal(ch) * 0.1), ("var", g.rng.uniform(0.5, 2, ch)))]
            y = g.node("BatchNormalization", [x, *names], g.shapes[x], epsilon=1e-5)
        else:
            partners = [t for t in tensors if t != x and (
                g.shapes[t] == g.shapes[x] if kind == "add"
                else g.shapes[t][2:] == g.shapes[x][2:])]
            if not partners:
                y = g.node("Relu", [x], g.shapes[x])
            else:
                other = draw(st.sampled_from(partners))
                if kind == "add":
                    y = g.node("Add", [x, other], g.shapes[x])
                else:
                    n, cx, hh, ww = g.shapes[x]
                    y = g.node("Concat", [x, other], (n, cx + g.shapes[other][1], hh, ww),
                               axis=1)
        if y != x:
            tensors.append(y)
    if len(tensors) == 1:
        tensors.append(g.node("Relu", ["x"], g.shapes["x"]))
    if draw(st.booleans()):  # classifier head: GAP -> Flatten -> Gemm (-> Softmax)
        last = tensors[-1]
        ch = g.shapes[last][1]
        gap = g.node("GlobalAveragePool", [last], (1, ch, 1, 1))
        flat = g.node("Flatten", [gap], (1, ch))
        classes = draw(st.integers(1, 10))
        fc_w = g.const(g.name("fc_w"), g.rng.standard_normal((classes, ch)) / math.sqrt(ch))
        fc_b = g.const(g.name("fc_b"), g.rng.standard_normal(classes) * 0.1)
        y = g.node("Gemm", [flat, fc_w, fc_b], (1, classes), transB=1)
        if draw(st.booleans()):
            y = g.node("Softmax", [y], (1, classes), axis=1)
        tensors += [gap, flat, y]
    outputs = [t for t in tensors[1:] if t not in g.consumed]
    graph = helper.make_graph(
        g.nodes, "fuzz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
        [helper.make_tensor_value_info(t, TensorProto.FLOAT, list(g.shapes[t]))
         for t in outputs], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@st.composite
def plans(draw: st.DrawFn, queue: LayerQueue) -> Plan:
    """Random cuts of the queue into contiguous blocks, each on a random MP (1..32)."""
    n = len(queue.layers)
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    mps = st.one_of(st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(1, 32))
    spans = [(a, b, draw(mps)) for a, b in zip(bounds, bounds[1:])]
    return spans_to_plan(queue, spans, "fuzz")


def compare(model: onnx.ModelProto, queue: LayerQueue, plan: Plan, seed: int = 0) -> None:
    """Runs the queue under the plan through the runtime; asserts it matches onnxruntime."""
    from robust_util import ort_outputs, run_queue

    x = np.random.default_rng(seed).standard_normal(
        [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    ).astype(np.float32)
    refs = ort_outputs(model, {"x": x})
    ours = run_queue(queue, plan, [x])
    assert len(ours) == len(refs)
    for i, (a, ref) in enumerate(zip(ours, refs)):
        assert a.size == ref.size, f"output {i}: {a.shape} vs {ref.shape}"
        np.testing.assert_allclose(a.reshape(ref.shape), ref, rtol=1e-3, atol=1e-4,
                                   err_msg=f"output {i} ({queue.outputs[i]})")
