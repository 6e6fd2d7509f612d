"""The `paleozoic bench` command: latency, memory and accuracy of a model's sessions per
SDK, plan and precision beside onnxruntime, in one run (paleozoic.bench does the work;
this parses the lists, refuses what cannot run before anything is built, and prints).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from paleozoic.cli.args import add_farm_options, add_shape_options, csv, precision_names, shapes
from paleozoic.errors import BuildError, PaleozoicError, PlanMismatchError
from paleozoic.runner.sdk import SDKS


def _cmd_bench(args: argparse.Namespace) -> int:
    from paleozoic.bench import bench, resolve_configs
    from paleozoic.runner.sdk import sdk_available

    sdks = csv(args.sdk)
    try:
        configs = resolve_configs(sdks, csv(args.plan), csv(args.precision))
    except ValueError as err:
        raise PlanMismatchError(str(err)) from None
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise PaleozoicError("--plot needs matplotlib: pip install 'paleozoic[eval]', or "
                             "leave --plot out")
    missing = [sdk for sdk in sdks if not sdk_available(sdk)]
    if missing:
        fix = ("pip install 'paleozoic[onednn]' (docs/onednn.md), or bench --sdk mock"
               if missing[0] == "onednn" else "install Paleozoic with `pip install .`, which "
               "builds the runtime extension")
        raise BuildError(f"the {missing[0]} SDK is not built: {fix}")
    farm = None
    if args.workers is not None or args.ray is not None:
        from paleozoic.farm.opening import open_farm

        # bench times the wall clock whatever the SDK: one board per host.
        farm = open_farm(workers=args.workers, address=args.ray, wall_clock=True)
    try:
        report = bench(args.model, configs, threads=args.threads, repeat=args.repeat,
                       rounds=args.rounds, min_turn_ms=args.min_turn_ms, seed=args.seed,
                       calibration=args.calibration, show_progress=sys.stderr.isatty(),
                       farm=farm, **shapes(args))
    finally:
        if farm is not None:
            farm.close()
    if farm is not None:
        print("\n".join(farm.summary()))
    print(report.table())
    if args.json:
        Path(args.json).write_text(report.to_json())
    if args.plot:
        report.plot(args.plot)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds bench."""
    p = sub.add_parser("bench", help="latency, memory and accuracy of a model's sessions per "
                       "SDK, plan and precision, beside onnxruntime, in one run")
    p.add_argument("model", nargs="+", help="one or more .onnx files")
    p.add_argument("--sdk", default="mock,onednn" if "onednn" in SDKS else "mock",
                   help="comma-separated SDKs (default: mock,onednn)")
    p.add_argument("--plan", default="per-layer,fuse-all",
                   help="comma-separated plans: per-layer, fuse-all, plan.json files")
    p.add_argument("--precision", default="fp32", help="comma-separated: "
                   f"{', '.join(precision_names())} (int8 needs --calibration)")
    p.add_argument("--calibration", metavar="CALIB.json", help="int8 parameters (one model)")
    add_farm_options(p, "bench each model (its configurations and onnxruntime side by side "
                     "on one board)", "N is 1 on one host, as bench times the wall clock")
    p.add_argument("--threads", type=int, default=2, help="threads of every configuration "
                   "and of onnxruntime; the built-in plans' MP (default 2)")
    p.add_argument("--repeat", type=int, default=20, help="timed forwards per configuration")
    p.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default 4)")
    p.add_argument("--min-turn-ms", type=float, default=50.0, help="a configuration's turn "
                   "in a round times more forwards until they add up to this (default 50 ms: "
                   "a 1-ms network is not judged on 5 forwards)")
    p.add_argument("--seed", type=int, default=0, help="seed of the input")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="bar chart of the latency ratios "
                   "(needs matplotlib)")
    add_shape_options(p)
    p.set_defaults(func=_cmd_bench)
