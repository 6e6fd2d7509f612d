"""Optimizer benchmarks, measured in one run (not a test):

1. the device model's cost table of ResNet-50 over 32 MPs (target: under 0.5 s) and DP on
   it (target: under 1 s, the table included);
2. simulated annealing and the CP-SAT example against DP on ResNet-50 and VGG-19
   (target: within 1 % of DP's cost within 30 s each);
3. the paper-findings table per zoo model under the device model: per-layer, fuse-all@32,
   DP, and which is best.

    python benchmarks/optimize.py [--budget 30] [--models resnet50 vgg19 ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from paleozoic.optimize import (
    fuse_all, load_optimizer, per_layer, plan_cost, run_optimizer,
)
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.pipeline import load_queue
from paleozoic_testing.zoo import ZOO_MODELS, zoo_path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "optimizers"
MPS = tuple(range(1, 33))


def dp_timing() -> None:
    queue = load_queue(zoo_path("resnet50"))
    oracle = DeviceModelOracle(queue)
    started = time.perf_counter()
    oracle.cost_table(MPS)  # kept by the oracle: the DP below prices its blocks from it
    table = time.perf_counter() - started
    plan = run_optimizer(load_optimizer("dp"), queue, oracle)
    seconds = time.perf_counter() - started
    print(f"cost table of resnet50 ({len(queue.layers)} layers x {len(MPS)} MPs): "
          f"{table:.3f} s  [target < 0.5 s: {'ok' if table < 0.5 else 'MISSED'}]")
    print(f"DP on resnet50 ({len(queue.layers)} layers, {len(MPS)} MPs, cost table "
          f"included): {seconds:.3f} s -> {plan.notes['cost_us']:,.1f} us, "
          f"{len(plan.blocks)} blocks  [target < 1 s: {'ok' if seconds < 1 else 'MISSED'}]")


def search_vs_dp(budget: float) -> None:
    print(f"\nsearch vs DP (budget {budget:g} s each; target within 1 %)")
    print(f"{'model':<10} {'optimizer':<12} {'cost us':>12} {'DP us':>12} {'gap':>8} "
          f"{'wall s':>7}")
    for model in ("resnet50", "vgg19"):
        queue = load_queue(zoo_path(model))
        oracle = DeviceModelOracle(queue)
        exact = run_optimizer(load_optimizer("dp"), queue, oracle).notes["cost_us"]
        for label, spec in (("annealing", "annealing"),
                            ("cpsat", f"{EXAMPLES / 'cpsat.py'}:CpSat")):
            started = time.perf_counter()
            plan = run_optimizer(load_optimizer(spec, seed=0, budget_s=budget), queue, oracle)
            wall = time.perf_counter() - started
            gap = plan.notes["cost_us"] / exact - 1
            print(f"{model:<10} {label:<12} {plan.notes['cost_us']:>12,.1f} {exact:>12,.1f} "
                  f"{gap:>7.2%} {wall:>7.2f}  {'ok' if gap <= 0.01 and wall <= budget + 1 else 'MISSED'}")


def findings(models: list[str]) -> None:
    print("\npaper findings under the device model (us per inference, batch 1)")
    print(f"{'model':<14} {'layers':>6} {'per-layer':>12} {'fuse-all@32':>12} {'DP':>12} "
          f"{'DP blocks':>9}  best fixed plan")
    for model in models:
        queue = load_queue(zoo_path(model))
        oracle = DeviceModelOracle(queue)
        single = plan_cost(per_layer(queue), queue, oracle)
        fused = plan_cost(fuse_all(queue), queue, oracle)
        plan = run_optimizer(load_optimizer("dp"), queue, oracle)
        best = "fuse-all" if fused < single else "per-layer"
        print(f"{model:<14} {len(queue.layers):>6} {single:>12,.1f} {fused:>12,.1f} "
              f"{plan.notes['cost_us']:>12,.1f} {len(plan.blocks):>9}  {best} "
              f"(DP {min(single, fused) / plan.notes['cost_us']:.2f}x better)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--models", nargs="*", default=list(ZOO_MODELS))
    args = parser.parse_args(argv)
    dp_timing()
    search_vs_dp(args.budget)
    findings(args.models)
    return 0


if __name__ == "__main__":
    sys.exit(main())
