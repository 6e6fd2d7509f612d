"""The `paleozoic` commands that choose a plan: space (the size of a model's plan search
space), and tune, which runs an optimizer with the knobs asked for, or, given an accuracy
budget, searches for the fastest plan that keeps it on measured sensitivities. Which oracle
prices the search and how a wall-clock search's plan is confirmed are the optimize
package's rules (paleozoic.optimize.oracles); these handlers parse, call and print.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from paleozoic.cli.args import (
    accuracy_budget_arg, add_farm_options, add_shape_options, knobs_arg, new_output,
    parse_options, precision_names, precisions_arg, shapes,
)
from paleozoic.runner.sdk import SDKS


def _cmd_space(args: argparse.Namespace) -> int:
    from paleozoic.optimize import SearchSpace
    from paleozoic.optimize.report import space_lines
    from paleozoic.pipeline import load_queue

    queue = load_queue(args.model, **shapes(args))
    print("\n".join(space_lines(queue, SearchSpace.from_queue(queue))))
    return 0


class _TuneBars:
    """tune's progress on stderr, one bar at a time: the search's steps, or, while a step
    has many blocks timed at once (a guided search times them all before its first step),
    those blocks, so that neither bar's estimate counts the other's time."""

    STEPS = 1000

    def __init__(self, optimizer: str) -> None:
        self.optimizer = optimizer
        self.bar: Any = None
        self.showing = ""

    def __enter__(self) -> _TuneBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        self.bar, self.showing = None, ""

    def _show(self, what: str, **options: Any) -> Any:
        from tqdm import tqdm

        if self.showing != what:
            self._close()
            self.bar, self.showing = tqdm(leave=False, **options), what
        return self.bar

    def search(self, fraction: float, best_cost: float) -> None:
        bar = self._show("search", total=self.STEPS, desc=self.optimizer, unit="step",
                         bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining} "
                         "{postfix}")
        done = min(self.STEPS, max(0, int(fraction * self.STEPS)))
        if best_cost == best_cost:  # not NaN
            bar.set_postfix_str(f"best {best_cost:,.1f} us", refresh=False)
        if done > bar.n:
            bar.update(done - bar.n)

    def measuring(self, done: int, total: int) -> None:
        if total < 64:  # a few blocks asked for at once: the search's bar says enough
            return
        if done == 0:
            self._close()
        bar = self._show("measuring", total=total, desc="measuring blocks", unit="layer",
                         unit_scale=True)
        bar.update(done - bar.n)
        if done >= total:
            self._close()


def _cmd_tune(args: argparse.Namespace) -> int:
    from paleozoic import api

    out = new_output(args.output, args.force)
    if args.accuracy_budget is not None:
        return _tune_for_accuracy(args, out)
    measurements = None
    if args.cost == "measured":
        measurements = Path(args.measurements or out.with_name(out.stem + ".measurements.jsonl"))
    with _TuneBars(args.optimizer) as bars:
        tuned = api.tune(args.model, optimizer=args.optimizer, cost=args.cost, sdk=args.sdk,
                         profile=args.profile, precisions=args.precisions, knobs=args.knobs,
                         seed=args.seed, budget_s=args.budget,
                         options=parse_options(args.option), progress=bars.search,
                         measuring=bars.measuring, measurements=measurements,
                         workers=args.workers, ray_address=args.ray,
                         simulate_boards=args.simulate_boards, **shapes(args))
    for line in tuned.lines:
        print(line)
    tuned.plan.save(out)
    print("\n".join(tuned.table()))
    if measurements is not None:
        print(f"block timings kept in {measurements} (a re-run measures only what is new)")
    print(f"wrote {out} (re-emit with `paleozoic compile {args.model} --plan {out} -o DIR`)")
    return 0


def _tune_for_accuracy(args: argparse.Namespace, out: Path) -> int:
    """tune --accuracy-budget: sensitivities on --data, exact search, held-out checks."""
    from paleozoic import api

    tuned = api.tune_for_accuracy(args.model, budget=args.accuracy_budget,
                                  calibration=args.calibration, data=args.data,
                                  holdout=args.holdout, sensitivities=args.sensitivities,
                                  cost=args.cost, sdk=args.sdk, profile=args.profile,
                                  knobs=args.knobs, **shapes(args))
    for line in tuned.lines:
        print(line)
    tuned.plan.save(out)
    print("\n".join(tuned.table()))
    where = "held-out data" if args.holdout else "the --data batches (no --holdout given)"
    m = tuned.search.measured
    print(f"measured on {where}: SQNR {m.sqnr_db:.1f} dB, cosine {m.cosine:.6f}, top-1 "
          f"agreement {m.top1:.4f}; {len(tuned.search.tried)} candidate(s) run")
    print(f"wrote {out} (compile with `paleozoic compile {args.model} --plan {out} "
          f"--calibration {args.calibration} -o DIR`)")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds space and tune."""
    p = sub.add_parser("space", help="size of the plan search space (paper Eq. 3) for a model")
    p.add_argument("model", help="the .onnx file")
    add_shape_options(p)
    p.set_defaults(func=_cmd_space)

    p = sub.add_parser("tune", help="search for a plan with an optimizer; write plan.json")
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--optimizer", default="dp",
                   help="a built-in (per-layer, fuse-all, greedy, dp, annealing), "
                   "module:Class, path/to/file.py:Class, or an installed entry point in "
                   "group paleozoic.optimizers (default: dp)")
    p.add_argument("--seed", type=int, default=0, help="seed for randomised optimizers")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="wall-time budget for optimizers that search")
    p.add_argument("--cost", choices=("model", "measured"), default="model",
                   help="cost oracle: the analytic device model (default) or measurement "
                   "through the runtime (device time reported by the SDK timers)")
    p.add_argument("--profile", help="device profile file for --cost model")
    p.add_argument("--measurements", metavar="FILE.jsonl",
                   help="with --cost measured: the file keeping block timings across runs, "
                        "models and plans, by block contents, knobs and board (default: "
                        "PLAN.measurements.jsonl beside the plan)")
    add_farm_options(p, "with --cost measured: measure", "the plan is the same for any N",
                     simulate=True)
    p.add_argument("--sdk", choices=SDKS, default="mock",
                   help="with --cost measured: the SDK whose runs are timed (onednn: real "
                        "wall-clock time of oneDNN primitives on MP threads)")
    p.add_argument("--precisions", type=precisions_arg, default=precisions_arg("fp32"),
                   metavar="LIST", help="precisions a block may compute in, e.g. "
                   f"{','.join(precision_names())}; the optimizer picks one per block for "
                   "speed (default: fp32). The cost oracle must price them")
    p.add_argument("-O", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the optimizer, e.g. -O iterations=20000 (repeatable)")
    p.add_argument("--knobs", type=knobs_arg, default=frozenset(), metavar="LIST",
                   help="Table 4 knobs to search besides cuts, MP and precision: sparsity "
                        "(the SDK's sparse mode for layers with zero weight pairs, e.g. from "
                        "`paleozoic prune`, where the device model says it pays), dp (data "
                        "parallelism: the batch split into groups of frames on disjoint "
                        "cores, dp x MP <= 32; the search runs once per dp the batch allows), "
                        "concat (stages: an Inception module's branches as blocks that run at "
                        "once on disjoint cores, where the device model says it pays), "
                        "balance (load balance: each input's and output's float32 <-> float16 "
                        "conversion on the host or the device, whichever the device model "
                        "prices lower)")
    p.add_argument("--accuracy-budget", type=accuracy_budget_arg, metavar="METRIC=VALUE",
                   help="accuracy-aware tuning: the fastest plan (cuts, MP, precision) whose "
                        "outputs keep sqnr=DB, cosine=X or top1=X against fp32; needs "
                        "--calibration and --data (sensitivities are measured there) and "
                        "checks candidates on --holdout")
    p.add_argument("--calibration", metavar="CALIB.json", help="from `paleozoic calibrate`")
    p.add_argument("--data", nargs="+", metavar="PATH", help="batches to measure "
                   "sensitivities on (as for calibrate)")
    p.add_argument("--holdout", nargs="+", metavar="PATH",
                   help="batches the chosen plan must meet the budget on (default: --data)")
    p.add_argument("--sensitivities", metavar="FILE.json",
                   help="reuse this file's sensitivities if it exists, else write them there")
    p.add_argument("-o", "--output", required=True, help="plan file to write (plan.json)")
    p.add_argument("--force", action="store_true", help="replace an existing plan file")
    add_shape_options(p)
    p.set_defaults(func=_cmd_tune)
