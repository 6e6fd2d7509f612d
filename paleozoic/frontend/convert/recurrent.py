"""ONNX LSTM, GRU and RNN, converted from their ONNX nodes (convert/onnx_level.py): TVM's
Relax ONNX frontend has no converter for them. Each node becomes one layer (Lstm, Gru, Rnn)
per output something reads, Y_h sliced from Y when both are read.

Refused, each with the node named: sequence_lens other than a constant equal to the full
length for every batch entry; activations other than relu, sigmoid and tanh for RNN and
other than the defaults for LSTM and GRU; clip; input_forget=1; constant initial states
that are not all zero; constant x.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.convert.nodes import NodeInfo
from paleozoic.frontend.convert.onnx_level import Cut, OnnxReader
from paleozoic.frontend.convert.registry import OnnxOp, onnx_ops
from paleozoic.frontend.convert.values import Act
from paleozoic.frontend.convert.walker import Walker

_KINDS = {"LSTM": "Lstm", "GRU": "Gru", "RNN": "Rnn"}
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DEFAULT_ACTIVATIONS = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"],
                        "RNN": ["tanh"]}
_OUTPUT_ROLES = ("y", "y_h", "y_c")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class _Cell:
    """What the cut read of one node: its layer kind and attributes, the outputs something
    reads (by role: y, y_h, y_c) and its weights."""

    kind: str                                   # "Lstm", "Gru" or "Rnn"
    attrs: dict[str, Any]                       # the layer's attributes (less "output")
    roles: dict[str, str]                       # consumed role -> ONNX output name
    weights: dict[str, np.ndarray] = field(default_factory=dict)

    def emit(self, walker: Walker, inputs: list[Act]) -> dict[str, Act]:
        """One layer per consumed output (the paper's cell substitution: the wrapper class
        builds the per-step SDK ops); the later ones read the first one's weights."""
        shared: dict[str, str] = {}
        produced: dict[str, Act] = {}
        for role in self.roles:
            if role == "y_h" and "y" in produced:
                # Y_h is a step of Y (forward: the last, reverse: the first): sliced from
                # it rather than computing the whole sequence again.
                produced[role] = _last_steps(walker, self.attrs, produced["y"])
                continue
            produced[role] = walker.emit(self.kind, inputs, dict(self.attrs, output=role),
                                         self.weights if not shared else None,
                                         part="" if role == "y" else role,
                                         main=role == "y" or not shared)
            layer = walker.layers[-1]
            if shared:  # another output of the same node reads the first one's weights
                layer.weights.update(shared)
            else:
                shared = dict(layer.weights)
        return {self.roles[role]: out for role, out in produced.items()}


def _cut(node: onnx.NodeProto, info: NodeInfo, reader: OnnxReader, source: str) -> Cut:
    """The node's checks, weights and layer attributes (refused with the node named), and
    its outputs' shapes."""
    where = f"{source}: node {info.label!r} ({node.op_type})"
    op = node.op_type
    attrs = dict(info.attrs)

    def refuse(why: str) -> UnsupportedModelError:
        return UnsupportedModelError(f"{where}: {why}")

    slots = list(node.input) + [""] * (8 - len(node.input))
    x_name, w_name, r_name, b_name, lens_name, h_name, c_name, p_name = slots[:8]
    if op != "LSTM" and (c_name or p_name):
        raise refuse("has more inputs than the operator takes")
    direction = _text(attrs.get("direction", b"forward"))
    if direction not in ("forward", "reverse", "bidirectional"):
        raise refuse(f"direction={direction!r} is not forward, reverse or bidirectional")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(attrs.get("layout", 0))
    if layout not in (0, 1):
        raise refuse(f"layout={layout} is not 0 or 1")
    if "clip" in attrs:
        raise refuse(f"clip={attrs['clip']} (cell clipping) is not supported: the per-step ops "
                     f"have no clip; export without it")
    if int(attrs.get("input_forget", 0)) != 0:
        raise refuse("input_forget=1 (coupled input and forget gates) is not supported")
    names = [_text(a).lower() for a in attrs.get("activations", [])]
    default = _DEFAULT_ACTIVATIONS[op]
    per_direction = names[:len(default)] if names else default
    if names and names != per_direction * dirs:
        raise refuse(f"activations={names}: both directions must use the same functions")
    activation = "tanh"
    if op == "RNN":
        activation = per_direction[0]
        if activation not in ("relu", "sigmoid", "tanh"):
            raise refuse(f"activation {activation!r} is not supported (Relu, Sigmoid or Tanh: "
                         f"the SDK's Active functions)")
    elif per_direction != default:
        raise refuse(f"activations={names} are not supported; only the defaults "
                     f"{[a.capitalize() for a in default]} (the cell substitution's Active "
                     f"sigmoid/tanh)")

    weights: dict[str, np.ndarray] = {}
    for role, name in (("W", w_name), ("R", r_name), ("B", b_name), ("P", p_name)):
        if not name:
            continue
        value = reader.constant(name)
        if value is None:
            raise refuse(f"input {role} ({name!r}) is not a constant; recurrent weights must "
                         f"be initializers")
        weights[role] = np.ascontiguousarray(value, dtype=np.float32)
    if "W" not in weights or "R" not in weights:
        raise refuse("needs W and R")
    gates = _GATES[op]
    w, r = weights["W"], weights["R"]
    hidden = int(attrs.get("hidden_size", r.shape[-1]))
    if w.ndim != 3 or w.shape[:2] != (dirs, gates * hidden) or r.shape != (
            dirs, gates * hidden, hidden):
        raise refuse(f"W {w.shape} / R {r.shape} do not fit hidden_size={hidden} and "
                     f"{dirs} direction(s)")
    if "B" in weights and weights["B"].shape != (dirs, 2 * gates * hidden):
        raise refuse(f"B has shape {weights['B'].shape}, expected {(dirs, 2 * gates * hidden)}")
    peepholes = False
    if "P" in weights:
        if weights["P"].shape != (dirs, 3 * hidden):
            raise refuse(f"P has shape {weights['P'].shape}, expected {(dirs, 3 * hidden)}")
        peepholes = bool(np.any(weights["P"]))

    x_shape = reader.shapes.get(x_name)
    if reader.constant(x_name) is not None:
        raise refuse("its input X is a constant; a session computes from its inputs")
    if x_shape is None or len(x_shape) != 3:
        raise refuse(f"the shape of X ({x_name!r}) is not a static 3-D shape ({x_shape})")
    steps, batch = (x_shape[0], x_shape[1]) if layout == 0 else (x_shape[1], x_shape[0])
    if x_shape[2] != w.shape[2]:
        raise refuse(f"X has {x_shape[2]} features but W expects {w.shape[2]}")
    if lens_name:
        lens = reader.constant(lens_name)
        if lens is None or lens.shape != (batch,) or np.any(lens != steps):
            got = "a run-time input" if lens is None else f"{lens.tolist()}"
            raise refuse(f"sequence_lens is {got}; only a constant equal to the full length "
                         f"{steps} for every batch entry is supported (padded batches are "
                         f"not: the steps run for the whole sequence)")
    activations = [x_name]
    for role, name in (("initial_h", h_name), ("initial_c", c_name)):
        if not name:
            continue
        value = reader.constant(name)
        if value is None:
            if role == "initial_c" and not h_name:
                raise refuse("initial_c without initial_h is not supported; give initial_h "
                             "(zeros) too")
            activations.append(name)
        elif np.any(value):
            raise refuse(f"{role} ({name!r}) is a constant that is not all zero; give it as "
                         f"a graph input (the layer reads initial states as activations)")
    roles = {role: name for role, name in zip(_OUTPUT_ROLES, node.output)
             if name and name in reader.consumed}
    layer_attrs: dict[str, Any] = {"hidden_size": hidden, "direction": direction,
                                   "layout": layout}
    if op == "LSTM":
        layer_attrs["peepholes"] = peepholes
    elif op == "GRU":
        layer_attrs["linear_before_reset"] = bool(int(attrs.get("linear_before_reset", 0)))
    else:
        layer_attrs["activation"] = activation
    if not peepholes:
        weights.pop("P", None)
    cell = _Cell(_KINDS[op], layer_attrs, roles, weights)
    state = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    sequence = [steps, dirs, batch, hidden] if layout == 0 else [batch, steps, dirs, hidden]
    return Cut(info=info, activations=activations, emit=cell.emit,
               outputs={name: sequence if role == "y" else state for role, name in roles.items()},
               what="its cell substitution")


def _last_steps(walker: Walker, attrs: dict[str, Any], y: Act) -> Act:
    """Y_h from Y: per direction the step it ends on, joined on the direction axis and
    reshaped to Y_h's [D, B, H] (layout 0) or [B, D, H] (layout 1)."""
    shape = walker.tensors[y.name].shape
    layout = attrs["layout"]
    steps = shape[0] if layout == 0 else shape[1]
    t_axis, d_axis = (0, 1) if layout == 0 else (1, 2)
    dirs = shape[d_axis]
    pieces = []
    for d in range(dirs):
        reverse = attrs["direction"] == "reverse" or d == 1
        t = 0 if reverse else steps - 1
        begin, end = [0] * 4, list(shape)
        begin[t_axis], end[t_axis] = t, t + 1
        begin[d_axis], end[d_axis] = d, d + 1
        pieces.append(walker.emit("Slice", [y], {"begin": begin, "end": end, "step": [1] * 4},
                                  part=f"y_h_d{d}", main=False))
    joined = pieces[0] if dirs == 1 else walker.emit(
        "Concat", pieces, {"axis": d_axis}, part="y_h_join", main=False)
    hidden, batch = shape[3], shape[2] if layout == 0 else shape[0]
    state = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    return walker.emit("Reshape", [joined], {"shape": state}, part="y_h", main=False)


onnx_ops({
    # W, R, B (and LSTM's P) are weights; sequence_lens must be constant (and full);
    # initial_h / initial_c are activations (or constants of zeros).
    "LSTM": OnnxOp("Lstm (per output consumed: Y, Y_h, Y_c)", weights=(1, 2, 3, 7),
                   parameters=(4,), cut=_cut),
    "GRU": OnnxOp("Gru (per output consumed: Y, Y_h)", weights=(1, 2, 3), parameters=(4,),
                  cut=_cut),
    "RNN": OnnxOp("Rnn (per output consumed: Y, Y_h)", weights=(1, 2, 3), parameters=(4,),
                  cut=_cut),
})
