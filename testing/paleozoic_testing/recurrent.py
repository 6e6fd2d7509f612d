"""Recurrent models and their float64 truth, for the LSTM, GRU and RNN kinds.

`reference` computes ONNX LSTM / GRU / RNN in float64 numpy, written from the operator
specification (gate orders i, o, f, c / z, r, h; both bias vectors; peepholes; initial
states; every direction and layout). `recurrent_stack` builds a model with onnx.helper: a
stack of recurrent nodes (LSTM or GRU, in the given direction and layout) with the
Transpose/Reshape between them that PyTorch's export writes, and a MatMul head on the last
node's Y_h.

    from paleozoic_testing.recurrent import recurrent_stack
    model, feeds = recurrent_stack("LSTM", direction="bidirectional", layout=1, seed=0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}

_ACT = {
    "sigmoid": lambda v: 0.5 * (1.0 + np.tanh(0.5 * v)),  # no overflow at -1e3
    "tanh": np.tanh,
    "relu": lambda v: np.maximum(v, 0.0),
}


def reference(op: str, x: np.ndarray, w: np.ndarray, r: np.ndarray,
              b: np.ndarray | None = None, initial_h: np.ndarray | None = None,
              initial_c: np.ndarray | None = None, p: np.ndarray | None = None, *,
              direction: str = "forward", layout: int = 0, linear_before_reset: int = 0,
              activation: str = "tanh") -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """ONNX `op` ("LSTM", "GRU", "RNN") in float64: (Y, Y_h, Y_c) in the given layout
    (Y_c None but for LSTM). `activation` is RNN's f."""
    x = np.asarray(x, np.float64)
    if layout == 1:
        x = x.transpose(1, 0, 2)
    steps, batch, _ = x.shape
    dirs = 2 if direction == "bidirectional" else 1
    hidden = r.shape[-1]
    g = GATES[op]
    b = np.zeros((dirs, 2 * g * hidden)) if b is None else np.asarray(b, np.float64)
    h0 = np.zeros((dirs, batch, hidden)) if initial_h is None else np.asarray(initial_h, np.float64)
    c0 = np.zeros((dirs, batch, hidden)) if initial_c is None else np.asarray(initial_c, np.float64)
    if layout == 1:
        h0 = h0.transpose(1, 0, 2) if initial_h is not None else h0
        c0 = c0.transpose(1, 0, 2) if initial_c is not None else c0
    sig, tanh = _ACT["sigmoid"], np.tanh
    y = np.zeros((steps, dirs, batch, hidden))
    y_h = np.zeros((dirs, batch, hidden))
    y_c = np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        wd, rd = np.asarray(w[d], np.float64), np.asarray(r[d], np.float64)
        wb, rb = b[d, :g * hidden], b[d, g * hidden:]
        h, c = h0[d], c0[d]
        reverse = direction == "reverse" or d == 1
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            xt = x[t]
            if op == "RNN":
                h = _ACT[activation](xt @ wd.T + h @ rd.T + wb + rb)
            elif op == "LSTM":
                gates = xt @ wd.T + h @ rd.T + wb + rb
                gi, go, gf, gc = np.split(gates, 4, axis=1)
                pi, po, pf = (np.zeros(hidden),) * 3 if p is None else np.split(
                    np.asarray(p[d], np.float64), 3)
                i = sig(gi + pi * c)
                f = sig(gf + pf * c)
                c = f * c + i * tanh(gc)
                o = sig(go + po * c)
                h = o * tanh(c)
            else:  # GRU
                wz, wr, wh = np.split(wd, 3)
                rz, rr, rh = np.split(rd, 3)
                wbz, wbr, wbh = np.split(wb, 3)
                rbz, rbr, rbh = np.split(rb, 3)
                z = sig(xt @ wz.T + h @ rz.T + wbz + rbz)
                rt = sig(xt @ wr.T + h @ rr.T + wbr + rbr)
                if linear_before_reset:
                    n = tanh(xt @ wh.T + rt * (h @ rh.T + rbh) + wbh)
                else:
                    n = tanh(xt @ wh.T + (rt * h) @ rh.T + rbh + wbh)
                h = (1 - z) * n + z * h
            y[t, d] = h
        y_h[d], y_c[d] = h, c
    if layout == 1:
        return (y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2),
                y_c.transpose(1, 0, 2) if op == "LSTM" else None)
    return y, y_h, (y_c if op == "LSTM" else None)


def random_weights(op: str, input_size: int, hidden: int, dirs: int, rng: np.random.Generator,
                   peepholes: bool = False) -> dict[str, np.ndarray]:
    """W, R, B (and P) of standard-normal entries scaled as PyTorch initialises them."""
    g = GATES[op]
    k = 1.0 / np.sqrt(hidden)
    out = {"W": rng.uniform(-k, k, (dirs, g * hidden, input_size)),
           "R": rng.uniform(-k, k, (dirs, g * hidden, hidden)),
           "B": rng.uniform(-k, k, (dirs, 2 * g * hidden))}
    if peepholes:
        out["P"] = rng.uniform(-k, k, (dirs, 3 * hidden))
    return {n: v.astype(np.float32) for n, v in out.items()}


def recurrent_stack(op: str, *, direction: str = "forward", layout: int = 0, layers: int = 2,
                    steps: int = 7, batch: int = 3, input_size: int = 5, hidden: int = 6,
                    classes: int = 4, linear_before_reset: int = 0, initial_h: bool = False,
                    seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A stack of `layers` `op` nodes; between them Y [T, D, B, H] (layout 0) becomes the
    next x [T, B, D*H] by Transpose + Reshape as PyTorch exports it (layout 1: Y [B, T, D, H]
    by Reshape alone); the head is a MatMul on the last node's Y_h, flattened. With
    `initial_h`, the first node reads its initial state from a graph input `h0`. Returns the
    model and standard-normal feeds."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    x_shape = [steps, batch, input_size] if layout == 0 else [batch, steps, input_size]
    state_shape = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    feeds: dict[str, np.ndarray] = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    if initial_h:
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, state_shape))
        feeds["h0"] = rng.standard_normal(state_shape).astype(np.float32)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def init(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    x, size = "x", input_size
    attrs: dict[str, Any] = {"hidden_size": hidden, "direction": direction}
    if layout:
        attrs["layout"] = 1
    if op == "GRU":
        attrs["linear_before_reset"] = linear_before_reset
    y_h = ""
    for k in range(layers):
        wts = random_weights(op, size, hidden, dirs, rng)
        names = [x, init(f"l{k}.W", wts["W"]), init(f"l{k}.R", wts["R"]), init(f"l{k}.B", wts["B"])]
        if initial_h and k == 0:
            names += ["", "h0"]
        y, y_h = f"l{k}_y", f"l{k}_y_h"
        nodes.append(helper.make_node(op, names, [y, y_h], name=f"{op.lower()}{k}", **attrs))
        if layout == 0:
            moved = f"l{k}_yt"
            nodes.append(helper.make_node("Transpose", [y], [moved], perm=[0, 2, 1, 3]))
            y = moved
        shape = f"l{k}.shape"
        inits.append(numpy_helper.from_array(np.array([0, 0, -1], np.int64), shape))
        x = f"l{k}_out"
        nodes.append(helper.make_node("Reshape", [y, shape], [x]))
        size = dirs * hidden
    # Head: Y_h [D, B, H] (layout 0) -> [B, D, H] -> [B, D*H] -> MatMul.
    if layout == 0:
        nodes.append(helper.make_node("Transpose", [y_h], ["h_t"], perm=[1, 0, 2]))
        y_h = "h_t"
    flat = "flat.shape"
    inits.append(numpy_helper.from_array(np.array([batch, dirs * hidden], np.int64), flat))
    nodes.append(helper.make_node("Reshape", [y_h, flat], ["h_flat"]))
    head = init("head.W", rng.uniform(-0.5, 0.5, (dirs * hidden, classes)))
    nodes.append(helper.make_node("MatMul", ["h_flat", head], ["logits"]))
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes]),
               helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                             x_shape[:2] + [dirs * hidden])]
    graph = helper.make_graph(nodes, f"{op.lower()}_stack", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model, feeds
