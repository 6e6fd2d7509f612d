"""Greedy: grow each block while fusing the next layer in is cheaper than cutting before it.

From the current block [start, stop) (best MP and precision), the next layer joins when
cost([start, stop+1)) < cost([start, stop)) + cost([stop, stop+1)), each at its best
(mp, precision);
with `lookahead` > 1 the block also grows when a run of up to that many layers joins
profitably. O(n * lookahead * |mps|) block costs; fast, not exact.
"""

from __future__ import annotations

from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize.base import CostLookup, Optimizer, spans_to_plan
from paleozoic.optimize.oracle import CostOracle, Span
from paleozoic.optimize.space import SearchSpace


def greedy_spans(lookup: CostLookup, space: SearchSpace, lookahead: int = 4) -> list[Span]:
    spans: list[Span] = []
    start = 0
    while start < space.n:
        stop = start + 1
        limit = space.max_stop(start)
        while stop < limit:
            here = lookup.best(start, stop)[0]
            grown = 0
            for extra in range(1, min(lookahead, limit - stop) + 1):
                apart = here + sum_best(lookup, stop, stop + extra)
                if lookup.best(start, stop + extra)[0] < apart:
                    grown = extra
                    break
            if not grown:
                break
            stop += grown
        spans.append(lookup.span(start, stop, lookup.best(start, stop)[1]))
        space.report(stop / space.n, float("nan"))
        start = stop
    return spans


def sum_best(lookup: CostLookup, start: int, stop: int) -> float:
    """Cost of layers start..stop-1 each alone at its best choice."""
    return sum(lookup.best(i, i + 1)[0] for i in range(start, stop))


class Greedy(Optimizer):
    name = "greedy"
    searches_precision = True

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("lookahead",)

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        lookup = CostLookup(space, cost)
        spans = greedy_spans(lookup, space, int(self.options.get("lookahead", 4)))
        return spans_to_plan(queue, spans, self.name)
