"""Data parallelism as a searched knob: the optimizer runs once per data parallelism the
model allows (each with the MPs that fit beside it, dp x MP <= 32, priced by an oracle at
that dp), and the plan with the lowest batch latency, hence the highest throughput, wins.

The optimizer protocol is unchanged: a plug-in written for cuts, MP and precision searches
each dp's space as it searches any other."""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Sequence

from paleozoic.errors import OptimizerError
from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import MP_MAX, batch_of, data_parallelism_choices, with_data_parallelism
from paleozoic.optimize.base import Optimizer
from paleozoic.optimize.oracle import CostOracle, plan_cost
from paleozoic.optimize.run import run_optimizer
from paleozoic.optimize.space import SearchSpace

logger = logging.getLogger(__name__)


def search_data_parallelism(optimizer: Optimizer, queue: LayerQueue,
                            oracle_at: Callable[[int], CostOracle], space: SearchSpace,
                            choices: Sequence[int] | None = None) -> Plan:
    """The best plan over the data parallelisms in `choices` (default: every one the model
    allows, data_parallelism_choices). `oracle_at(dp)` prices blocks at dp. Ties go to the
    smaller dp. The plan's notes keep each dp's cost ("data_parallelism_us")."""
    choices = list(choices) if choices is not None else data_parallelism_choices(queue)
    runs = [(dp, tuple(mp for mp in space.mps if mp * dp <= MP_MAX)) for dp in choices]
    runs = [(dp, mps) for dp, mps in runs if mps]
    if not runs:
        raise OptimizerError(f"no data parallelism in {choices} fits the space's MPs "
                             f"{space.mps} (data parallelism x MP <= {MP_MAX})")
    best: Plan | None = None
    costs: dict[str, float] = {}
    for index, (dp, mps) in enumerate(runs):
        def report(fraction: float, best_cost: float, index: int = index) -> None:
            space.report((index + fraction) / len(runs), best_cost)

        plan = run_optimizer(optimizer, queue, oracle_at(dp),
                             dataclasses.replace(space, mps=mps, report=report))
        plan.data_parallelism = dp
        costs[str(dp)] = plan.notes["cost_us"]
        logger.info("data parallelism %d: %.1f us per batch of %d", dp, plan.notes["cost_us"],
                    batch_of(queue))
        if best is None or plan.notes["cost_us"] < best.notes["cost_us"]:
            best = plan
    assert best is not None
    best.notes["data_parallelism_us"] = costs
    return best


def best_data_parallelism(plan: Plan, queue: LayerQueue,
                          oracle_at: Callable[[int], CostOracle]) -> Plan:
    """`plan`'s cuts and precisions at the data parallelism with the lowest batch latency,
    each block's MP lowered to what fits beside it (with_data_parallelism): the knob around a
    plan whose blocks must stay as they are (their precisions chosen for accuracy; dp
    changes no number). Ties go to the smaller dp; notes as search_data_parallelism's."""
    best: Plan | None = None
    costs: dict[str, float] = {}
    for dp in data_parallelism_choices(queue):
        candidate = with_data_parallelism(plan, dp)
        cost = plan_cost(candidate, queue, oracle_at(dp))
        costs[str(dp)] = cost
        if best is None or cost < best.notes["cost_us"]:
            best = dataclasses.replace(candidate, notes={**plan.notes, "cost_us": cost})
    assert best is not None
    best.notes["data_parallelism_us"] = costs
    return best
