"""Simulated annealing over cut points and per-block choices (MP and precision).

State: block boundaries 0 = b0 < b1 < ... < bm = n and a choice per block (an index into
space.choices: an MP, and a precision when the space has several). Moves: split a block,
merge two neighbours, shift a cut, change a block's choice. A block created by a move
takes its best choice (with probability 1 - `mp_noise`, else it keeps an old one), so on a
block-separable cost the walk is over cut sets. Seeded by a numpy Generator; stops after
`iterations` moves or `budget_s` seconds, whichever comes first (with neither: 2,000
moves per layer). Iteration-bounded runs are repeatable under a seed; time-bounded ones are
not in general. Costs come from the oracle's table when it has one (O(1) per move).
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize.base import CostLookup, Optimizer, spans_to_plan
from paleozoic.optimize.greedy import greedy_spans
from paleozoic.optimize.oracle import CostOracle, Span, span_parts
from paleozoic.optimize.plans import fuse_all
from paleozoic.optimize.space import SearchSpace

_BATCH = 8192


class _Random:
    """Uniform floats in [0, 1) drawn from a numpy Generator in batches (fast per call)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.buffer: list[float] = []

    def __call__(self) -> float:
        if not self.buffer:
            self.buffer = self.rng.random(_BATCH).tolist()
        return self.buffer.pop()

    def below(self, m: int) -> int:
        return min(int(self() * m), m - 1)


class _Costs:
    """cost(i, j, k) and best(i, j) as fast as the oracle allows."""

    def __init__(self, lookup: CostLookup) -> None:
        self.lookup = lookup
        n = lookup.space.n
        self.max_stop = [lookup.space.max_stop(i) for i in range(n)]
        if lookup.table is not None:
            table = lookup.table
            self.best_cost: list[list[float]] | None = table.min(axis=2).tolist()
            self.best_k: list[list[int]] | None = table.argmin(axis=2).tolist()
            self.cost: Callable[[int, int, int], float] = table.item
        else:
            self.best_cost = self.best_k = None
            self.cost = lookup

    def best(self, i: int, j: int) -> tuple[float, int]:
        if self.best_cost is not None and self.best_k is not None:
            return self.best_cost[i][j], self.best_k[i][j]
        return self.lookup.best(i, j)


class SimulatedAnnealing(Optimizer):
    name = "annealing"
    searches_precision = True

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("iterations", "start", "t_start", "t_end", "mp_noise")

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        lookup = CostLookup(space, cost)
        costs = _Costs(lookup)
        start = self._start(queue, space, lookup)
        spans, total = self._anneal(space, costs, start)
        return spans_to_plan(queue, spans, self.name, {"cost_us": total})

    # ---- start ----------------------------------------------------------------------------
    def _start(self, queue: LayerQueue, space: SearchSpace, lookup: CostLookup) -> list[Span]:
        kind = self.options.get("start", "greedy")
        if kind == "greedy":
            return greedy_spans(lookup, space.with_report(lambda f, c: None))
        if kind == "fuse-all":
            spans: list[Span] = []
            at = 0
            for block in fuse_all(queue, mp=space.max_mp).blocks:
                # Each block at the largest MP in its cheapest precision.
                stop = at + len(block.layers)
                k = min((k for k, (mp, _) in enumerate(space.choices) if mp == space.max_mp),
                        key=lambda k: lookup(at, stop, k))
                spans.append(lookup.span(at, stop, k))
                at = stop
            return spans
        raise ValueError(f"start must be 'greedy' or 'fuse-all', not {kind!r}")

    # ---- the walk -----------------------------------------------------------------------
    def _anneal(self, space: SearchSpace, costs: _Costs,
                start: list[Span]) -> tuple[list[Span], float]:
        n = space.n
        column = {choice: k for k, choice in enumerate(space.choices)}
        parts = [span_parts(span) for span in start]
        bounds = [s for s, _, _, _ in parts] + [n]
        ks = [column[mp, precision] for _, _, mp, precision in parts]
        cost, best_of, max_stop = costs.cost, costs.best, costs.max_stop
        block = [cost(bounds[t], bounds[t + 1], ks[t]) for t in range(len(ks))]
        current = sum(block)
        best_total, best_state = current, (list(bounds), list(ks))

        iterations = self.options.get("iterations")
        if iterations is None and self.budget_s is None:
            iterations = 2000 * n
        deadline = self.deadline()
        began = time.monotonic()
        scale = current / max(len(ks), 1)
        t_hi = float(self.options.get("t_start", 0.05)) * scale
        t_lo = float(self.options.get("t_end", 1e-4)) * scale
        noise = float(self.options.get("mp_noise", 0.1))
        u = _Random(self.rng())
        n_mps = len(space.choices)

        def pick_k(i: int, j: int, old: int) -> tuple[float, int]:
            if u() >= noise:
                return best_of(i, j)
            return cost(i, j, old), old

        temperature, fraction, step = t_hi, 0.0, 0
        while True:
            if step % 1024 == 0:
                fraction = max(step / iterations if iterations else 0.0,
                               (time.monotonic() - began) / self.budget_s
                               if self.budget_s else 0.0)
                if fraction >= 1.0 or time.monotonic() >= deadline:
                    break
                temperature = t_hi * (t_lo / t_hi) ** fraction
                if step % 16384 == 0:
                    space.report(fraction, best_total)
            step += 1
            m = len(ks)
            move = u()
            t = u.below(m)
            i, j = bounds[t], bounds[t + 1]
            if move < 0.3:                                   # split block t
                if j - i < 2:
                    continue
                p = i + 1 + u.below(j - i - 1)
                (c1, k1), (c2, k2) = pick_k(i, p, ks[t]), pick_k(p, j, ks[t])
                delta = c1 + c2 - block[t]
                if _accept(delta, temperature, u):
                    bounds.insert(t + 1, p)
                    ks[t:t + 1] = [k1, k2]
                    block[t:t + 1] = [c1, c2]
                    current += delta
            elif move < 0.6:                                 # merge t and t+1
                if t == m - 1:
                    continue
                h = bounds[t + 2]
                if h > max_stop[i]:
                    continue
                c, k = pick_k(i, h, ks[t])
                delta = c - block[t] - block[t + 1]
                if _accept(delta, temperature, u):
                    del bounds[t + 1]
                    ks[t:t + 2] = [k]
                    block[t:t + 2] = [c]
                    current += delta
            elif move < 0.85:                                # shift the cut after t
                if t == m - 1:
                    continue
                h = bounds[t + 2]
                width = max(1, min(8, (h - i) // 2))
                shift = 1 + u.below(width)
                p = j - shift if u() < 0.5 else j + shift
                if not i < p < h or p > max_stop[i] or h > max_stop[p]:
                    continue
                (c1, k1), (c2, k2) = pick_k(i, p, ks[t]), pick_k(p, h, ks[t + 1])
                delta = c1 + c2 - block[t] - block[t + 1]
                if _accept(delta, temperature, u):
                    bounds[t + 1] = p
                    ks[t], ks[t + 1] = k1, k2
                    block[t], block[t + 1] = c1, c2
                    current += delta
            else:                                            # change block t's choice
                k = u.below(n_mps)
                c = cost(i, j, k)
                delta = c - block[t]
                if _accept(delta, temperature, u):
                    ks[t], block[t] = k, c
                    current += delta
            if current < best_total - 1e-9:
                best_total, best_state = current, (list(bounds), list(ks))
        space.report(1.0, best_total)
        bounds, ks = best_state
        spans = [costs.lookup.span(bounds[t], bounds[t + 1], ks[t]) for t in range(len(ks))]
        total = sum(cost(bounds[t], bounds[t + 1], ks[t]) for t in range(len(ks)))
        return spans, total


def _accept(delta: float, temperature: float, u: _Random) -> bool:
    if delta <= 0.0:
        return True
    if delta == math.inf:
        return False
    return u() < math.exp(-delta / temperature)
