"""fp32, fp16 and int8 on the oneDNN SDK side by side (issue 14 item 5), in one run on 2
threads, with the mock's kernels at the same precisions for reference.

For each model (paper workloads, random weights, batch 1): absmax calibration on 4
standard-normal batches, then per-layer and fuse-all plans at MP 2 (--mp) in fp32, fp16
and int8, run in-process (PlanRunner) on each SDK, the runners taking turns: median and
fastest wall time of a forward, the ratios to the same plan in fp32 on oneDNN, the
output's SQNR against fp32 (oneDNN) and the largest difference from the mock's run of the
same plan and precision. Not a test.

    python benchmarks/backends_precision.py [--models resnet50 ...] [--repeats 10] [--mp 2]
        [--sdks onednn mock]
"""

from __future__ import annotations

import argparse
import logging
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from paleozoic.calibration import calibrate
from paleozoic.calibration.params import layer_quantization
from paleozoic.ir.plan import Precision
from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.pipeline import load_queue, with_precision
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing import workloads

PLANS = {"per-layer": per_layer, "fuse-all": fuse_all}
PRECISIONS = (Precision.FP32, Precision.FP16, Precision.INT8)

logger = logging.getLogger("backends_precision")


def _sqnr(ours: np.ndarray, ref: np.ndarray) -> float:
    noise = float(np.sum((ours.astype(np.float64) - ref) ** 2))
    signal = float(np.sum(ref.astype(np.float64) ** 2))
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def _quantization(queue, tmp: Path, batches: int = 4):
    shape = tuple(queue.inputs[0].shape)
    rng = np.random.default_rng(1)
    files = []
    for i in range(batches):
        path = tmp / f"calib{i}.npy"
        np.save(path, rng.standard_normal(shape).astype(np.float32))
        files.append(str(path))
    return layer_quantization(queue, calibrate(queue, files))


def _outputs(runner: PlanRunner, feeds) -> np.ndarray:
    return np.concatenate([v.ravel() for v in runner.run(feeds).values()])


def _round_robin(runners: dict, feeds, repeats: int) -> dict:
    """(median, fastest) wall ms of a forward per runner, the runners taking turns so that
    load from elsewhere on the machine spreads over all of them alike."""
    times: dict = {key: [] for key in runners}
    for _ in range(repeats):
        for key, runner in runners.items():
            start = time.perf_counter()
            runner.run(feeds)
            times[key].append((time.perf_counter() - start) * 1e3)
    return {key: (float(np.median(t)), float(np.min(t))) for key, t in times.items()}


def bench(name: str, sdks: list[str], repeats: int, mp: int) -> list[dict]:
    queue = load_queue(workloads.build(name))
    with tempfile.TemporaryDirectory() as tmp:
        quantization = _quantization(queue, Path(tmp))
    feeds = [np.random.default_rng(7).standard_normal(tuple(queue.inputs[0].shape))
             .astype(np.float32)]
    runners, outputs = {}, {}
    for plan_name, make in PLANS.items():
        for precision in PRECISIONS:
            plan = with_precision(make(queue, mp=mp), precision)
            for sdk in sdks:
                key = (plan_name, precision, sdk)
                runners[key] = PlanRunner(queue, plan, quantization, sdk=sdk)
                outputs[key] = _outputs(runners[key], feeds)
    ms = _round_robin({k: r for k, r in runners.items() if k[2] == "onednn"}, feeds, repeats)
    # The mock's reduced-precision kernels are slow: a few turns.
    ms.update(_round_robin({k: r for k, r in runners.items() if k[2] != "onednn"}, feeds,
                           max(2, repeats // 5)))
    rows = []
    for plan_name in PLANS:
        fp32 = ms[plan_name, Precision.FP32, "onednn"]
        ref = outputs[plan_name, Precision.FP32, "onednn"]
        for precision in PRECISIONS:
            for sdk in sdks:
                key = (plan_name, precision, sdk)
                row = {"model": workloads.DISPLAY_NAMES.get(name, name),
                       "plan": f"{plan_name} MP {mp}",
                       "precision": precision.value, "sdk": sdk, "ms": ms[key][0],
                       "min_ms": ms[key][1], "ratio": ms[key][0] / fp32[0],
                       "min_ratio": ms[key][1] / fp32[1], "sqnr": _sqnr(outputs[key], ref)}
                mock = outputs.get((plan_name, precision, "mock"))
                if sdk == "onednn" and mock is not None:
                    row["vs_mock"] = float(np.abs(outputs[key] - mock).max())
                    row["out_max"] = float(np.abs(mock).max())
                rows.append(row)
                logger.info("%s", row)
    return rows


def table(rows: list[dict]) -> str:
    lines = [("| model | plan | precision | SDK | median ms (fastest) | vs oneDNN fp32, median "
             "(fastest) | SQNR vs fp32 | max diff vs mock (of max) |"),
             "|---|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        sqnr = r.get("sqnr", math.nan)
        sq = "exact" if sqnr == math.inf else f"{sqnr:.1f} dB"
        diff = (f"{r['vs_mock']:.3g} (of {r['out_max']:.3g})" if "vs_mock" in r else "")
        lines.append(f"| {r['model']} | {r['plan']} | {r['precision']} | {r['sdk']} | "
                     f"{r['ms']:.1f} ({r['min_ms']:.1f}) | {r.get('ratio', math.nan):.2f}x "
                     f"({r.get('min_ratio', math.nan):.2f}x) | {sq} | {diff} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50"],
                        choices=sorted(workloads.WORKLOADS))
    parser.add_argument("--sdks", nargs="+", default=["onednn", "mock"],
                        choices=["onednn", "mock"])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--mp", type=int, default=2, help="the plans' MP (threads)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sdks = [s for s in args.sdks if sdk_available(s)]
    if "onednn" not in sdks:
        raise SystemExit("the oneDNN SDK is not built: pip install 'paleozoic[onednn]'")
    rows = []
    for name in args.models:
        rows += bench(name, sdks, args.repeats, args.mp)
    print(table(rows))


if __name__ == "__main__":
    main()
