"""Table 4's knobs past cuts, MP and precision, searched around any optimizer: `paleozoic
tune --knobs`, and the same for API users.

- sparsity: the SDK's sparse mode for each layer with zero weight pairs where the device
  model prices it faster (paleozoic.optimize.sparse); the search then prices those layers
  sparse.
- dp: data parallelism; the optimizer runs once per value the model allows
  (paleozoic.optimize.data_parallel).
- concat: stages of blocks that run at once, where the staged DP beats the optimizer's plan
  (paleozoic.optimize.concat).
- balance: load balance, where each session input's and output's dtype conversion runs
  (host or device), per tensor on the side the device model prices lower
  (paleozoic.optimize.balance); after the search, as it changes no block's cost.

The optimizer protocol is untouched: a plug-in searches each space as it searches any other.

Every knob leaves a session's numbers as they are (sparse ops skip exact zeros, dp splits
frames, stages and the conversion side move work): so the accuracy-aware search takes them
too (knobs_after_accuracy), around the plan it measured, except concat, whose staged DP
re-cuts blocks and would re-choose their precisions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Collection, Sequence

from paleozoic.errors import OptimizerError
from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import MP_MAX, Precision
from paleozoic.optimize.base import Optimizer
from paleozoic.optimize.oracle import CostOracle, StageCostOracle
from paleozoic.optimize.run import run_optimizer
from paleozoic.optimize.space import SearchSpace

KNOBS = ("sparsity", "dp", "concat", "balance")

# make_oracle(sparse layers, data parallelism) -> the oracle pricing blocks so.
OracleMaker = Callable[[Collection[str], int], CostOracle]


@dataclass
class KnobTuning:
    plan: Plan
    cost: CostOracle          # the oracle that priced the plan (at its data parallelism)
    lines: list[str] = field(default_factory=list)  # what each knob did, for the user


def refuse_knobs(knobs: Collection[str], make_oracle: OracleMaker,
                 wall_clock: bool) -> None:
    """OptimizerError, before any search, for knobs the oracle cannot price: data
    parallelism on a wall-clock SDK (a CPU runs the batch as one whatever it is), stages
    with an oracle that cannot time blocks running at once."""
    unknown = sorted(set(knobs) - set(KNOBS))
    if unknown:
        raise OptimizerError(f"unknown knob(s) {', '.join(unknown)}; known: {', '.join(KNOBS)}")
    if "dp" in knobs and wall_clock:
        raise OptimizerError("--knobs dp: data parallelism splits a batch among MLU cores; a "
                             "CPU SDK runs the batch as one whatever it is, so there is "
                             "nothing to measure (use the device model or --sdk mock)")
    if "balance" in knobs and wall_clock:
        raise OptimizerError("--knobs balance: the data-preprocess strategy moves a dtype "
                             "conversion between the host and the MLU; on a CPU SDK both "
                             "are the host, so there is nothing to choose (use the device "
                             "model or --sdk mock)")
    if "concat" in knobs:
        oracle = make_oracle((), 1)
        if not isinstance(oracle, StageCostOracle):
            raise OptimizerError(f"--knobs concat: the {oracle.name} oracle cannot time blocks "
                                 f"that run at once; use the device model (--cost model)")


# The knobs the accuracy-aware search takes (module doc).
ACCURACY_KNOBS = ("sparsity", "dp", "balance")


def refuse_accuracy_knobs(knobs: Collection[str]) -> None:
    """OptimizerError for knobs `tune --accuracy-budget` cannot take."""
    refused = sorted(set(knobs) - set(ACCURACY_KNOBS))
    if refused:
        raise OptimizerError(f"--accuracy-budget with --knobs {', '.join(refused)}: the staged "
                             f"DP re-cuts blocks and re-chooses their precisions, which the "
                             f"accuracy search measured; tune for accuracy with "
                             f"{', '.join(ACCURACY_KNOBS)}, or without a budget for stages")


def choose_sparse(knobs: Collection[str], queue: LayerQueue, profile: str | None,
                  precisions: Sequence[Precision]) -> tuple[list[str], list[str]]:
    """The layers to put in sparse mode when `knobs` has sparsity (the device model says it
    pays at every MP and precision), and the line saying so."""
    if "sparsity" not in knobs:
        return [], []
    from paleozoic.optimize.sparse import paying_sparse, sparse_candidates

    candidates = sparse_candidates(queue)
    sparse = paying_sparse(queue, profile, precisions=precisions, candidates=candidates)
    return sparse, [f"sparse mode: {len(sparse)} of {len(candidates)} layer(s) with zero "
                    f"weight pairs, where the device model says it pays"]


def knobs_after_accuracy(plan: Plan, queue: LayerQueue, knobs: Collection[str],
                         sparse: Collection[str], make_oracle: OracleMaker,
                         profile: str | None = None) -> KnobTuning:
    """The accuracy-aware search's plan with `knobs` (ACCURACY_KNOBS) applied around it, its
    cuts and precisions kept: the sparse layers (the search priced them sparse), the best
    data parallelism for those blocks, and each I/O tensor's conversion side."""
    refuse_accuracy_knobs(knobs)
    lines: list[str] = []
    if "dp" in knobs:
        from paleozoic.optimize.data_parallel import best_data_parallelism

        plan = best_data_parallelism(plan, queue, lambda dp: make_oracle(sparse, dp))
        lines.append(f"data parallelism: {plan.data_parallelism} for the accuracy-checked "
                     f"blocks ({plan.notes['cost_us']:,.1f} us per batch)")
    cost = make_oracle(sparse, plan.data_parallelism)
    return KnobTuning(_per_layer_knobs(plan, queue, knobs, sparse, profile, lines), cost,
                      lines)


def _per_layer_knobs(plan: Plan, queue: LayerQueue, knobs: Collection[str],
                     sparse: Collection[str], profile: str | None, lines: list[str]) -> Plan:
    """The knobs set on a finished plan's layers and tensors: sparse mode, then (balance)
    each I/O tensor's conversion side, saying what it did in `lines`."""
    if sparse:
        from paleozoic.optimize.sparse import with_sparse

        plan = with_sparse(plan, sparse)
    if "balance" in knobs:
        from paleozoic.optimize.balance import with_balance

        plan, choices = with_balance(plan, queue, profile)
        on_device = sum(choice.strategy == "mlu_priority" for choice in choices)
        lines.append(f"load balance: {len(choices)} input/output tensor(s) to convert, "
                     f"{on_device} on the device, {len(choices) - on_device} on the host "
                     f"({sum(c.cost for c in choices):,.2f} us of host and device time "
                     f"against {sum(c.default_cost for c in choices):,.2f} us without a "
                     f"strategy)")
    return plan


def tune_with_knobs(optimizer: Optimizer, queue: LayerQueue, space: SearchSpace,
                    knobs: Collection[str], make_oracle: OracleMaker,
                    profile: str | None = None,
                    precisions: Sequence[Precision] = (Precision.FP32,)) -> KnobTuning:
    """`optimizer`'s plan for `queue` with `knobs` searched too (module doc). Without knobs:
    run_optimizer's plan, unchanged. `profile` and `precisions` are the device model's for
    the sparse-mode choice."""
    sparse, lines = choose_sparse(knobs, queue, profile, precisions)
    if "dp" in knobs:
        from paleozoic.optimize.data_parallel import search_data_parallelism

        plan = search_data_parallelism(optimizer, queue, lambda dp: make_oracle(sparse, dp),
                                       space)
        cost = make_oracle(sparse, plan.data_parallelism)
    else:
        cost = make_oracle(sparse, 1)
        plan = run_optimizer(optimizer, queue, cost, space)
    if "concat" in knobs:
        from paleozoic.optimize.concat import with_stages

        mps = tuple(m for m in space.mps if m * plan.data_parallelism <= MP_MAX)
        before = plan.notes["cost_us"]
        plan = with_stages(plan, queue, dataclasses.replace(space, mps=mps), cost)
        lines.append(f"stages: {len(plan.stages)} ({plan.notes['cost_us']:,.1f} us against "
                     f"{before:,.1f} us without)")
    return KnobTuning(_per_layer_knobs(plan, queue, knobs, sparse, profile, lines), cost,
                      lines)
