"""`per-layer` and `fuse-all` as optimizers: the fixed plans, through the same hook.

Both take `mp` and `precision` options. `precision` is fp32, fp16 or int8 for every block,
or "best": each block in its cheapest of the space's precisions at the plan's MP (the only
thing these plans look the oracle up for). Default: the space's most precise precision
(fp32 unless the space leaves it out), so the baselines are what they were before
precisions.
"""

from __future__ import annotations

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import Precision
from paleozoic.optimize.base import CostLookup, Optimizer
from paleozoic.optimize.oracle import CostOracle, plan_spans
from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.optimize.space import SearchSpace


class _Fixed(Optimizer):
    searches_precision = True

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("mp", "precision")

    def _precisions(self, plan: Plan, queue: LayerQueue, space: SearchSpace,
                    cost: CostOracle) -> Plan:
        wanted = self.options.get("precision", space.precisions[0].value)
        if wanted != "best":
            try:
                precision = Precision(wanted)
            except ValueError:
                raise ValueError(f"precision {wanted!r} is not fp32, fp16, int8 or best") \
                    from None
            for block in plan.blocks:
                block.precision = precision
            return plan
        lookup = CostLookup(space, cost)
        for block, (start, stop, mp, fuse) in zip(plan.blocks, plan_spans(plan, queue)):
            ks = [k for k, (m, _) in enumerate(space.choices) if m == mp]
            if fuse or stop - start == 1:
                k = min(ks, key=lambda k: lookup(start, stop, k))
            else:  # unfused: the block costs the sum of its layers alone
                k = min(ks, key=lambda k: sum(lookup(i, i + 1, k) for i in range(start, stop)))
            block.precision = space.choices[k][1]
        return plan


class PerLayer(_Fixed):
    """Every layer its own unfused block on `mp` cores (default 1)."""

    name = "per-layer"

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        plan = per_layer(queue, mp=self.options.get("mp", space.mps[0]))
        plan = self._precisions(plan, queue, space, cost)
        space.report(1.0, float("nan"))
        return plan


class FuseAll(_Fixed):
    """As few fused blocks as the fusion rules allow, each on `mp` cores (default: the
    space's largest MP)."""

    name = "fuse-all"

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        plan = fuse_all(queue, mp=self.options.get("mp", space.max_mp))
        plan = self._precisions(plan, queue, space, cost)
        space.report(1.0, float("nan"))
        return plan
