"""The queue run through paleozoic._runtime exactly as a plan says (blocks, fusion, MP,
precision), and the tensors read back.

Every runtime session of the debugger is built by `_build_blocks`, the one place that
hands a block's precision to the runtime."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from paleozoic.errors import PrecisionUnavailableError
from paleozoic.ir import LayerQueue, Plan, PlannedBlock
from paleozoic.ir.boundary import block_boundary, read_counts
from paleozoic.ir.plan import Precision

logger = logging.getLogger(__name__)


def _build_blocks(queue: LayerQueue, plan: Plan, session: Any,
                  quantization: Mapping[str, Any] | None = None,
                  ) -> tuple[list[Any], dict[str, Any]]:
    """Builds the queue in `session` (a paleozoic._runtime.Session) with the weights bound
    and compiles `plan`'s blocks in order, each at its precision (int8 layers with
    `quantization`, layer -> LayerQuantization); returns the input tensors (queue input
    order) and every runtime tensor by queue tensor name."""
    from paleozoic.runner.graph import InputRecorder, build_runtime_graph

    recorder = InputRecorder(session)
    built = build_runtime_graph(queue, recorder, bind_weights=True,
                                sparse={n for b in plan.blocks for n in b.sparse})
    by_name = {layer.name: b for layer, b in zip(queue.layers, built)}
    for name, q in (quantization or {}).items():
        if name in by_name:
            by_name[name].set_quantization(tuple(q.input), [tuple(f) for f in q.filter])
    for block in plan.blocks:
        for name in block.layers:
            if (block.precision_of(name) is Precision.INT8 and by_name[name].has_int8_mode
                    and name not in (quantization or {})):
                raise PrecisionUnavailableError(
                    f"block {block.name!r} computes layer {name!r} in int8, but the folder's "
                    f"weights.bin has no quantisation parameters; recompile with "
                    f"--calibration CALIB.json")
        session.compile_block(
            block.name, block.fuse, block.mp, [by_name[name] for name in block.layers],
            precision=block.precision.value,
            layer_precision={k: v.value for k, v in block.layer_precision.items()})
    tensors = {info.name: t for info, t in zip(queue.inputs, recorder.inputs)}
    tensors.update({layer.output: b.output for layer, b in zip(queue.layers, built)})
    return recorder.inputs, tensors


def _all_fp32(block: PlannedBlock) -> bool:
    return block.precision is Precision.FP32 and all(
        p is Precision.FP32 for p in block.layer_precision.values())


def _precision_text(block: PlannedBlock) -> str:
    others = sorted({p.value for p in block.layer_precision.values()} - {"fp32"})
    text = block.precision.value
    if others and block.precision is Precision.FP32:
        text = f"fp32 with layers in {', '.join(others)}"
    return text


def per_layer_plan(plan: Plan) -> Plan:
    """Every layer of `plan` compiled alone, at its planned precision and its block's MP,
    so every tensor is materialised (the fused run's numbers are not disturbed)."""
    blocks = []
    for block in plan.blocks:
        for name in block.layers:
            precision = block.precision_of(name)
            blocks.append(PlannedBlock(f"{block.name}__{len(blocks)}", [name], block.mp,
                                       fuse=False, precision=precision))
    return Plan(blocks, strategy=f"{plan.strategy} (per layer)", model=plan.model)


def block_outputs(queue: LayerQueue, plan: Plan) -> dict[str, list[str]]:
    """Block name -> the tensors leaving it (pz::fusionBoundary's rule): what can be read
    back from a fused block."""
    reads = read_counts(queue.layers)
    by_name = {layer.name: layer for layer in queue.layers}
    return {block.name: block_boundary([by_name[n] for n in block.layers], reads,
                                       set(queue.outputs))[1] for block in plan.blocks}


class PlanRun:
    """`plan` built once in a runtime Session; `run` sets one batch and reads back the
    tensors asked for (a fused block's inner tensors are not readable: ask only for
    block_outputs)."""

    def __init__(self, queue: LayerQueue, plan: Plan, read: Iterable[str],
                 quantization: Mapping[str, Any] | None = None) -> None:
        from paleozoic.runner.sdk import runtime_module

        self.session = runtime_module().Session()
        self.inputs, tensors = _build_blocks(queue, plan, self.session, quantization)
        self.read = {name: tensors[name] for name in read}

    def run(self, feeds: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        for tensor, value in zip(self.inputs, feeds):
            self.session.set_input(tensor, value)
        self.session.run()
        return {name: np.asarray(self.session.get(t)) for name, t in self.read.items()}
