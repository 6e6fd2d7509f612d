"""A layer queue built once in a runtime Session and compiled under a plan (cuts, fusion,
MP and precision, with the int8 parameters of a calibration), then run on batches.

The same blocks an emitted session compiles, through the pybind runtime instead of g++:
what `paleozoic debug`, the accuracy-aware tuner and the precision benchmark run."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import Precision, preprocess_refusal


class PlanRunner:
    """`queue` compiled as `plan` says. With `keep` (tensor names), those layer outputs stay
    readable: their producers are compiled outside fusion so nothing internal is lost, at
    the cost of the fused timing — use it for per-layer inspection, not timing. `sdk`: the
    SDK that computes (paleozoic.runner.sdk)."""

    def __init__(self, queue: LayerQueue, plan: Plan,
                 quantization: Mapping[str, Any] | None = None,
                 keep: Iterable[str] = (), sdk: str = "mock") -> None:
        from paleozoic.runner.graph import InputRecorder, build_runtime_graph

        plan.validate(queue)
        self.queue = queue
        self.plan = plan
        from paleozoic.runner.sdk import runtime_module

        self.session = runtime_module(sdk).Session()
        keep = set(keep)
        output_of = {layer.name: layer.output for layer in queue.layers}
        # `keep` unfuses blocks; a conversion side is for a fused block's I/O, and changes
        # no number, so the tensors of the blocks it unfuses convert as without one.
        kept = [dataclasses.replace(block, fuse=block.fuse and not keep & {
            output_of[name] for name in block.layers}) for block in plan.blocks]
        compiled_as = dataclasses.replace(plan, blocks=kept)
        preprocess = {name: side for name, side in plan.preprocess.items()
                      if preprocess_refusal(compiled_as, queue, name) is None}
        recorder = InputRecorder(self.session)
        built = build_runtime_graph(queue, recorder, bind_weights=True,
                                    sparse={n for b in plan.blocks for n in b.sparse},
                                    preprocess=preprocess)
        self.inputs = recorder.inputs
        self.layers = {layer.name: b for layer, b in zip(queue.layers, built)}
        self.outputs_of = {layer.output: b.output for layer, b in zip(queue.layers, built)}
        quantization = quantization or {}
        needs = [(block.name, name) for block in plan.blocks for name in block.layers
                 if block.precision_of(name) is Precision.INT8
                 and self.layers[name].has_int8_mode and name not in quantization]
        if needs:
            block, layer = needs[0]
            raise ValueError(f"block {block!r} computes layer {layer!r} in int8 but no "
                             f"quantisation parameters were given (a calibration file)")
        for name, q in quantization.items():
            if name in self.layers:
                self.layers[name].set_quantization(tuple(q.input), [tuple(f) for f in q.filter])
        for block in kept:
            compiled = self.session.compile_block(
                block.name, block.fuse, block.mp, [self.layers[n] for n in block.layers],
                precision=block.precision.value,
                layer_precision={k: v.value for k, v in block.layer_precision.items()})
            compiled.data_parallelism = plan.data_parallelism
            if plan.channel is not None:
                compiled.channel = plan.channel
        for number, stage in enumerate(plan.stages):
            self.session.make_stage(f"stage{number}", stage)

    def run(self, feeds: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        """The graph outputs for one batch, by tensor name."""
        self._set(feeds)
        self.session.run()
        return {name: self.tensor(name) for name in self.queue.outputs}

    def tensor(self, name: str) -> np.ndarray:
        """A layer output of the last run (one that left its block, or was kept), of its
        queue type (the runtime hands every integer tensor over as int64)."""
        value = np.asarray(self.session.get(self.outputs_of[name]))
        return value.astype(self.queue.tensors[name].dtype, copy=False)

    def block_micros(self) -> list[float]:
        return [float(us) for us in self.session.block_micros()]

    def _set(self, feeds: Sequence[np.ndarray]) -> None:
        if len(feeds) != len(self.inputs):
            raise ValueError(f"the model has {len(self.inputs)} input(s), got {len(feeds)}")
        for tensor, value in zip(self.inputs, feeds):
            # Integer inputs (token ids, masks, pixels) keep their values: the runtime
            # checks each fits the input's type.
            dtype = np.int64 if tensor.dtype != "float32" else np.float32
            self.session.set_input(tensor, np.ascontiguousarray(value, dtype=dtype))
