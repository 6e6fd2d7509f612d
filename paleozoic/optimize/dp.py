"""Exact dynamic programming over cut points, with the best MP and precision per block.

best[j] = min over allowed blocks [i, j) of best[i] + min_k cost(i, j, choices[k]), the
choices being the space's (mp, precision) pairs (its MPs alone when it is fp32 only).
O(n^2 * |choices|) block costs; exact whenever the plan cost is the sum of block costs (the
device model's is). Uses the oracle's cost table when it has one (vectorised: ResNet-50
with 32 MPs in well under a second), otherwise asks block_cost for each block.
"""

from __future__ import annotations

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize.base import CostLookup, Optimizer, spans_to_plan
from paleozoic.optimize.oracle import CostOracle, Span
from paleozoic.optimize.space import SearchSpace


def solve(lookup: CostLookup, space: SearchSpace) -> tuple[float, list[Span]]:
    """(optimal cost, spans) for the space; ties go to earlier cuts, more precise
    precisions and smaller MPs. Spans carry a precision only when it is not fp32."""
    n = space.n
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    back = np.zeros(n + 1, dtype=np.int64)
    if lookup.table is not None:
        cheapest = lookup.table.min(axis=2)          # [n, n+1]
        for stop in range(1, n + 1):
            totals = best[:stop] + cheapest[:stop, stop]
            start = int(np.argmin(totals))
            best[stop], back[stop] = totals[start], start
            space.report(stop / n, float(best[stop]))
    else:
        for stop in range(1, n + 1):
            for start in range(stop - 1, -1, -1):
                if not space.allows(start, stop):
                    break
                total = best[start] + lookup.best(start, stop)[0]
                if total <= best[stop]:
                    best[stop], back[stop] = total, start
            space.report(stop / n, float(best[stop]))
    if not np.isfinite(best[n]):
        raise ValueError("no plan has a finite cost: the oracle returned inf for every way "
                         "to cut the queue")
    spans: list[Span] = []
    stop = n
    while stop > 0:
        start = int(back[stop])
        spans.append(lookup.span(start, stop, lookup.best(start, stop)[1]))
        stop = start
    return float(best[n]), spans[::-1]


class DynamicProgramming(Optimizer):
    """Exact over cut points, MPs and precisions for block-separable costs; ignores seed
    and budget. Precision here is pure speed: for a search bounded by accuracy see
    paleozoic.optimize.accuracy."""

    name = "dp"
    searches_precision = True

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        total, spans = solve(CostLookup(space, cost), space)
        return spans_to_plan(queue, spans, self.name, {"cost_us": total})
