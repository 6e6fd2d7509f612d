"""Runs a LayerQueue under a plan through the pybind runtime (paleozoic._runtime): the same
wrapper and mock SDK an emitted session links, without writing and compiling C++."""

from __future__ import annotations

import numpy as np

from paleozoic.ir import LayerQueue, Plan


def run_queue(queue: LayerQueue, plan: Plan, feeds: list[np.ndarray]) -> list[np.ndarray]:
    from paleozoic import _runtime
    from paleozoic.optimize.device_cost import build_runtime_graph

    session = _runtime.Session()
    inputs: list[object] = []

    class Recorder:
        def input(self, name: str, shape: list[int]) -> object:
            tensor = session.input(name, shape)
            inputs.append(tensor)
            return tensor

        def __getattr__(self, attr: str) -> object:
            return getattr(session, attr)

    layers = build_runtime_graph(queue, Recorder(), bind_weights=True)
    by_name = {layer.name: built for layer, built in zip(queue.layers, layers)}
    for tensor, value in zip(inputs, feeds):
        session.set_input(tensor, np.ascontiguousarray(value, dtype=np.float32))
    for block in plan.blocks:
        session.compile_block(block.name, block.fuse, block.mp,
                              [by_name[name] for name in block.layers])
    session.run()
    out_layers = {layer.output: built for layer, built in zip(queue.layers, layers)}
    return [np.array(session.get(out_layers[name].output)) for name in queue.outputs]
