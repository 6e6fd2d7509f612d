"""Accuracy-aware search and precision DP on a ResNet-50-sized instance (not a test).

Synthetic: n layers (default 120) all fusible (the worst case: every earlier cut point can
start a block ending at any later one), 32 MPs, fp32/fp16/int8, random separable block
costs (fp16 ~0.6x, int8 ~0.4x of fp32, varying per block) and log-normal per-layer
sensitivities. Reports wall time, labels kept and the front size per budget.

    python benchmarks/accuracy_search.py [--layers 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np

from paleozoic.ir.plan import Precision
from paleozoic.optimize import CostLookup, SearchSpace, TableOracle
from paleozoic.optimize.accuracy import AccuracyBudget, search_accuracy_aware
from paleozoic.optimize.dp import solve
from paleozoic.optimize.sensitivities import Sensitivities

ALL = (Precision.FP32, Precision.FP16, Precision.INT8)


def instance(n: int, mps: tuple[int, ...], seed: int):
    rng = np.random.default_rng(seed)
    base = rng.uniform(1.0, 10.0, size=(n, len(mps)))
    prefix = np.vstack([np.zeros(len(mps)), np.cumsum(base, axis=0)])
    i, j = np.triu_indices(n + 1, k=1)
    fp32 = np.full((n, n + 1, len(mps)), np.inf)
    fp32[i, j] = ((prefix[j] - prefix[i]) * rng.uniform(0.6, 1.1, size=(len(i), 1))
                  + rng.uniform(0, 3, size=(len(i), 1)))
    speed = np.array([1.0, 0.6, 0.4]) * rng.uniform(0.8, 1.25, size=(n, n + 1, 1, 3))
    speed[..., 0] = 1.0
    table = fp32[..., None] * speed
    names = [f"layer{k}" for k in range(n)]
    sens = Sensitivities({name: {"fp16": rng.lognormal(-11, 1.5), "int8": rng.lognormal(-7.5, 1.5)}
                          for name in names})
    queue = SimpleNamespace(layers=[SimpleNamespace(name=x) for x in names], source="synthetic")
    return queue, TableOracle(table, mps, precisions=ALL), sens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    mps = tuple(range(1, 33))
    queue, cost, sens = instance(args.layers, mps, args.seed)
    space = SearchSpace(args.layers, (True,) * args.layers, mps, precisions=ALL)
    began = time.perf_counter()
    fastest, _ = solve(CostLookup(space, cost), space)
    print(f"DP over cuts x 32 MPs x 3 precisions (no accuracy bound): {fastest:,.1f} us in "
          f"{time.perf_counter() - began:.2f} s")
    fp32 = space.with_precisions((Precision.FP32,))
    print(f"  fp32 only: {solve(CostLookup(fp32, cost), fp32)[0]:,.1f} us")
    for db in (60, 40, 30, 20, -100):
        began = time.perf_counter()
        ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget.sqnr(db),
                                       candidates=5)
        took = time.perf_counter() - began
        best = ranked[0]
        mix = {p.value: sum(len(b.layers) for b in best.plan.blocks if b.precision == p)
               for p in ALL}
        print(f"SQNR >= {db:>4} dB: {best.cost_us:,.1f} us, predicted {best.sqnr_db:.1f} dB, "
              f"layers {mix}, next {[round(c.cost_us, 1) for c in ranked[1:]]}, "
              f"{took:.2f} s")


if __name__ == "__main__":
    main()
