"""The runtime graph: a LayerQueue's inputs and layers built in a runtime Session (the
pybind wrapper), in queue order, for the device-model oracle (shapes only), the measured
oracle, the plan runner and the raw form's recording (weights bound)."""

from __future__ import annotations

from typing import Any, Collection, Mapping

from paleozoic.ir import LayerQueue
from paleozoic.ops import KINDS


class InputRecorder:
    """Stands in for a Session while build_runtime_graph builds the graph, keeping the input
    tensors so the caller can write data into them (measurement, calibration)."""

    def __init__(self, session: object) -> None:
        self._session = session
        self.inputs: list[object] = []

    def input(self, name: str, shape: list[int], dtype: str = "float32") -> object:
        tensor = self._session.input(name, shape, dtype)  # type: ignore[attr-defined]
        self.inputs.append(tensor)
        return tensor

    def __getattr__(self, attr: str) -> object:
        value = getattr(self._session, attr)
        if callable(value):  # a layer builder, asked for once per layer: kept
            self.__dict__[attr] = value
        return value


def build_runtime_graph(queue: LayerQueue, session: Any, bind_weights: bool,
                        sparse: Collection[str] = (),
                        preprocess: Mapping[str, str] | None = None) -> list[Any]:
    """Adds the queue's inputs and layers to `session` (a paleozoic._runtime.Session), in
    queue order, marks the graph outputs, and returns the runtime layers (one per queue
    layer). With bind_weights, each layer with weights is configured from queue.weights
    (needed to compile and run; the device model only needs shapes). The layers named in
    `sparse` are put in the SDK's sparse mode, their weights bound in any case: the device
    model prices the zero pairs it finds in them. `preprocess` gives graph inputs and
    outputs their data-preprocess strategy (Plan.preprocess)."""
    tensors: dict[str, Any] = {}
    preprocess = preprocess or {}
    for info in queue.inputs:
        tensors[info.name] = session.input(info.name, list(info.shape), info.dtype)
        if info.name in preprocess:
            tensors[info.name].set_data_preprocess_strategy(preprocess[info.name])
    layers = []
    for layer in queue.layers:
        try:
            inputs = [tensors[name] for name in layer.inputs]
        except KeyError as missing:
            raise ValueError(f"layer {layer.name!r} reads {missing} before it is produced; "
                             f"the queue is not in topological order") from None
        kind = KINDS[layer.kind]
        built = kind.build_runtime(session, layer.name, layer.op.attrs, inputs)
        if tuple(built.output.shape) != tuple(queue.shape(layer.output)):
            raise ValueError(f"layer {layer.name!r}: runtime output shape "
                             f"{built.output.shape} differs from the queue's "
                             f"{queue.shape(layer.output)}")
        tensors[layer.output] = built.output
        roles = kind.declared_roles(layer.op.attrs)
        if layer.name in sparse:
            built.set_sparse(True)
        if (bind_weights or layer.name in sparse) and roles:
            values = [queue.weights[layer.weights[role]] if role in layer.weights else None
                      for role in roles]
            built.config(*values)
        layers.append(built)
    for name in queue.outputs:
        session.mark_output(tensors[name])
        if name in preprocess:
            tensors[name].set_data_preprocess_strategy(preprocess[name])
    return layers
