"""A user-written optimizer plug-in: plain simulated annealing over cut points.

Run it without installing anything:

    paleozoic tune model.onnx --optimizer examples/optimizers/my_annealing.py:MyAnnealing \
        -O iterations=20000 -o plan.json

The hook asks for one method, `optimize(queue, space, cost) -> Plan`. Read the queue (never
change it), ask `cost.block_cost(start, stop, mp)` what a block costs, report progress with
`space.report(fraction, best_cost)`, and return a Plan; the framework validates it.
"""

from __future__ import annotations

import math

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize import CostOracle, Optimizer, SearchSpace, spans_to_plan


class MyAnnealing(Optimizer):
    name = "my-annealing"

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("iterations",)

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        rng = np.random.default_rng(self.seed)
        memo: dict[tuple[int, int], tuple[float, int]] = {}

        def block(start: int, stop: int) -> tuple[float, int]:   # (cost, best MP)
            if (start, stop) not in memo:
                if not space.allows(start, stop):
                    memo[start, stop] = (math.inf, space.mps[0])
                else:
                    memo[start, stop] = min((cost.block_cost(start, stop, mp), mp)
                                            for mp in space.mps)
            return memo[start, stop]

        def total(cuts: np.ndarray) -> float:   # cuts[c] = True: a cut before layer c + 1
            bounds = [0, *(np.flatnonzero(cuts) + 1), space.n]
            return sum(block(a, b)[0] for a, b in zip(bounds, bounds[1:]))

        cuts = np.ones(space.n - 1, dtype=bool)        # start from per-layer
        current = best = total(cuts)
        best_cuts = cuts.copy()
        steps = int(self.options.get("iterations", 200 * space.n))
        for step in range(steps):
            temperature = 0.05 * best / space.n * (1 - step / steps) + 1e-9
            flip = rng.integers(space.n - 1) if space.n > 1 else None
            if flip is None:
                break
            cuts[flip] = not cuts[flip]                # move: add or remove one cut
            candidate = total(cuts)
            if candidate <= current or rng.random() < math.exp((current - candidate) / temperature):
                current = candidate
                if current < best:
                    best, best_cuts = current, cuts.copy()
            else:
                cuts[flip] = not cuts[flip]            # undo
            if step % 1000 == 0:
                space.report(step / steps, best)
        bounds = [0, *(np.flatnonzero(best_cuts) + 1), space.n]
        spans = [(a, b, block(a, b)[1]) for a, b in zip(bounds, bounds[1:])]
        return spans_to_plan(queue, spans, self.name)
