"""`per-layer` and `fuse-all` as optimizers: the fixed plans, through the same hook."""

from __future__ import annotations

from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize.base import Optimizer
from paleozoic.optimize.oracle import CostOracle
from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.optimize.space import SearchSpace


class PerLayer(Optimizer):
    """Every layer its own unfused block on `mp` cores (default 1)."""

    name = "per-layer"

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("mp",)

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        plan = per_layer(queue, mp=self.options.get("mp", space.mps[0]))
        space.report(1.0, float("nan"))
        return plan


class FuseAll(Optimizer):
    """As few fused blocks as the fusion rules allow, each on `mp` cores (default: the
    space's largest MP)."""

    name = "fuse-all"

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("mp",)

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        plan = fuse_all(queue, mp=self.options.get("mp", space.max_mp))
        space.report(1.0, float("nan"))
        return plan
