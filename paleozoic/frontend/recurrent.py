"""ONNX LSTM, GRU and RNN beside TVM: TVM's Relax ONNX frontend has no converter for them.

Before TVM parses the model, `cut_recurrent` takes each recurrent node out of the graph:
its consumed outputs become graph inputs of the model TVM sees (so the nodes reading them
are walked as usual) and its activation inputs (x, and initial_h / initial_c when they are
not constants) become extra graph outputs (so the walk tells which tensors hold them).
After the walk, `splice_recurrent` emits one layer per consumed output (Lstm / Gru / Rnn,
the paper's cell substitution: the wrapper class builds the per-step SDK ops) reading those
tensors, renames the stand-in inputs to the layers' outputs and restores the queue's
topological order.

Refused, each with the node named: sequence_lens other than a constant equal to the full
length for every batch entry; activations other than relu, sigmoid and tanh for RNN and
other than the defaults for LSTM and GRU; clip; input_forget=1; constant initial states
that are not all zero; constant x.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.convert import Act, NodeInfo, Walker
from paleozoic.frontend.convert.nodes import node_info
from paleozoic.ir import Layer

logger = logging.getLogger(__name__)

RECURRENT_OPS = {"LSTM": "Lstm", "GRU": "Gru", "RNN": "Rnn"}
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DEFAULT_ACTIVATIONS = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"],
                        "RNN": ["tanh"]}
_OUTPUT_ROLES = ("y", "y_h", "y_c")


@dataclass
class RecurrentCut:
    """One recurrent node taken out of the graph TVM parses."""

    info: NodeInfo
    op: str                                     # "LSTM", "GRU" or "RNN"
    attrs: dict[str, Any]                       # the layer's attributes (less "output")
    activations: list[str]                      # x, then initial_h / initial_c if given
    outputs: dict[str, str]                     # consumed role ("y", ...) -> ONNX name
    weights: dict[str, np.ndarray] = field(default_factory=dict)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class _Reader:
    """Constant values and static shapes of the model's tensors."""

    def __init__(self, proto: onnx.ModelProto, streamed: Mapping[str, np.ndarray]) -> None:
        self.initializers = {t.name: t for t in proto.graph.initializer}
        self.streamed = streamed
        try:
            inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False)
        except Exception:  # noqa: BLE001 -- shapes then come from the inputs alone
            inferred = proto
        self.shapes: dict[str, tuple[int, ...]] = {}
        graph = inferred.graph
        for info in list(graph.input) + list(graph.value_info) + list(graph.output):
            dims = info.type.tensor_type.shape.dim
            if dims and all(d.HasField("dim_value") for d in dims):
                self.shapes[info.name] = tuple(int(d.dim_value) for d in dims)

    def constant(self, name: str) -> np.ndarray | None:
        if name in self.streamed:
            return np.asarray(self.streamed[name])
        tensor = self.initializers.get(name)
        return None if tensor is None else numpy_helper.to_array(tensor)


def _consumers(graph: onnx.GraphProto) -> set[str]:
    names = {o.name for o in graph.output}
    for node in graph.node:
        names.update(i for i in node.input if i)
    return names


def _cut_one(node: onnx.NodeProto, index: int, reader: _Reader, consumed: set[str],
             source: str) -> RecurrentCut:
    info = node_info(index, node)
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
    outputs = {role: name for role, name in zip(_OUTPUT_ROLES, node.output)
               if name and name in consumed}
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
    return RecurrentCut(info=info, op=op, attrs=layer_attrs, activations=activations,
                        outputs=outputs, weights=weights)


def _output_shape(cut: RecurrentCut, x_shape: tuple[int, ...], role: str) -> list[int]:
    layout, hidden = cut.attrs["layout"], cut.attrs["hidden_size"]
    dirs = 2 if cut.attrs["direction"] == "bidirectional" else 1
    steps, batch = (x_shape[0], x_shape[1]) if layout == 0 else (x_shape[1], x_shape[0])
    if role != "y":
        return [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    return [steps, dirs, batch, hidden] if layout == 0 else [batch, steps, dirs, hidden]


def cut_recurrent(proto: onnx.ModelProto, source: str,
                  streamed: Mapping[str, np.ndarray]) -> list[RecurrentCut]:
    """Takes the recurrent nodes out of `proto` (in place; see the module docstring) and
    returns them in graph order; the extra graph outputs are appended after the model's."""
    graph = proto.graph
    if not any(n.op_type in RECURRENT_OPS for n in graph.node):
        return []
    reader = _Reader(proto, streamed)
    consumed = _consumers(graph)
    cuts: list[RecurrentCut] = []
    kept: list[onnx.NodeProto] = []
    for index, node in enumerate(graph.node):
        if node.op_type not in RECURRENT_OPS:
            kept.append(node)
            continue
        # Negative indexes: the walker numbers the nodes TVM sees, which no longer hold it.
        cuts.append(_cut_one(node, -1 - index, reader, consumed, source))
        cut = cuts[-1]
        x_shape = reader.shapes[cut.activations[0]]
        for role, name in cut.outputs.items():
            graph.input.append(onnx.helper.make_tensor_value_info(
                name, onnx.TensorProto.FLOAT, _output_shape(cut, x_shape, role)))
    del graph.node[:]
    graph.node.extend(kept)
    present = {o.name for o in graph.output}
    for cut in cuts:
        for name in cut.activations:
            if name not in present:
                present.add(name)
                graph.output.append(onnx.helper.make_tensor_value_info(
                    name, onnx.TensorProto.FLOAT, list(reader.shapes.get(name, ())) or None))
    # Initializers only the cut nodes read (their weights, now held by the cuts) stay out of
    # what TVM copies.
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    keep = [t for t in graph.initializer if t.name in used]
    if len(keep) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(keep)
    logger.info("%s: %d recurrent node(s) substituted beside TVM", source, len(cuts))
    return cuts


def stand_in_names(cuts: list[RecurrentCut]) -> set[str]:
    """The ONNX names of the graph inputs that stand in for the cut nodes' outputs."""
    return {name for cut in cuts for name in cut.outputs.values()}


def splice_recurrent(walker: Walker, cuts: list[RecurrentCut], stand_ins: Mapping[str, str],
                     activations: Mapping[str, Act]) -> dict[str, str]:
    """Emits the cut nodes' layers after the walk and renames their stand-in tensors.

    `stand_ins`: ONNX output name -> the walker's tensor standing in for it; `activations`:
    ONNX name of each cut node's activation input -> the walked tensor holding it. Returns
    the renames (stand-in tensor -> layer output), already applied to the walker's layers;
    the walker's layers are left in topological order."""
    renames: dict[str, str] = {}
    for cut in cuts:
        kind = RECURRENT_OPS[cut.op]
        inputs = []
        for name in cut.activations:
            act = activations[name]
            inputs.append(Act(renames.get(act.name, act.name)))
        walker.current_node = cut.info
        walker.current_var = "its cell substitution"
        shared: dict[str, str] = {}
        produced: dict[str, Act] = {}
        for role, name in cut.outputs.items():
            if role == "y_h" and "y" in produced:
                # Y_h is a step of Y (forward: the last, reverse: the first): sliced from
                # it rather than computing the whole sequence again.
                out = _last_steps(walker, cut, produced["y"])
            else:
                attrs = dict(cut.attrs, output=role)
                out = walker.emit(kind, inputs, attrs, cut.weights if not shared else None,
                                  part="" if role == "y" else role,
                                  main=role == "y" or not shared)
                layer = walker.layers[-1]
                if shared:  # another output of the same node reads the first one's weights
                    layer.weights.update(shared)
                else:
                    shared = dict(layer.weights)
            produced[role] = out
            stand_in = stand_ins[name]
            if walker.tensors[stand_in].shape != walker.tensors[out.name].shape:
                raise walker.fail(f"output {name!r}: the layer's shape "
                                  f"{walker.tensors[out.name].shape} differs from the shape "
                                  f"given to TVM {walker.tensors[stand_in].shape}")
            renames[stand_in] = out.name
        walker.current_node = None
    for stand_in in renames:
        del walker.tensors[stand_in]
    for layer in walker.layers:
        layer.inputs = [renames.get(n, n) for n in layer.inputs]
    walker.layers[:] = _topological(walker.layers)
    return renames


def _last_steps(walker: Walker, cut: RecurrentCut, y: Act) -> Act:
    """Y_h from Y: per direction the step it ends on, joined on the direction axis and
    reshaped to Y_h's [D, B, H] (layout 0) or [B, D, H] (layout 1)."""
    shape = walker.tensors[y.name].shape
    layout = cut.attrs["layout"]
    steps = shape[0] if layout == 0 else shape[1]
    t_axis, d_axis = (0, 1) if layout == 0 else (1, 2)
    dirs = shape[d_axis]
    pieces = []
    for d in range(dirs):
        reverse = cut.attrs["direction"] == "reverse" or d == 1
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


def _topological(layers: list[Layer]) -> list[Layer]:
    """`layers` in an order where each comes after the producers of its inputs, otherwise
    as close to the given order as possible (Kahn's algorithm, lowest position first)."""
    producer = {layer.output: i for i, layer in enumerate(layers)}
    waiting = [0] * len(layers)
    readers: list[list[int]] = [[] for _ in layers]
    for i, layer in enumerate(layers):
        for name in set(layer.inputs):
            if name in producer:
                waiting[i] += 1
                readers[producer[name]].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[Layer] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(layers[i])
        for j in readers[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if len(order) != len(layers):
        raise UnsupportedModelError("the recurrent layers make the layer graph cyclic")
    return order
