"""Fits the device model's sparse pricing (the profile's sparse_skip_efficiency) to the one
published MLU100 sparsity measurement, and prints what the fitted model says of ResNet-50.

The measurement: DenseNet-121 on an MLU100 with Cambricon's sparse mode at sparsity 0.10
(each layer's pairs below its 10% quantile zeroed) against the dense model, end-to-end
frames per second over a sweep of batch, data parallelism, model parallelism and threads,
from the GitHub repository lijiansong/lang (python/sklearn/linear-regression/
workload-analysis/classify/post-process/densenet121/: dense-fp16/32cores, dense-int8,
sparse-fp16 and sparse-int8 at sparsity-0.10, files densenet121-*.txt; an author of
"Performance analysis of Cambricon MLU100", Bench'19). Over the settings both sweeps hold
(480 fp16, 559 int8), the median ratio of sparse to dense frames per second is 1.068 (fp16)
and 1.089 (int8), the settings spreading from 0.86 to 1.97. Those are whole-pipeline
rates (host pre- and post-processing included), so they bound the device's own gain from
below: the fit is a lower bound of the efficiency as well.

The fit: the zoo DenseNet-121 pruned the same way (prune_pairs at 0.10 per layer), every
layer with a sparse mode in it, priced by the device model at batch 1 with the DP plan at
each precision, over a grid of sparse_skip_efficiency; the efficiency whose dense / sparse
time ratio equals the measured median. Then ResNet-50 pruned to 80% pairs: dense against
sparse under the same plan search (issue 26's goal: at least 1.5x).

    python benchmarks/sparse_fit.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from paleozoic import _runtime
from paleozoic.frontend.prune import prune_pairs
from paleozoic.ir import LayerQueue
from paleozoic.ir.plan import Precision
from paleozoic.ops import KINDS
from paleozoic.optimize import load_optimizer, run_optimizer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.space import SearchSpace
from paleozoic.optimize.sparse import sparse_candidates
from paleozoic.pipeline import load_queue
from paleozoic_testing.zoo import load_zoo_model

MEASURED = {Precision.FP16: 1.068, Precision.INT8: 1.089}  # median sparse / dense fps


def pruned_queue(name: str, sparsity: float) -> LayerQueue:
    queue = load_queue(load_zoo_model(name))
    for layer in queue.layers:
        kind = KINDS[layer.kind]
        if kind.sparse_refused(layer.op.attrs) is None and "weight" in layer.weights:
            key = layer.weights["weight"]
            queue.weights[key] = prune_pairs(queue.weights[key], sparsity,
                                             kind.weight_channel_axis)
    return queue


def profile_with(folder: Path, efficiency: float) -> Path:
    text = Path(_runtime.default_profile_path()).read_text()
    lines = [f"sparse_skip_efficiency = {efficiency}"
             if line.startswith("sparse_skip_efficiency") else line
             for line in text.splitlines()]
    path = folder / f"e{efficiency:.3f}.profile"
    path.write_text("\n".join(lines) + "\n")
    return path


def best_cost(queue: LayerQueue, profile: Path | None, precision: Precision,
              sparse: frozenset[str]) -> float:
    oracle = DeviceModelOracle(queue, str(profile) if profile else None, sparse=sparse)
    space = SearchSpace.from_queue(queue, precisions=(precision,))
    plan = run_optimizer(load_optimizer("dp"), queue, oracle, space)
    return float(plan.notes["cost_us"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=21, help="efficiencies tried in [0, 1]")
    args = parser.parse_args(argv)
    densenet = pruned_queue("densenet121", 0.10)
    every = frozenset(sparse_candidates(densenet))
    print(f"DenseNet-121 pruned to 10% pairs: {len(every)} layers with a sparse mode")
    fitted = {}
    with tempfile.TemporaryDirectory(prefix="pz-sparse-fit-") as tmp:
        for precision, target in MEASURED.items():
            dense = best_cost(densenet, None, precision, frozenset())
            rows = []
            for e in np.linspace(0.0, 1.0, args.grid):
                sparse = best_cost(densenet, profile_with(Path(tmp), e), precision, every)
                rows.append((e, dense / sparse))
            es, ratios = zip(*rows)
            fit = float(np.interp(target, ratios, es)) if ratios[-1] >= target else float("nan")
            fitted[precision] = fit
            print(f"{precision.value}: dense {dense:.1f} us; dense / sparse at efficiency "
                  + ", ".join(f"{e:.2f}: {r:.3f}" for e, r in rows[:: max(1, args.grid // 5)])
                  + f"; measured {target:.3f} -> efficiency "
                  + (f"{fit:.2f}" if fit == fit else "above 1 (more than the model gives)"))
        fit = min(v for v in fitted.values() if v == v)
        print(f"fitted sparse_skip_efficiency (the lower of the two): {fit:.2f}")
        resnet = pruned_queue("resnet50", 0.8)
        sparse_layers = frozenset(sparse_candidates(resnet))
        profile = profile_with(Path(tmp), round(fit, 2))
        for precision in (Precision.FP32, Precision.FP16, Precision.INT8):
            dense = best_cost(resnet, profile, precision, frozenset())
            sparse = best_cost(resnet, profile, precision, sparse_layers)
            print(f"ResNet-50 pruned to 80% pairs, {precision.value}, DP plans: dense "
                  f"{dense:.1f} us, sparse {sparse:.1f} us: {dense / sparse:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
