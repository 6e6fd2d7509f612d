"""Load balance on the device model, in one run (Table 4; the MLU100's two features).

Data-preprocess strategy: each model's fp16 plan (the DP optimizer's), and for each graph
input and output the float32 <-> float16 conversion priced on the host (CPU_PRIORITY: the
cast at host_convert_gbps, the float16 copy over the host link) and on the device
(MLU_PRIORITY: the float32 copy, the cast in the block), the side `tune --knobs balance`
takes, and host plus device time against a session without a strategy (inputs cast on the
device, outputs on the host).

Channel placement: the per-layer MP-1 plan (fp32) with and without a DDR channel: a forward
so placed has a quarter of the DRAM bandwidth.

    python benchmarks/load_balance.py [MODEL.onnx ...] [--json FILE]

Default: the torchvision exports in /work/exported/torch (scripts/export_torchvision.py).
Not a test: it prints what the device model says.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from paleozoic.frontend import import_onnx
from paleozoic.ir.plan import Precision
from paleozoic.optimize import load_optimizer
from paleozoic.optimize.balance import io_conversions
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.plans import per_layer
from paleozoic.optimize.run import run_optimizer
from paleozoic.optimize.space import SearchSpace
from paleozoic.passes import run_passes

EXPORTS = Path("/work/exported/torch")
DEFAULT = [EXPORTS / f"{name}_op13.onnx" for name in (
    "resnet50", "mobilenet_v2", "efficientnet_b0", "googlenet", "squeezenet1_1",
    "deeplabv3_mobilenet_v3_large")]


def evaluate(path: Path) -> dict:
    queue = run_passes(import_onnx(str(path)))
    oracle = DeviceModelOracle(queue)
    space = SearchSpace.from_queue(queue, precisions=(Precision.FP16,))
    plan = run_optimizer(load_optimizer("dp"), queue, oracle, space)
    tensors = [{"tensor": c.tensor, "host_side_us": sum(c.on_host),
                "device_side_us": sum(c.on_device), "chosen": c.strategy,
                "default_us": c.default_cost, "chosen_us": c.cost}
               for c in io_conversions(plan, queue)]
    mp1 = per_layer(queue, mp=1)
    free = oracle.plan_cost(mp1)
    placed = oracle.plan_cost(dataclasses.replace(mp1, channel=0))
    return {"model": path.stem, "fp16_plan_us": plan.notes["cost_us"], "io": tensors,
            "mp1_us": free, "mp1_channel_us": placed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = [evaluate(path) for path in args.models if path.exists()]
    print("| model | fp16 plan us | I/O tensor | host side us | device side us | chosen "
          "| vs no strategy |")
    print("| --- | ---: | --- | ---: | ---: | --- | ---: |")
    for row in rows:
        for t in row["io"]:
            print(f"| {row['model']} | {row['fp16_plan_us']:,.1f} | {t['tensor']} | "
                  f"{t['host_side_us']:,.1f} | {t['device_side_us']:,.1f} | {t['chosen']} | "
                  f"{t['chosen_us']:,.1f} against {t['default_us']:,.1f} us |")
    print()
    print("| model | per-layer MP 1 us | on a DDR channel us | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['model']} | {row['mp1_us']:,.1f} | {row['mp1_channel_us']:,.1f} | "
              f"{row['mp1_channel_us'] / row['mp1_us']:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
