"""Concatenation of independent layers (Table 4) as a searched knob: stages of blocks that
run at once on disjoint cores.

A parallel region is a run of the queue whose layers fall into two or more independent
branches (no layer reads another branch's output; ONNX exporters often interleave them in
the queue), closed by a layer that reads several of them (an Inception module's concat) or
the end of the queue. Its stage runs each branch as one block pinned to cores of its own; the cores are split to minimise the
longest branch (a binary search over the branches' times: the smallest makespan whose
cheapest core counts fit in 32 / data parallelism). Each branch's time is its block pinned
to those cores, with their share of the DRAM (the oracle's pinned_block_cost), so a win is
one the device's resources allow, not a discount.

`search_stages` is a dynamic programme over cut points, as the DP optimizer's, with a stage
over each parallel region as one more way to cover it: exact over plans whose stages are
those regions, one block per branch. The IOS dynamic programme (MLSys'21) is the model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from paleozoic.ir import LayerQueue, Plan, PlannedBlock
from paleozoic.ir.plan import MP_MAX
from paleozoic.optimize.base import CostLookup
from paleozoic.optimize.oracle import CostOracle, plan_cost
from paleozoic.optimize.space import SearchSpace

logger = logging.getLogger(__name__)

MAX_REGION = 96  # layers; Inception-v3's widest module has about 40


@dataclass(frozen=True)
class Region:
    """queue.layers[start:stop] as independent branches (each its layers' indices, in queue
    order; the branches ordered by their first layer)."""

    start: int
    stop: int
    branches: tuple[tuple[int, ...], ...]


def parallel_regions(queue: LayerQueue, space: SearchSpace,
                     max_layers: int = MAX_REGION) -> list[Region]:
    """The queue's parallel regions (module doc) whose branches may each be one block."""
    n = len(queue.layers)
    producer = {layer.output: i for i, layer in enumerate(queue.layers)}
    reads = [[producer[t] for t in layer.inputs if t in producer] for layer in queue.layers]
    regions = []
    for start in range(n):
        # A region starts a branch: its first layer reads only what came before.
        if any(p >= start for p in reads[start]):
            continue
        parent = list(range(n))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for stop in range(start + 1, min(n, start + max_layers) + 1):
            last = stop - 1
            for p in reads[last]:
                if p >= start:
                    parent[find(last)] = find(p)
            if stop - start < 2:
                continue
            closes = stop == n or len({find(p) for p in reads[stop] if start <= p < stop}) >= 2
            if not closes:
                continue
            groups: dict[int, list[int]] = {}
            for i in range(start, stop):
                groups.setdefault(find(i), []).append(i)
            branches = tuple(tuple(g) for g in groups.values())
            if len(branches) >= 2 and all(_one_block(space, g) for g in branches):
                regions.append(Region(start, stop, branches))
    return regions


def _one_block(space: SearchSpace, layers: tuple[int, ...]) -> bool:
    """May these layers be one block: one layer, or all fusible, in one segment?"""
    if len(layers) == 1:
        return True
    segments = {space.segments[i] for i in layers} if space.segments else {0}
    return len(segments) == 1 and all(space.fusible[i] for i in layers)


def split_cores(times: list[dict[int, float]], budget: int) -> tuple[float, list[int]] | None:
    """The core counts (one per branch, summing to at most `budget`) that minimise the
    longest branch time; times[k][m] is branch k's time on m cores. None if none fits."""
    candidates = sorted({t for branch in times for t in branch.values() if np.isfinite(t)})
    best: tuple[float, list[int]] | None = None
    low, high = 0, len(candidates) - 1
    while low <= high:
        middle = (low + high) // 2
        limit = candidates[middle]
        cores = [min((m for m, t in branch.items() if t <= limit), default=None)
                 for branch in times]
        if all(c is not None for c in cores) and sum(cores) <= budget:  # type: ignore[arg-type]
            best = (limit, [int(c) for c in cores])  # type: ignore[arg-type]
            high = middle - 1
        else:
            low = middle + 1
    return best


def search_stages(queue: LayerQueue, space: SearchSpace, cost: CostOracle,
                  data_parallelism: int = 1, strategy: str = "dp+stages") -> Plan:
    """The best plan over cut points, one (mp, precision) per block, and stages over the
    queue's parallel regions (module doc). Stages are priced in the space's first precision
    that the oracle pins (fp32 unless asked)."""
    n = space.n
    lookup = CostLookup(space, cost)
    precision = space.precisions[0]
    budget = MP_MAX // data_parallelism
    mps = [m for m in space.mps if m <= budget]
    stage_of: dict[int, list[tuple[Region, float, list[int]]]] = {}
    for region in parallel_regions(queue, space):
        times = [{m: float(cost.pinned_block_cost(branch, m, precision=precision,  # type: ignore
                                                  cores=m * data_parallelism)) for m in mps}
                 for branch in region.branches]
        split = split_cores(times, budget)
        if split is not None:
            stage_of.setdefault(region.stop, []).append((region, split[0], split[1]))
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    back: list[tuple[int, object]] = [(0, None)] * (n + 1)
    for stop in range(1, n + 1):
        for start in range(stop):
            c, k = lookup.best(start, stop)
            if best[start] + c < best[stop]:
                best[stop], back[stop] = best[start] + c, (start, k)
        for region, time, cores in stage_of.get(stop, []):
            if best[region.start] + time < best[stop]:
                best[stop], back[stop] = best[region.start] + time, (region.start,
                                                                    (region, cores))
        space.report(stop / n, float(best[stop]))
    pieces = []
    stop = n
    while stop > 0:
        start, how = back[stop]
        pieces.append((start, stop, how))
        stop = start
    blocks: list[PlannedBlock] = []
    stages: list[list[str]] = []
    names = [layer.name for layer in queue.layers]
    for start, stop, how in reversed(pieces):
        if isinstance(how, tuple) and isinstance(how[0], Region):
            region, cores = how
            stage = []
            for branch, m in zip(region.branches, cores):
                blocks.append(PlannedBlock(f"block{len(blocks)}", [names[i] for i in branch],
                                           mp=m, fuse=len(branch) > 1, precision=precision))
                stage.append(blocks[-1].name)
            stages.append(stage)
        else:
            mp, p = lookup.choices[int(how)]  # type: ignore[arg-type]
            blocks.append(PlannedBlock(f"block{len(blocks)}", names[start:stop], mp=mp,
                                       fuse=stop - start > 1, precision=p))
    plan = Plan(blocks, strategy=strategy, model=queue.source,
                data_parallelism=data_parallelism, stages=stages)
    plan.notes["cost_us"] = plan_cost(plan, queue, cost)
    plan.notes["oracle"] = getattr(cost, "name", "")
    logger.info("%d parallel regions, %d staged: %.1f us", len(set(
        r.start for rs in stage_of.values() for r, _, _ in rs)), len(stages),
        plan.notes["cost_us"])
    return plan


def with_stages(plan: Plan, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
    """`plan` (any optimizer's), or the staged DP's plan where that is faster."""
    staged = search_stages(queue, space, cost, plan.data_parallelism)
    if not staged.stages or staged.notes["cost_us"] >= plan_cost(plan, queue, cost):
        return plan
    staged.strategy = f"{plan.strategy}+stages"
    return staged
