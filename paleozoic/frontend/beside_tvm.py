"""Nodes converted beside TVM (their operators' OnnxOp has a `cut`: convert/onnx_level.py).

Before TVM parses the model, `cut_nodes` takes each such node out of the graph: its consumed
outputs become graph inputs of the model TVM sees (so the nodes reading them are walked as
usual) and its activation inputs become extra graph outputs (so the walk tells which
tensors hold them). After the walk, `splice` emits each cut node's layers over those
tensors, renames the stand-in inputs to the layers' outputs and restores the queue's
topological order.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Mapping

import numpy as np
import onnx

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.convert import ONNX_OPS, Act, Walker
from paleozoic.frontend.convert.nodes import NodeInfo, node_info
from paleozoic.frontend.convert.onnx_level import Cut, OnnxReader
from paleozoic.ir import Layer

logger = logging.getLogger(__name__)


def _cut_of(op_type: str) -> Callable[[onnx.NodeProto, NodeInfo, OnnxReader, str], Cut] | None:
    entry = ONNX_OPS.get(op_type)
    return None if entry is None else entry.cut


def cut_nodes(proto: onnx.ModelProto, source: str,
              streamed: Mapping[str, np.ndarray]) -> list[Cut]:
    """Takes the nodes converted beside TVM out of `proto` (in place; see the module
    docstring) and returns them in graph order; the extra graph outputs are appended after
    the model's."""
    graph = proto.graph
    if not any(_cut_of(n.op_type) for n in graph.node):
        return []
    reader = OnnxReader(proto, streamed)
    cuts: list[Cut] = []
    kept: list[onnx.NodeProto] = []
    for index, node in enumerate(graph.node):
        cut = _cut_of(node.op_type)
        if cut is None:
            kept.append(node)
            continue
        # Negative indexes: the walker numbers the nodes TVM sees, which no longer hold it.
        cuts.append(cut(node, node_info(-1 - index, node), reader, source))
        for name, shape in cuts[-1].outputs.items():
            graph.input.append(onnx.helper.make_tensor_value_info(
                name, onnx.TensorProto.FLOAT, shape))
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
    logger.info("%s: %d node(s) converted beside TVM", source, len(cuts))
    return cuts


def stand_in_names(cuts: list[Cut]) -> set[str]:
    """The ONNX names of the graph inputs that stand in for the cut nodes' outputs."""
    return {name for cut in cuts for name in cut.outputs}


def splice(walker: Walker, cuts: list[Cut], stand_ins: Mapping[str, str],
           activations: Mapping[str, Act]) -> dict[str, str]:
    """Emits the cut nodes' layers after the walk and renames their stand-in tensors.

    `stand_ins`: ONNX output name -> the walker's tensor standing in for it; `activations`:
    ONNX name of each cut node's activation input -> the walked tensor holding it. Returns
    the renames (stand-in tensor -> layer output), already applied to the walker's layers;
    the walker's layers are left in topological order."""
    renames: dict[str, str] = {}
    for cut in cuts:
        inputs = [Act(renames.get(activations[name].name, activations[name].name))
                  for name in cut.activations]
        walker.current_node = cut.info
        walker.current_var = cut.what
        for name, out in cut.emit(walker, inputs).items():
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
        raise UnsupportedModelError("the layers converted beside TVM make the layer graph "
                                    "cyclic")
    return order
