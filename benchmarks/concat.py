"""Stages (Table 4's concatenation of independent layers), in one run:

1. Device model: the DP optimizer's plan against the staged DP's (`tune --knobs concat`) on
   the Inception family and SqueezeNet, at several batches; the device time of each.
2. oneDNN, measured (--measure): each Inception module's branches as a stage of MP-1 blocks
   run at once on threads of their own, against the same module as one block at MP 2 run
   before the next (the same blocks elsewhere: one layer each at MP 2); wall time of
   whole forwards, the median of alternating rounds, with the machine's 2 cores.

Not a test: figures depend on the device model's assumptions and on the machine.

    python benchmarks/concat.py [--batches 1,8,32] [--measure] [--rounds 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

from paleozoic.frontend import import_onnx
from paleozoic.ir import Plan, PlannedBlock
from paleozoic.optimize import load_optimizer, run_optimizer
from paleozoic.optimize.concat import Region, parallel_regions, search_stages
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.space import SearchSpace
from paleozoic.passes import run_passes
from paleozoic.pipeline import build_session, compile_model
from paleozoic_testing.zoo import load_zoo_model

EXPORTS = Path("/work/exported/torch")
# The zoo's Inception v1 and v2 reshape to [1, 1024]: batch 1 only.
FIXED_BATCH = {"inception_v1", "inception_v2"}
MODELS = {
    "googlenet": lambda: onnx.load(str(EXPORTS / "googlenet_op13.onnx")),
    "inception_v1": lambda: load_zoo_model("inception_v1"),
    "inception_v2": lambda: load_zoo_model("inception_v2"),
    "inception_v3": lambda: onnx.load(str(EXPORTS / "inception_v3_op13.onnx")),
    "squeezenet1_1": lambda: onnx.load(str(EXPORTS / "squeezenet1_1_op13.onnx")),
}


def batch_free(model: onnx.ModelProto) -> onnx.ModelProto:
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    del model.graph.value_info[:]
    return model


def device_model(name: str, model: onnx.ModelProto, batch: int) -> dict:
    queue = run_passes(import_onnx(batch_free(onnx.ModelProto.FromString(
        model.SerializeToString())), batch=batch))
    oracle = DeviceModelOracle(queue)
    space = SearchSpace.from_queue(queue)
    plain = run_optimizer(load_optimizer("dp"), queue, oracle, space)
    staged = search_stages(queue, space, oracle)
    return {"model": name, "batch": batch, "dp_us": plain.notes["cost_us"],
            "staged_us": staged.notes["cost_us"], "stages": len(staged.stages),
            "regions": len({r.stop for r in parallel_regions(queue, space)}),
            "speedup": plain.notes["cost_us"] / staged.notes["cost_us"]}


def modules(queue, space) -> list[Region]:
    """The widest parallel region closed by each join, left to right, not overlapping."""
    widest: dict[int, Region] = {}
    for region in parallel_regions(queue, space):
        if region.stop not in widest or region.start < widest[region.stop].start:
            widest[region.stop] = region
    chosen: list[Region] = []
    for region in sorted(widest.values(), key=lambda r: (r.start, -r.stop)):
        if len(region.branches) >= 2 and (not chosen or region.start >= chosen[-1].stop):
            chosen.append(region)
    return chosen


def macs(queue, index: int) -> float:
    """Multiply-adds of a layer (0 for one without weights): to rank a module's branches."""
    layer = queue.layers[index]
    weight = layer.weights.get("weight")
    if weight is None:
        return 0.0
    out = queue.shape(layer.output)
    spatial = int(np.prod(out[2:])) if len(out) > 2 else 1
    return float(np.prod(queue.weights[weight].shape)) * spatial * out[0]


def measured_plans(queue, big_mp: int = 1, fuse: bool = True) -> tuple[Plan, Plan]:
    """(modules as stages, their largest branch at `big_mp` and the others at MP 1; the same
    modules at MP 2 one after another: fused, or with `fuse` False each layer alone in both
    plans, so that only running at once differs)."""
    space = SearchSpace.from_queue(queue)
    names = [layer.name for layer in queue.layers]
    staged, fused = [], []
    stages: list[list[str]] = []
    at = 0
    for region in modules(queue, space) + [Region(len(names), len(names), ())]:
        for i in range(at, region.start):
            for blocks in (staged, fused):
                blocks.append(PlannedBlock(f"b{len(blocks)}", [names[i]], mp=2, fuse=False))
        if region.branches:
            stage = []
            # The branch with the most work gets both cores' worth of MP, the others one: on
            # a 2-core machine a stage's makespan is at least its largest branch's.
            work = [sum(macs(queue, i) for i in branch) for branch in region.branches]
            for branch, w in zip(region.branches, work):
                staged.append(PlannedBlock(f"b{len(staged)}", [names[i] for i in branch],
                                           mp=big_mp if w == max(work) else 1,
                                           fuse=fuse and len(branch) > 1))
                stage.append(staged[-1].name)
            stages.append(stage)
            if fuse:
                fused.append(PlannedBlock(f"b{len(fused)}", names[region.start:region.stop],
                                          mp=2, fuse=True))
            else:
                fused += [PlannedBlock(f"b{len(fused) + k}", [names[i]], mp=2, fuse=False)
                          for k, i in enumerate(range(region.start, region.stop))]
        at = region.stop
    return Plan(staged, strategy="stages", stages=stages), Plan(fused, strategy="modules-mp2")


def wall_ms(exe: Path, folder: Path, repeat: int) -> float:
    result = subprocess.run([str(exe), "-w", str(folder / "weights.bin"), "-r", str(repeat)],
                            capture_output=True, text=True, check=True)
    return float(re.search(r"wall time: ([0-9.]+) ms", result.stdout).group(1))


def measure(name: str, model: onnx.ModelProto, rounds: int, repeat: int,
            folder: Path, big_mp: int, fuse: bool) -> dict:
    queue = run_passes(import_onnx(model))
    staged, fused = measured_plans(queue, big_mp, fuse)
    exes = {}
    for plan in (staged, fused):
        path = folder / f"{name}_{plan.strategy}.json"
        path.write_text(plan.to_json())
        out = folder / f"{name}_{plan.strategy}"
        compile_model(model, out, plan=path, force=True)
        exes[plan.strategy] = (build_session(out, sdk="onednn"), out)
    times: dict[str, list[float]] = {k: [] for k in exes}
    for _ in range(rounds):  # alternating, so drift hits both alike
        for key, (exe, out) in exes.items():
            times[key].append(wall_ms(exe, out, repeat))
    median = {k: statistics.median(v) for k, v in times.items()}
    return {"model": name, "stages": len(staged.stages), "staged_ms": median["stages"],
            "modules_mp2_ms": median["modules-mp2"],
            "speedup": median["modules-mp2"] / median["stages"], "rounds": times}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--measure", action="store_true", help="also time oneDNN sessions")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--big-mp", type=int, default=1,
                        help="MP of each module's largest branch in its stage (others: 1)")
    parser.add_argument("--layer-by-layer", action="store_true",
                        help="branches and modules unfused in both plans")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    results: dict = {"device_model": [], "onednn": []}
    print("| model | batch | DP plan us | staged DP us | stages | speedup |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        for batch in (int(b) for b in args.batches.split(",")):
            if batch != 1 and name in FIXED_BATCH:
                continue
            r = device_model(name, MODELS[name](), batch)
            results["device_model"].append(r)
            print(f"| {name} | {batch} | {r['dp_us']:,.1f} | {r['staged_us']:,.1f} | "
                  f"{r['stages']} | {r['speedup']:.3f}x |", flush=True)
    if args.measure:
        print("\n| model (oneDNN, batch 1) | stages | modules as stages, MP-1 branches at once "
              "ms | modules fused at MP 2 ms | speedup |")
        print("| --- | ---: | ---: | ---: | ---: |")
        with tempfile.TemporaryDirectory() as tmp:
            for name in names:
                if name.startswith("squeezenet"):
                    continue
                r = measure(name, MODELS[name](), args.rounds, args.repeat, Path(tmp),
                            args.big_mp, not args.layer_by_layer)
                results["onednn"].append(r)
                print(f"| {name} | {r['stages']} | {r['staged_ms']:.2f} | "
                      f"{r['modules_mp2_ms']:.2f} | {r['speedup']:.2f}x |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
