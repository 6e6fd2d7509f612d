"""The optimizer hook: one required method, optional hooks that default to doing nothing.

    class MyOptimizer(Optimizer):
        name = "mine"
        def optimize(self, queue, space, cost) -> Plan: ...

An optimizer reads the queue (never modifies it), explores `space` asking `cost` what
blocks cost, calls `space.report(fraction_done, best_cost)` now and then, and returns a
Plan: plain data that the framework validates (`run_optimizer`). `spans_to_plan` turns a
list of (start, stop, mp[, precision]) into a Plan with the conventional block names.

Precision: an optimizer that chooses a precision per block sets `searches_precision = True`.
One that does not (every optimizer written before precisions existed) is run on the fp32
part of the space only, so it never meets a choice it does not understand.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Sequence

import numpy as np

from paleozoic.ir import LayerQueue, Plan, PlannedBlock
from paleozoic.optimize.oracle import (
    CostOracle, Span, make_span, precision_table, price, span_parts,
)
from paleozoic.optimize.space import SearchSpace


class Optimizer(ABC):
    """Base class of every optimizer. `seed` makes a run repeatable; `budget_s` caps its
    wall time (optimizers that finish in bounded time may ignore it); other keyword options
    are the optimizer's own (e.g. `iterations=` for simulated annealing)."""

    name: ClassVar[str] = "unnamed"
    # True when optimize() reads space.precisions / space.choices and emits precisions.
    searches_precision: ClassVar[bool] = False

    def __init__(self, seed: int = 0, budget_s: float | None = None, **options: Any) -> None:
        self.seed = seed
        self.budget_s = budget_s
        self.options = options
        unknown = set(options) - set(self.option_names())
        if unknown:
            raise TypeError(f"optimizer {self.name!r} has no option(s) "
                            f"{', '.join(sorted(unknown))}; it takes "
                            f"{', '.join(self.option_names()) or 'none'}")

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Names of the keyword options this optimizer accepts (override to add some)."""
        return ()

    @abstractmethod
    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        """Cuts the queue into blocks with an MP each; must not modify `queue`."""

    # ---- optional hooks ----------------------------------------------------------------
    def after_measure(self, start: int, stop: int, mp: int, micros: float) -> None:
        """Called by the framework each time a measuring oracle times a new block (feedback
        for optimizers that learn a cost model from measurements). Default: nothing."""
        return None

    # ---- helpers -----------------------------------------------------------------------
    def deadline(self) -> float:
        """time.monotonic() value at which the budget runs out (inf without a budget)."""
        return time.monotonic() + self.budget_s if self.budget_s is not None else float("inf")

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)


def spans_to_plan(queue: LayerQueue, spans: Sequence[Span], strategy: str,
                  notes: dict[str, Any] | None = None) -> Plan:
    """Plan from (start, stop, mp[, precision]) spans: blocks "block0", ...; multi-layer
    blocks fused; a span without a precision is fp32."""
    blocks = []
    for b, span in enumerate(spans):
        start, stop, mp, precision = span_parts(span)
        blocks.append(PlannedBlock(f"block{b}",
                                   [layer.name for layer in queue.layers[start:stop]],
                                   mp=mp, fuse=stop - start > 1, precision=precision))
    return Plan(blocks, strategy=strategy, model=queue.source, notes=dict(notes or {}))


class CostLookup:
    """O(1) block costs for optimizers: the oracle's cost table when it has one, otherwise
    `block_cost` memoised per (start, stop, choice). Disallowed blocks cost inf.

    Choice k is space.choices[k], an (mp, precision) pair; with fp32 only that is mps[k],
    so optimizers written for MPs alone index it as before. `table` is [n, n+1, choices].
    """

    def __init__(self, space: SearchSpace, cost: CostOracle) -> None:
        self.space = space
        self.cost = cost
        self.mps = space.mps
        self.choices = space.choices
        table = precision_table(cost, space.mps, space.precisions)  # checks it prices them
        self.table: np.ndarray | None = None
        if table is not None:
            n = space.n
            # [n, n+1, M, P] -> [n, n+1, P * M] (a copy we may write): precision-major.
            table = np.array(np.moveaxis(table, 3, 2), dtype=np.float64, order="C").reshape(
                n, n + 1, len(self.choices))
            for start in range(n):
                table[start, space.max_stop(start) + 1:, :] = np.inf
            self.table = table
        self._memo: dict[tuple[int, int, int], float] = {}
        self._best: dict[tuple[int, int], tuple[float, int]] = {}

    def span(self, start: int, stop: int, k: int) -> Span:
        """The span of [start, stop) at choice k (short form in fp32)."""
        mp, precision = self.choices[k]
        return make_span(start, stop, mp, precision)

    def __call__(self, start: int, stop: int, k: int) -> float:
        """Cost of [start, stop) at choices[k]."""
        if self.table is not None:
            return float(self.table[start, stop, k])
        key = (start, stop, k)
        if key not in self._memo:
            mp, precision = self.choices[k]
            self._memo[key] = (price(self.cost, start, stop, mp, precision)
                               if self.space.allows(start, stop) else float("inf"))
        return self._memo[key]

    def best(self, start: int, stop: int) -> tuple[float, int]:
        """(cost, k) of the cheapest choice for [start, stop); ties go to the more precise
        precision, then the smaller MP."""
        key = (start, stop)
        if key not in self._best:
            if self.table is not None:
                row = self.table[start, stop]
                k = int(np.argmin(row))
                self._best[key] = (float(row[k]), k)
            elif not self.space.allows(start, stop):
                self._best[key] = (float("inf"), 0)
            else:
                costs = [self(start, stop, k) for k in range(len(self.choices))]
                k = min(range(len(costs)), key=costs.__getitem__)
                self._best[key] = (costs[k], k)
        return self._best[key]
