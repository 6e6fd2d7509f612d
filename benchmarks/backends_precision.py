"""fp32, fp16 and int8 on the oneDNN SDK side by side (issue 14 item 5), in one run on 2
threads, with the mock's kernels at the same precisions for reference.

For each model (paper workloads, random weights, batch 1): absmax calibration on 4
standard-normal batches, then per-layer and fuse-all plans at MP 2 in fp32, fp16 and int8,
run in-process (PlanRunner) on each SDK: median and fastest wall time of a forward, the
ratios to the same plan in fp32 on oneDNN, the output's SQNR against fp32 (oneDNN) and the largest
difference from the mock's run of the same plan and precision. Not a test.

    python benchmarks/backends_precision.py [--models resnet50 ...] [--repeats 10]
        [--sdks onednn mock] [--markdown]
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
from paleozoic.plan_runner import PlanRunner
from paleozoic.sdk import sdk_available
from paleozoic.testing import workloads

PLANS = {"per-layer": lambda q: per_layer(q, mp=2), "fuse-all": lambda q: fuse_all(q, mp=2)}
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


def _time(runner: PlanRunner, feeds, repeats: int) -> tuple[tuple[float, float], np.ndarray]:
    """(median, fastest) wall ms of a forward, and the outputs."""
    out = runner.run(feeds)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        runner.run(feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return ((float(np.median(times)), float(np.min(times))),
            np.concatenate([v.ravel() for v in out.values()]))


def bench(name: str, sdks: list[str], repeats: int) -> list[dict]:
    queue = load_queue(workloads.build(name))
    with tempfile.TemporaryDirectory() as tmp:
        quantization = _quantization(queue, Path(tmp))
    feeds = [np.random.default_rng(7).standard_normal(tuple(queue.inputs[0].shape))
             .astype(np.float32)]
    rows = []
    for plan_name, make in PLANS.items():
        base = make(queue)
        outputs, ms = {}, {}
        for precision in PRECISIONS:
            plan = with_precision(base, precision)
            for sdk in sdks:
                runner = PlanRunner(queue, plan, quantization, sdk=sdk)
                # The mock's reduced-precision kernels are slow: fewer repeats.
                reps = repeats if sdk == "onednn" else max(2, repeats // 3)
                ms[sdk, precision], outputs[sdk, precision] = _time(runner, feeds, reps)
                logger.info("%s %s %s %s: %.2f ms (fastest %.2f)", name, plan_name,
                            precision.value, sdk, *ms[sdk, precision])
        ref = outputs.get(("onednn", Precision.FP32))
        for precision in PRECISIONS:
            for sdk in sdks:
                ours = outputs[sdk, precision]
                row = {"model": workloads.DISPLAY_NAMES.get(name, name), "plan": plan_name,
                       "precision": precision.value, "sdk": sdk, "ms": ms[sdk, precision][0],
                       "min_ms": ms[sdk, precision][1]}
                if ("onednn", Precision.FP32) in ms:
                    fp32 = ms["onednn", Precision.FP32]
                    row["ratio"] = ms[sdk, precision][0] / fp32[0]
                    row["min_ratio"] = ms[sdk, precision][1] / fp32[1]
                if ref is not None:
                    row["sqnr"] = _sqnr(ours, ref)
                if sdk == "onednn" and ("mock", precision) in outputs:
                    row["vs_mock"] = float(np.abs(ours - outputs["mock", precision]).max())
                    row["out_max"] = float(np.abs(outputs["mock", precision]).max())
                rows.append(row)
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
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sdks = [s for s in args.sdks if sdk_available(s)]
    if "onednn" not in sdks:
        raise SystemExit("the oneDNN SDK is not built: pip install 'paleozoic[onednn]'")
    rows = []
    for name in args.models:
        rows += bench(name, sdks, args.repeats)
    print(table(rows))


if __name__ == "__main__":
    main()
