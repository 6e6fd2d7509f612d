"""Which blocks a measured search measures, by the device model's word (model-guided
measurement, as TVM's cost-model-guided tuners measure only what their model ranks high).

Measuring every allowed block at every MP is n^2 x 32 board runs; almost all of them are
blocks no good plan contains. `near_optimal` keeps a block only if some plan through it
costs, on the model, within `tolerance` of the model's best plan (a forward and a backward
pass of the DP give that bound for every block at once), and of its MPs only those within
`tolerance` of its cheapest, at most `mps_per_block` of them. Where the board's times stray
from the model's by less than the tolerance, the measured optimum is among the blocks
kept; the per-layer and fuse-all plans' blocks are measured besides (MeasuredOracle), so
the plan found is never slower on the board than those.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence

import numpy as np

from paleozoic.optimize.space import SearchSpace

logger = logging.getLogger(__name__)

# How far the board's block times may stray from the device model's before a block the
# model rules out could be in the measured optimum.
TOLERANCE = 0.10
MPS_PER_BLOCK = 3


def _covers(cheapest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(before, after): before[j] the cheapest cover of layers [0, j) by blocks costing
    cheapest[i, j] each, after[i] that of [i, n)."""
    n = cheapest.shape[0]
    before, after = np.full(n + 1, np.inf), np.full(n + 1, np.inf)
    before[0] = after[n] = 0.0
    for stop in range(1, n + 1):
        before[stop] = np.min(before[:stop] + cheapest[:stop, stop])
    for start in range(n - 1, -1, -1):
        after[start] = np.min(cheapest[start, start + 1:] + after[start + 1:])
    return before, after


def allowed_spans(space: SearchSpace) -> np.ndarray:
    """[n, n+1] bool: may layers [start, stop) be one block?"""
    allowed = np.zeros((space.n, space.n + 1), dtype=bool)
    for start in range(space.n):  # the blocks from a start are those up to its max_stop
        allowed[start, start + 1:space.max_stop(start) + 1] = True
    return allowed


def near_optimal(table: np.ndarray, space: SearchSpace, tolerance: float = TOLERANCE,
                 mps_per_block: int = MPS_PER_BLOCK,
                 most: int | None = None) -> list[tuple[int, int, int]]:
    """(start, stop, k) of the blocks worth measuring, k indexing table's last axis (the
    MPs), from the model's [n, n+1, len(mps)] `table`: the most promising first (by the
    model's best plan through the block, then its own cost), ties in queue order; the
    `most` first of them only, if given."""
    if tolerance < 0 or mps_per_block < 1:
        raise ValueError(f"tolerance must be >= 0 and mps_per_block >= 1, got {tolerance} "
                         f"and {mps_per_block}")
    n = space.n
    cheapest = np.where(allowed_spans(space), table.min(axis=2), np.inf)
    before, after = _covers(cheapest)
    optimum = before[n]
    if not np.isfinite(optimum):
        raise ValueError("the device model prices every plan at inf")
    through = before[:n, None] + cheapest + after[None, :]
    starts, stops = np.nonzero(through <= optimum * (1.0 + tolerance))
    costs = table[starts, stops]                          # [blocks, mps]
    least = costs.min(axis=1, keepdims=True)
    near = costs <= least * (1.0 + tolerance)
    # Each block's near MPs, cheapest first (ties: the smaller index), at most mps_per_block.
    picks = np.argsort(np.where(near, costs, np.inf), axis=1, kind="stable")[:, :mps_per_block]
    rows = np.arange(len(starts))[:, None]
    kept = near[rows, picks]
    rank = ((through[starts, stops][:, None] + costs[rows, picks]) - least)[kept]
    start = np.broadcast_to(starts[:, None], picks.shape)[kept]
    stop = np.broadcast_to(stops[:, None], picks.shape)[kept]
    k = picks[kept]
    order = np.lexsort((k, stop, start, rank))[:most]
    return [(int(start[i]), int(stop[i]), int(k[i])) for i in order]


# The most blocks the tolerance screen sends to the board before the refinement rounds,
# per layer of the queue.
SCREEN_PER_LAYER = 8

Block = tuple[int, int, int]   # start, stop, k (the MP's index in the table)


class _Priced:
    """A fixed cost table over `mps` as a cost oracle, for dp.solve."""

    name = "priced"

    def __init__(self, table: np.ndarray, mps: Sequence[int]) -> None:
        self.table, self.mps = table, tuple(mps)

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        return float(self.table[start, stop, self.mps.index(mp)])

    def cost_table(self, mps: Sequence[int]) -> np.ndarray:
        return self.table


def cheapest_plan(priced: np.ndarray, space: SearchSpace) -> list[Block]:
    """The blocks of the cheapest plan on `priced` [n, n+1, len(space.mps)] (inf: not a
    choice), by the DP optimizer's solve (its ties: earlier cuts, smaller MPs)."""
    from paleozoic.optimize.base import CostLookup
    from paleozoic.optimize.dp import solve

    _, spans = solve(CostLookup(space, _Priced(priced, space.mps)), space)
    return [(start, stop, space.mps.index(mp)) for start, stop, mp in spans]


def guided_table(model: np.ndarray, space: SearchSpace,
                 measure: Callable[[list[Block]], dict[Block, float]],
                 always: Collection[Block] = (), tolerance: float = TOLERANCE) -> np.ndarray:
    """A table of measured block costs (inf where not measured) holding the board's best
    plan as far as the device model's `model` table can point to it:
    1. the blocks near_optimal keeps (at most SCREEN_PER_LAYER per layer, the most promising
       first) and `always` are measured;
    2. then, in rounds, the cheapest plan on the board's times where measured and the
       model's elsewhere (scaled by the median board / model ratio seen so far) has its
       unmeasured blocks measured, until every block of it is measured.
    `measure` takes blocks (start, stop, k) and returns their times."""
    n = space.n
    known = np.full(model.shape, np.nan)

    def take(blocks: Iterable[Block]) -> None:
        wanted = [b for b in dict.fromkeys(blocks) if np.isnan(known[b])]
        for block, micros in measure(wanted).items():
            known[block] = micros

    take([*near_optimal(model, space, tolerance, most=SCREEN_PER_LAYER * n), *always])
    allowed = allowed_spans(space)
    rounds = 0
    while True:
        seen = ~np.isnan(known) & (model > 0) & np.isfinite(known)
        ratio = float(np.median(known[seen] / model[seen])) if seen.any() else 1.0
        priced = np.where(np.isnan(known), model * ratio, known)
        priced[~allowed] = np.inf
        missing = [b for b in cheapest_plan(priced, space) if np.isnan(known[b])]
        if not missing:
            break
        rounds += 1
        take(missing)
    logger.info("model-guided measurement: %d blocks measured, %d refinement round(s)",
                int((~np.isnan(known)).sum()), rounds)
    return np.where(np.isnan(known), np.inf, known)
