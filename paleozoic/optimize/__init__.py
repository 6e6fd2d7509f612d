"""The optimizer hook: plans (the queue cut into F-Blocks with an MP and a precision each),
search spaces, cost oracles, the Optimizer interface, the built-in optimizers and their
registry; and the accuracy-aware search (accuracy.py) over measured sensitivities.

    from paleozoic.optimize import load_optimizer, run_optimizer
    plan = run_optimizer(load_optimizer("dp"), queue, DeviceModelOracle(queue))

Fixed plans for the pipeline: `per-layer` and `fuse-all` (see plans.py).
"""

from __future__ import annotations

from paleozoic.optimize.plans import BUILTIN_PLANS, fuse_all, fusible_kinds, per_layer
from paleozoic.optimize.base import CostLookup, Optimizer, spans_to_plan
from paleozoic.optimize.oracle import CostOracle, TableOracle, block_costs, plan_cost, plan_spans
from paleozoic.optimize.space import SearchSpace, eq3_space
from paleozoic.optimize.registry import (
    BUILTIN_OPTIMIZERS, ENTRY_POINT_GROUP, known_names, load_optimizer, optimizer_class,
)
from paleozoic.optimize.run import queue_fingerprint, run_optimizer
from paleozoic.optimize.sensitivities import NoiseProbe, Sensitivities, measure_sensitivities
from paleozoic.optimize.accuracy import AccuracyBudget, Candidate, search_accuracy_aware

__all__ = [
    "AccuracyBudget", "Candidate", "NoiseProbe", "Sensitivities", "measure_sensitivities",
    "search_accuracy_aware", "BUILTIN_OPTIMIZERS", "BUILTIN_PLANS", "ENTRY_POINT_GROUP", "CostLookup", "CostOracle",
    "Optimizer", "SearchSpace", "TableOracle", "block_costs", "eq3_space", "fuse_all",
    "fusible_kinds", "known_names", "load_optimizer", "optimizer_class", "per_layer",
    "plan_cost", "plan_spans", "queue_fingerprint", "run_optimizer", "spans_to_plan",
]
