"""Operators converted from their ONNX node, beside TVM: TVM's Relax ONNX frontend has no
converter for them (the recurrent operators), so they never reach a Relax binding. An operator
whose OnnxOp has a `cut` function is one: paleozoic.frontend.beside_tvm takes its nodes out
of the graph TVM parses with what `cut` read of each (a Cut: the node's run-time inputs,
the outputs something reads and how to emit its layers), and emits those layers after the
walk, over the tensors the walk made of the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.frontend.convert.nodes import NodeInfo


@dataclass
class Cut:
    """One node taken out of the graph TVM parses, as its operator's `cut` read it."""

    info: NodeInfo
    activations: list[str]                  # its run-time inputs' ONNX names, in order
    # Each output something reads -> its shape, given to TVM as a graph input standing in
    # for it until the node's layers exist.
    outputs: dict[str, list[int]]
    # (walker, the walked activations) -> ONNX output name -> the tensor (an Act) computing it.
    emit: Callable[[Any, list[Any]], dict[str, Any]]
    what: str = "its conversion"            # how an error places itself in the node


class OnnxReader:
    """What a `cut` reads of the model beside its node: constant values, static shapes and
    which tensors anything reads."""

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
        self.consumed = {o.name for o in proto.graph.output}
        for node in proto.graph.node:
            self.consumed.update(i for i in node.input if i)

    def constant(self, name: str) -> np.ndarray | None:
        if name in self.streamed:
            return np.asarray(self.streamed[name])
        tensor = self.initializers.get(name)
        return None if tensor is None else numpy_helper.to_array(tensor)
