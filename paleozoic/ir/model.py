"""The Model of paper Table 3: the queue's layers grouped into F-Blocks by a plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from paleozoic.ir.layer import Layer, LayerQueue, TensorInfo
from paleozoic.ir.plan import Plan, Precision


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
    precision: Precision = Precision.FP32
    layer_precision: dict[str, Precision] = field(default_factory=dict)
    sparse: list[str] = field(default_factory=list)  # layers in the SDK's sparse mode

    def precision_of(self, layer: str) -> Precision:
        return self.layer_precision.get(layer, self.precision)


@dataclass
class Model:
    ir_version: int
    opset: OpSet
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    blocks: list[FBlock]
    queue: LayerQueue
    plan: Plan
    # Layer name -> int8 quantisation parameters (paleozoic.calibration.params), present
    # when the session was compiled with a calibration file.
    quantization: dict[str, Any] = field(default_factory=dict)

    @property
    def data_parallelism(self) -> int:
        """Groups of frames each forward runs at once (Plan.data_parallelism)."""
        return self.plan.data_parallelism

    @property
    def channel(self) -> int | None:
        """The DDR channel the forwards are issued on (Plan.channel)."""
        return self.plan.channel

    @property
    def stages(self) -> list[list[str]]:
        """Runs of blocks (by name) that run at once (Plan.stages)."""
        return self.plan.stages

    @property
    def sparse_layers(self) -> set[str]:
        """The layers in the SDK's sparse mode, over all blocks."""
        return {name for block in self.blocks for name in block.sparse}

    @classmethod
    def build(cls, queue: LayerQueue, plan: Plan,
              quantization: dict[str, Any] | None = None) -> Model:
        plan.validate(queue)
        by_name = {layer.name: layer for layer in queue.layers}
        blocks = [FBlock(planned.name, [by_name[name] for name in planned.layers], planned.mp,
                         planned.fuse, planned.precision, dict(planned.layer_precision),
                         list(planned.sparse))
                  for planned in plan.blocks]
        return cls(
            ir_version=queue.ir_version,
            opset=OpSet(queue.opset),
            inputs=list(queue.inputs),
            outputs=[queue.tensors[name] for name in queue.outputs],
            blocks=blocks,
            queue=queue,
            plan=plan,
            quantization=dict(quantization or {}),
        )
