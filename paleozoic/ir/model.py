"""The Model of paper Table 3: the queue's layers grouped into F-Blocks by a plan."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ir.layer import Layer, LayerQueue, TensorInfo
from paleozoic.ir.plan import Plan


@dataclass(frozen=True)
class OpSet:
    opset_version: int


@dataclass
class FBlock:
    """A contiguous run of layers compiled together (fused or not) on `mp` cores."""

    name: str
    layers: list[Layer]
    mp: int
    fuse: bool


@dataclass
class Model:
    ir_version: int
    opset: OpSet
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    blocks: list[FBlock]
    queue: LayerQueue
    plan: Plan

    @classmethod
    def build(cls, queue: LayerQueue, plan: Plan) -> Model:
        plan.validate(queue)
        by_name = {layer.name: layer for layer in queue.layers}
        blocks = [FBlock(planned.name, [by_name[name] for name in planned.layers], planned.mp,
                         planned.fuse) for planned in plan.blocks]
        return cls(
            ir_version=queue.ir_version,
            opset=OpSet(queue.opset),
            inputs=list(queue.inputs),
            outputs=[queue.tensors[name] for name in queue.outputs],
            blocks=blocks,
            queue=queue,
            plan=plan,
        )
