"""Data parallelism against model parallelism on the device model, in one run: a model at a
batch, every (data parallelism, MP) split of the 32 cores as a fuse-all and a per-layer plan,
and the DP optimizer's plan searched at each data parallelism (tune --knobs dp), with the
throughput of each (frames per second of simulated device time). Prints a table and writes
JSON. Not a test: it reports what the device model says, beside the MLU100 measurements of
the literature where they exist.

    python benchmarks/data_parallel.py [MODEL.onnx:BATCH[:PRECISION] ...] [--json FILE]

Default: ResNet-50 at batch 32 and DenseNet-121 at batch 16 (int8 and fp32), from the
torchvision exports (scripts/export_torchvision.py) in /work/exported/torch, made batch-free.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import onnx

from paleozoic.frontend import import_onnx
from paleozoic.ir.plan import MP_MAX, Precision, data_parallelism_choices, \
    with_data_parallelism
from paleozoic.optimize import load_optimizer
from paleozoic.optimize.data_parallel import search_data_parallelism
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.optimize.space import SearchSpace
from paleozoic.passes import run_passes
from paleozoic.pipeline import with_precision

EXPORTS = Path("/work/exported/torch")
DEFAULT = (f"{EXPORTS}/resnet50_op13.onnx:32:fp32", f"{EXPORTS}/resnet50_op13.onnx:32:int8",
           f"{EXPORTS}/densenet121_op13.onnx:16:int8",
           f"{EXPORTS}/densenet121_op13.onnx:16:fp32")
# The MLU100 measurement this is set beside (../shared/docs/knobs-notes.md): the best dense
# int8 DenseNet-121 setting in the sweeps of lijiansong/lang (Bench'19 authors).
LITERATURE = {("densenet121", 16, "int8"): "MLU100 measured best: batch 16, dp 4, mp 1"}
SPLITS = [(dp, MP_MAX // dp) for dp in (1, 2, 4, 8, 16, 32)]


def batch_free(path: Path, folder: Path) -> Path:
    """The model with a symbolic first axis on its inputs and outputs."""
    model = onnx.load(str(path))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    del model.graph.value_info[:]
    out = folder / path.name
    onnx.save(model, str(out))
    return out


def evaluate(path: Path, batch: int, precision: Precision, folder: Path) -> dict:
    queue = run_passes(import_onnx(str(batch_free(path, folder)), batch=batch))
    fps = lambda us: batch * 1e6 / us  # noqa: E731
    rows = []
    allowed = data_parallelism_choices(queue)
    for dp, mp in [(dp, mp) for dp, mp in SPLITS if dp in allowed]:
        oracle = DeviceModelOracle(queue, data_parallelism=dp)
        for name, make in (("fuse-all", fuse_all), ("per-layer", per_layer)):
            plan = with_precision(with_data_parallelism(make(queue), dp), precision)
            for block in plan.blocks:
                block.mp = mp
            us = oracle.plan_cost(plan)
            rows.append({"plan": name, "dp": dp, "mp": mp, "us": us, "fps": fps(us)})
    space = SearchSpace.from_queue(queue, precisions=(precision,))
    searched = search_data_parallelism(
        load_optimizer("dp"), queue, lambda dp: DeviceModelOracle(queue, data_parallelism=dp),
        space)
    per_dp = {int(dp): us for dp, us in searched.notes["data_parallelism_us"].items()}
    best_grid = min(rows, key=lambda r: r["us"])
    ends = {(r["dp"], r["mp"]): r for r in rows if r["plan"] == "fuse-all"}
    widest = max(dp for dp, _ in ends)
    return {
        "model": path.stem, "batch": batch, "precision": precision.value, "grid": rows,
        "searched_per_dp": {dp: {"us": us, "fps": fps(us)} for dp, us in per_dp.items()},
        "searched": {"dp": searched.data_parallelism, "us": searched.notes["cost_us"],
                     "fps": fps(searched.notes["cost_us"]),
                     "mps": sorted({b.mp for b in searched.blocks})},
        "best_uniform": best_grid,
        "dp1_mp32": ends[(1, MP_MAX)], "widest_dp": ends[(widest, MP_MAX // widest)],
    }


def report(result: dict) -> list[str]:
    key = (result["model"].split("_")[0], result["batch"], result["precision"])
    lines = [f"## {result['model']} at batch {result['batch']}, {result['precision']}", "",
             "| dp x MP | fuse-all us | fuse-all frames/s | per-layer us | per-layer frames/s |"
             " searched (DP optimizer, MP per block) frames/s |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for dp, mp in SPLITS:
        if not any(r["dp"] == dp for r in result["grid"]):
            continue  # does not divide the batch
        fa = next(r for r in result["grid"] if r["plan"] == "fuse-all" and r["dp"] == dp)
        pl = next(r for r in result["grid"] if r["plan"] == "per-layer" and r["dp"] == dp)
        s = result["searched_per_dp"].get(dp)
        lines.append(f"| {dp} x {mp} | {fa['us']:,.0f} | {fa['fps']:,.0f} | {pl['us']:,.0f} | "
                     f"{pl['fps']:,.0f} | {s['fps']:,.0f} |")
    s, b = result["searched"], result["best_uniform"]
    lines += ["", f"searched: dp {s['dp']} (MPs {s['mps']}), {s['fps']:,.0f} frames/s; "
              f"best uniform split: {b['plan']} dp {b['dp']} x MP {b['mp']}, "
              f"{b['fps']:,.0f} frames/s; dp 1 x MP 32 fuse-all {result['dp1_mp32']['fps']:,.0f}"
              f", dp {result['widest_dp']['dp']} x MP {result['widest_dp']['mp']} fuse-all "
              f"{result['widest_dp']['fps']:,.0f}"]
    if key in LITERATURE:
        lines.append(LITERATURE[key])
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=list(DEFAULT),
                        help="MODEL.onnx:BATCH[:PRECISION] (default: ResNet-50 and DenseNet-121)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for spec in args.models:
            path, batch, *rest = spec.split(":")
            precision = Precision(rest[0] if rest else "fp32")
            results.append(evaluate(Path(path), int(batch), precision, Path(folder)))
            print("\n".join(report(results[-1])), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
