"""The `paleozoic` command line: compile, build, verify, inspect, prune, space, tune, calibrate,
debug, prefix."""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from paleozoic import __version__
from paleozoic.codegen.escape import terminal_text
from paleozoic.errors import (
    BuildError,
    ModelLoadError,
    PaleozoicError,
    PlanMismatchError,
)
from paleozoic.runner.sdk import SDKS

if TYPE_CHECKING:
    from collections.abc import Collection

    from paleozoic.ir import LayerQueue
    from paleozoic.optimize import CostOracle


def _shape_arg(text: str) -> tuple[str, tuple[int, ...]]:
    from paleozoic.frontend.prepare import parse_shape

    try:
        return parse_shape(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_shape_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", type=_shape_arg, default=[],
                   metavar="NAME=DxDxD", help="static shape for an input with symbolic "
                   "dimensions, e.g. input=1x3x224x224 (repeatable)")
    p.add_argument("--batch", type=int, default=None, metavar="N",
                   help="size of a symbolic batch (first) dimension")
    p.add_argument("--input-value", action="append", type=_value_arg, default=[],
                   metavar="NAME=VALUE[,VALUE...]", help="make an input a constant, e.g. "
                   "sr=16000 (a sample rate an If checks: the branch not taken folds away); "
                   "repeatable")
    p.add_argument("--outputs", type=_names_arg, default=None, metavar="NAME[,NAME...]",
                   help="compute these tensors instead of the model's outputs, e.g. a "
                   "detector's raw scores and boxes before its NonMaxSuppression")


def _shapes(args: argparse.Namespace) -> dict[str, object]:
    values = dict(args.input_value)
    return {"input_shapes": dict(args.input_shape), "batch": args.batch,
            **({"input_values": values} if values else {}),
            **({"outputs": args.outputs} if args.outputs else {})}


def _names_arg(text: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    if not names:
        raise argparse.ArgumentTypeError("give one tensor name or more, comma-separated")
    return names


def _value_arg(text: str) -> tuple[str, object]:
    from paleozoic.frontend.prepare import parse_value

    try:
        return parse_value(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _cmd_compile(args: argparse.Namespace) -> int:
    from paleozoic.pipeline import compile_model

    if args.generate:
        return _compile_generator(args)
    out = compile_model(args.model, args.output, plan=args.plan, force=args.force,
                        emit=args.emit, precision=args.precision,
                        calibration=args.calibration, profile=args.profile,
                        data_parallelism=args.data_parallelism, **_shapes(args))
    print(f"wrote {out}/ (session.cpp, weights.bin, CMakeLists.txt, plan.json, session.json)")
    memory = json.loads((Path(out) / "session.json").read_text()).get("memory")
    if memory:
        print(f"memory: weights {_mb(memory['weights_bytes'])}, arena "
              f"{_mb(memory['arena_bytes'])} (lower bound {_mb(memory['lower_bound_bytes'])}, "
              f"{len(memory['tensors'])} tensors; session.json \"memory\"); device "
              f"{_mb(memory['device_bytes'])} with weights in the plan's precisions")
    return 0


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def _compile_generator(args: argparse.Namespace) -> int:
    from paleozoic.codegen.generate import compile_generator

    problem = next((f"--generate does not take {flag}: the loop fixes the shapes from "
                    f"--prompt-length and --max-length" for flag, value in (
                        ("--emit raw", args.emit == "raw"), ("--calibration", args.calibration),
                        ("--input-shape", args.input_shape), ("--batch", args.batch),
                        ("--data-parallelism", args.data_parallelism)) if value),
                   None)
    if problem is None and not 1 <= args.prompt_length < args.max_length:
        problem = (f"--prompt-length {args.prompt_length} must be at least 1 and below "
                   f"--max-length {args.max_length}")
    if problem:
        print(f"paleozoic compile: error: {problem}", file=sys.stderr)
        return 2
    out = compile_generator(args.model, args.output, prompt_length=args.prompt_length,
                            max_length=args.max_length, plan=args.plan,
                            precision=args.precision, force=args.force)
    print(f"wrote {out}/ (generate.cpp, weights.bin, CMakeLists.txt, generate.json)")
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from paleozoic.pipeline import build_session
    from paleozoic.runner.sdk import built_sdk

    exe = build_session(args.output, sdk=args.sdk)
    print(f"built {exe} (SDK: {built_sdk(args.output)})")
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"needs a positive integer, got {text!r}")
    return value


def _cmd_verify(args: argparse.Namespace) -> int:
    from paleozoic.pipeline import build_session
    from paleozoic.accuracy.verify import (
        ATOL, FP32_FLOOR, RTOL, TRUTH_FACTOR, load_input_files, model_for, verify_session,
    )

    out = Path(args.output)
    if not (out / "session.json").is_file():
        raise ModelLoadError(f"{out}: no session.json; run `paleozoic compile` first")
    model = model_for(out, args.model)
    inputs = None
    if args.input:
        manifest = json.loads((out / "session.json").read_text())
        inputs = load_input_files(args.input, {i["onnx_name"]: tuple(i["shape"])
                                               for i in manifest["inputs"]},
                                  {i["onnx_name"]: i.get("dtype", "float32")
                                   for i in manifest["inputs"]})
    if not (out / "build" / "session").is_file():
        build_session(out)
    report = verify_session(out, model, args.seed, inputs, args.distribution, args.float64,
                            args.sessions)
    # Layers off the SDK library's fast kernels always show; the whole list with -v.
    if args.verbose or "slow paths" in report.kernels:
        for line in report.kernels.rstrip().splitlines():
            print(terminal_text(line))
    print(f"inputs: {report.inputs}")
    print(f"{'output':<28} {'shape':<20} {'max abs err':>12} {'max rel err':>12} "
          f"{'cosine':>10} {'SQNR dB':>8} {'top-1':>6}  result")
    for c in report.checks:
        result = "pass" if c.passed else "FAIL"
        if c.note:
            result += f" ({c.note})"
        top1 = "" if c.top1 is None else f"{c.top1:.0%}"
        print(f"{terminal_text(c.name):<28} {str(list(c.shape)):<20} {c.max_abs:>12.3e} "
              f"{c.max_rel:>12.3e} "
              f"{c.cosine:>10.7f} {c.sqnr_db:>8.1f} {top1:>6}  {result}")
    if report.concurrent:
        print(terminal_text(report.concurrent))
    if report.float64 == "run":
        print("against the float64 truth (max error / max |truth|):")
        for c in report.checks:
            print(f"  {terminal_text(c.name):<26} paleozoic {c.truth_error:.3e}   onnxruntime "
                  f"{c.ort_truth_error:.3e} (optimised) {c.ort_plain_truth_error:.3e} "
                  f"(unoptimised)")
    elif report.float64.startswith("unavailable"):
        print(f"float64 reference {report.float64}")
    if args.json:
        Path(args.json).write_text(report.to_json())
    if any(c.rule == "runtime" for c in report.checks):
        print(f"{'PASS' if report.passed else 'FAIL'}: reduced-precision session identical "
              f"to the runtime's run of its plan (accuracy reported, not judged: see "
              f"`paleozoic debug`)")
    else:
        print(f"{'PASS' if report.passed else 'FAIL'}: session vs onnxruntime (rtol {RTOL}, "
              f"atol {ATOL}), else error against float64 within {TRUTH_FACTOR:g}x "
              f"onnxruntime's or {FP32_FLOOR:.1e} of the largest value")
    return 0 if report.passed else 1


def _cmd_inspect(args: argparse.Namespace) -> int:
    import numpy as np

    from paleozoic.ops.sparsity import sparse_refusal, sparsity_of
    from paleozoic.ir import Model
    from paleozoic.ir.memory import plan_memory
    from paleozoic.ops import KINDS
    from paleozoic.pipeline import load_queue, resolve_plan

    queue = load_queue(args.model, **_shapes(args))

    def zeros(layer) -> str:
        # How sparse a pruned model's filters are (`paleozoic prune`, or torch.ao.pruning,
        # whose exports are dense tensors with zeros): all zeros, then zero output-channel
        # pairs, what the SDK's sparse mode skips.
        if "weight" not in layer.weights:
            return ""
        kind = KINDS[layer.kind]
        sparsity = sparsity_of(queue.weights[layer.weights["weight"]], kind.weight_channel_axis)
        if sparse_refusal(layer):
            return f"{sparsity.zeros:.0%}"
        return f"{sparsity.zeros:.0%} ({sparsity.pairs:.0%})"

    rows = []
    total_macs = total_params = 0
    for layer in queue.layers:
        kind = KINDS[layer.kind]
        ins = [queue.shape(name) for name in layer.inputs]
        out = queue.shape(layer.output)
        macs = kind.macs(layer.op.attrs, ins, out)
        params = sum(int(queue.weights[w].size) for w in layer.weights.values())
        total_macs += macs
        total_params += params
        out_bytes = int(np.prod(out)) * np.dtype(queue.tensors[layer.output].dtype).itemsize
        rows.append((layer.name, layer.kind, " ".join(str(list(s)) for s in ins),
                     str(list(out)), f"{out_bytes:,}", f"{macs:,}", f"{params:,}",
                     zeros(layer)))
    headers = ("layer", "kind", "inputs", "output", "output bytes", "MACs", "params",
               "zeros (pairs)")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    print(f"{len(queue.layers)} layers, {total_macs:,} MACs, {total_params:,} parameters")
    for plan in ("per-layer", "fuse-all"):
        memory = plan_memory(Model.build(queue, resolve_plan(queue, plan)))
        print(f"memory under {plan}: weights {_mb(memory.weights_bytes)}, arena "
              f"{_mb(memory.arena_bytes)} (lower bound {_mb(memory.lower_bound_bytes)})")
    return 0


def _cmd_prune(args: argparse.Namespace) -> int:
    import os
    import tempfile

    import onnx

    from paleozoic.errors import OutputExistsError
    from paleozoic.frontend.loader import load_onnx
    from paleozoic.frontend.prune import parse_sparsity, prune

    out = Path(args.output)
    if out.exists() and not args.force:
        raise OutputExistsError(f"{out}: exists; choose another file or pass --force to "
                                f"replace it")
    default, per_layer = parse_sparsity(args.sparsity)
    loaded = load_onnx(args.model)
    model, report = prune(loaded, default, per_layer, args.pattern)
    # Written beside the target and renamed: an interrupted write leaves no half a model.
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    try:
        onnx.save_model(model, tmp)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"{'layer':<40} {'op':<7} {'asked':>6} {'zeros before':>13} {'zeros after':>12} "
          f"{'zero pairs':>11}")
    for row in report:
        print(f"{row.target.node:<40} {row.target.op_type:<7} {row.sparsity:>6.2f} "
              f"{row.before.zeros:>12.1%} {row.after.zeros:>12.1%} {row.after.pairs:>11.1%}")
    print(f"{len(report)} layer(s) pruned ({args.pattern}); wrote {out}")
    return 0


def _cmd_space(args: argparse.Namespace) -> int:
    from paleozoic.optimize import SearchSpace
    from paleozoic.optimize.report import space_lines
    from paleozoic.pipeline import load_queue

    queue = load_queue(args.model, **_shapes(args))
    print("\n".join(space_lines(queue, SearchSpace.from_queue(queue))))
    return 0


def _parse_options(pairs: list[str]) -> dict[str, object]:
    import ast

    from paleozoic.errors import OptimizerError

    options: dict[str, object] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise OptimizerError(f"--option {pair!r}: expected KEY=VALUE, e.g. iterations=1000")
        try:
            options[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            options[key] = text
    return options


def _precisions_arg(text: str) -> tuple[object, ...]:
    from paleozoic.ir.plan import Precision
    from paleozoic.optimize.space import canonical_precisions

    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in {p.value for p in Precision}]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a comma-separated list of {', '.join(p.value for p in Precision)}")
    return canonical_precisions(names)


def _knobs_arg(text: str) -> frozenset[str]:
    from paleozoic.optimize.knobs import KNOBS

    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(names - set(KNOBS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a comma-separated list of {', '.join(KNOBS)}")
    return frozenset(names)




def _make_oracle(args: argparse.Namespace, queue: LayerQueue,
                 sparse: Collection[str] = (), data_parallelism: int = 1) -> CostOracle:
    from paleozoic.errors import OptimizerError

    if args.sdk != "mock" and args.cost != "measured":
        raise OptimizerError(f"--sdk {args.sdk} times blocks on that SDK; it needs --cost "
                             f"measured (the device model describes the mock's device)")
    if args.cost == "measured":
        if args.profile:
            raise OptimizerError("--profile describes the device model; it has no effect "
                                 "with --cost measured")
        from paleozoic.optimize.measured import MeasuredOracle

        if args.sdk == "mock":
            return MeasuredOracle(queue, sparse=sparse, data_parallelism=data_parallelism)
        # Wall-clock timings: medians of 5, and a table of every block up to 8 layers plus
        # the built-in plans' blocks (paleozoic.optimize.measured).
        return MeasuredOracle(queue, repeats=5, sdk=args.sdk, max_block=8, sparse=sparse,
                              data_parallelism=data_parallelism)
    try:
        from paleozoic.optimize.device_cost import DeviceModelOracle
    except ImportError as err:
        raise OptimizerError(f"the device model is not available ({err}); use --cost "
                             f"measured") from err
    return DeviceModelOracle(queue, profile=args.profile, sparse=sparse,
                             data_parallelism=data_parallelism)


def _cmd_tune(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from paleozoic.errors import OutputExistsError
    from paleozoic.optimize import SearchSpace, load_optimizer
    from paleozoic.optimize.knobs import refuse_knobs, tune_with_knobs
    from paleozoic.optimize.report import plan_table
    from paleozoic.pipeline import load_queue

    out = Path(args.output)
    if out.exists() and not args.force:
        raise OutputExistsError(f"{out}: exists; choose another file or pass --force to "
                                f"replace it")
    if args.accuracy_budget is not None:
        return _tune_for_accuracy(args, out)
    optimizer = load_optimizer(args.optimizer, seed=args.seed, budget_s=args.budget,
                               **_parse_options(args.option))
    queue = load_queue(args.model, **_shapes(args))

    def make_oracle(sparse: Collection[str], dp: int) -> CostOracle:
        return _make_oracle(args, queue, sparse, dp)

    refuse_knobs(args.knobs, make_oracle, wall_clock=args.cost == "measured"
                 and args.sdk != "mock")
    steps = 1000
    with tqdm(total=steps, desc=optimizer.name, unit="step", leave=False,
              bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining} "
              "{postfix}") as bar:
        def report(fraction: float, best_cost: float) -> None:
            done = min(steps, max(0, int(fraction * steps)))
            if best_cost == best_cost:  # not NaN
                bar.set_postfix_str(f"best {best_cost:,.1f} us", refresh=False)
            if done > bar.n:
                bar.update(done - bar.n)

        space = SearchSpace.from_queue(queue, report=report, precisions=args.precisions)
        tuned = tune_with_knobs(optimizer, queue, space, args.knobs, make_oracle,
                                profile=args.profile, precisions=args.precisions)
    plan, cost = tuned.plan, tuned.cost
    for line in tuned.lines:
        print(line)
    if args.cost == "measured" and args.sdk != "mock":
        # Wall-clock block costs misprice whole plans a little: the searched plan is kept
        # only if it leads the built-in ones as whole forwards (MeasuredOracle.confirm).
        from paleozoic.optimize.measured import CONFIRM_MARGIN

        searched = plan.strategy
        plan = cost.confirm(plan, mp=space.max_mp)
        timings = plan.notes.get("whole_plan_us", {})
        print("whole forwards on " + args.sdk + ": " + ", ".join(
            f"{name} {us / 1e3:.2f} ms" for name, us in timings.items()) +
            ("" if plan.strategy == searched else
             f"; {searched}'s plan does not lead {plan.strategy} by {CONFIRM_MARGIN:.0%}, "
             f"so {plan.strategy} is written"))
    out.write_text(plan.to_json())
    print("\n".join(plan_table(plan, queue, cost)))
    if "data_parallelism_us" in plan.notes:
        from paleozoic.optimize.report import data_parallelism_line

        print(data_parallelism_line(plan, queue))
    print(f"wrote {out} (re-emit with `paleozoic compile {args.model} --plan {out} -o DIR`)")
    return 0


def _accuracy_budget_arg(text: str) -> tuple[str, float]:
    metric, _, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if metric not in ("sqnr", "cosine", "top1") or not math.isfinite(number):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give METRIC=VALUE with METRIC sqnr (dB), cosine or top1 (agreement "
            f"with fp32, 0..1), e.g. sqnr=30")
    return metric, number


def _tune_for_accuracy(args: argparse.Namespace, out: Path) -> int:
    """tune --accuracy-budget: sensitivities on --data, exact search, held-out checks."""
    from paleozoic.accuracy.tune import RuntimeNoiseProbe, measure_sensitivities, \
        tune_for_accuracy
    from paleozoic.calibration.data import data_files, iter_batches
    from paleozoic.calibration.file import load_calibration
    from paleozoic.calibration.params import layer_quantization
    from paleozoic.optimize.report import plan_table
    from paleozoic.errors import BudgetError
    from paleozoic.optimize.knobs import (choose_sparse, knobs_after_accuracy,
                                          refuse_accuracy_knobs, refuse_knobs)
    from paleozoic.optimize.sensitivities import Sensitivities
    from paleozoic.ir.plan import Precision
    from paleozoic.pipeline import load_queue

    refuse_accuracy_knobs(args.knobs)
    if args.calibration is None or not args.data:
        raise PaleozoicError("--accuracy-budget needs --calibration CALIB.json and --data "
                             "PATH... (the inputs sensitivities are measured on)")
    queue = load_queue(args.model, **_shapes(args))
    quantization = layer_quantization(queue, load_calibration(args.calibration, queue),
                                      args.calibration)
    batches = [feeds for _, feeds in iter_batches(data_files(args.data), queue)]
    holdout = ([feeds for _, feeds in iter_batches(data_files(args.holdout), queue)]
               if args.holdout else batches)
    if args.sensitivities and Path(args.sensitivities).is_file():
        sensitivities = Sensitivities.load(args.sensitivities)
        print(f"read sensitivities from {args.sensitivities}")
    else:
        probe = RuntimeNoiseProbe(queue, quantization, batches)
        sensitivities = measure_sensitivities(queue, probe)
        if args.sensitivities:
            sensitivities.save(args.sensitivities)
        print(f"measured sensitivities: {probe.runs} runs on {len(batches)} batch(es)")
    def make_oracle(sparse: Collection[str], dp: int) -> CostOracle:
        return _make_oracle(args, queue, sparse, dp)

    refuse_knobs(args.knobs, make_oracle, wall_clock=args.cost == "measured"
                 and args.sdk != "mock")
    sparse, lines = choose_sparse(args.knobs, queue, args.profile,
                                  (Precision.FP32, Precision.FP16, Precision.INT8))
    cost = make_oracle(sparse, 1)
    metric, target = args.accuracy_budget
    try:
        result = tune_for_accuracy(queue, quantization, sensitivities, cost, metric, target,
                                   holdout)
    except ValueError as err:
        raise BudgetError(f"{args.model}: {err}; nothing written") from None
    tuned = knobs_after_accuracy(result.plan, queue, args.knobs, sparse, make_oracle,
                                 args.profile)
    for line in lines + tuned.lines:
        print(line)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(tuned.plan.to_json())
    tmp.replace(out)
    print("\n".join(plan_table(tuned.plan, queue, tuned.cost)))
    where = "held-out data" if args.holdout else "the --data batches (no --holdout given)"
    m = result.measured
    print(f"measured on {where}: SQNR {m.sqnr_db:.1f} dB, cosine {m.cosine:.6f}, top-1 "
          f"agreement {m.top1:.4f}; {len(result.tried)} candidate(s) run")
    print(f"wrote {out} (compile with `paleozoic compile {args.model} --plan {out} "
          f"--calibration {args.calibration} -o DIR`)")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from paleozoic.calibration import calibrate
    from paleozoic.calibration.file import write_calibration
    from paleozoic.pipeline import load_queue

    queue = load_queue(args.model, **_shapes(args))
    record = calibrate(queue, args.data, method=args.method, percentile=args.percentile,
                       model=Path(args.model).name)
    out = Path(args.output)
    write_calibration(out, record)
    print(f"wrote {out}: {args.method} ranges of {len(record['activations'])} tensors and "
          f"per-channel ranges of {len(record['weights'])} weights, from "
          f"{len(record['data'])} file(s)")
    return 0


def _cmd_debug(args: argparse.Namespace) -> int:
    from paleozoic.accuracy.debug import (
        Budget, fix_plan, load_folder, measure, report_lines, write_plan_atomic,
        write_text_atomic,
    )
    from paleozoic.accuracy.debug.data import load_batches
    from paleozoic.accuracy.debug.onnx_tensors import OnnxReference
    from paleozoic.errors import BudgetError, OutputExistsError

    budget = None
    if args.budget_sqnr is not None:
        budget = Budget("sqnr", args.budget_sqnr)
    elif args.budget_cosine is not None:
        budget = Budget("cosine", args.budget_cosine)
    # Every check that can refuse comes before the (long) runs, and nothing is written
    # until everything has succeeded.
    for flag, target in (("--fix", args.fix), ("--json", args.json)):
        if target is None:
            continue
        if Path(target).exists() and not args.force:
            raise OutputExistsError(f"{flag} {target}: exists; choose another file or pass "
                                    f"--force to replace it")
        if not Path(target).resolve().parent.is_dir():
            raise OutputExistsError(f"{flag} {target}: its folder does not exist")
    if args.fix and budget is None:
        raise BudgetError("--fix needs a budget: --budget-sqnr DB or --budget-cosine X")
    folder = load_folder(args.output, args.model)
    batches, source = load_batches(folder, args.data, args.seed)
    report = measure(folder, batches, source, jump_db=args.jump_db, budget=budget)
    print("\n".join(report_lines(report, all_layers=args.layers)))
    fixed = None
    if args.fix:
        reference = OnnxReference(folder.model, folder.queue, only=folder.queue.outputs)
        truths = [reference.run(feeds) for feeds in batches]
        fixed = fix_plan(folder, report, batches, truths, budget)
    if args.json:
        data = report.to_dict()
        if fixed is not None:
            data["fix"] = {"plan": str(args.fix), "moves": fixed.moves,
                           "outputs": fixed.outputs, "runs": fixed.runs}
        write_text_atomic(args.json, json.dumps(data, indent=2) + "\n")
    if fixed is not None:
        write_plan_atomic(args.fix, fixed.plan)
        moves = "; ".join(fixed.moves) or "none needed, the plan already meets it"
        print(f"fix for {budget.text()}: {moves}")
        print(f"wrote {args.fix} (re-emit with `paleozoic compile MODEL --plan {args.fix} "
              f"-o DIR`)")
    return 0


_DEBUG_HELP = """\
Runs the session folder's model through the runtime exactly as plan.json says
(blocks, fusion, MP, precision) beside onnxruntime's fp32 tensors, on your data or
one seeded standard-normal batch. Per block: SQNR in dB, 20 log10(||x|| / ||x - x'||),
and cosine similarity of the tensors leaving it. Per layer: the same from a second
run with every layer compiled alone at its planned precision, with the ONNX node(s)
it comes from (a layer a pass merged from several nodes names them all, in graph
order). Figures are pooled over all batches: sums over every element of every
batch, one ratio.

The first jump: SQNRs are capped at %(ceiling)g dB (two fp32 implementations differ
above it); a block's drop is the lowest SQNR of the tensors it reads (graph inputs
count as exact) minus the lowest of those it writes; the first jump is the first
block in plan order whose drop exceeds --jump-db (default %(jump)g dB). With a budget
the first block below it is named too. Exits 0 whatever the numbers; --fix exits 10
when no plan can meet the budget, writing nothing.
"""


def _paragraphs(text: str, width: int = 78) -> str:
    """Blank-line separated paragraphs, each filled to `width` (argparse's own formatter
    would run them into one)."""
    import textwrap

    return "\n\n".join(textwrap.fill(" ".join(par.split()), width)
                       for par in text.strip().split("\n\n"))


def _cmd_prefix(args: argparse.Namespace) -> int:
    from paleozoic.pipeline import runtime_prefix

    print(runtime_prefix())
    return 0


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _cmd_bench(args: argparse.Namespace) -> int:
    from paleozoic.bench import bench, resolve_configs
    from paleozoic.runner.sdk import sdk_available

    sdks = _csv(args.sdk)
    try:
        configs = resolve_configs(sdks, _csv(args.plan), _csv(args.precision))
    except ValueError as err:
        raise PlanMismatchError(str(err)) from None
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise PaleozoicError("--plot needs matplotlib: pip install 'paleozoic[eval]', or "
                             "leave --plot out")
    missing = [sdk for sdk in sdks if not sdk_available(sdk)]
    if missing:
        fix = ("pip install 'paleozoic[onednn]' (README, oneDNN SDK), or bench --sdk mock"
               if missing[0] == "onednn" else "install Paleozoic with `pip install .`, which "
               "builds the runtime extension")
        raise BuildError(f"the {missing[0]} SDK is not built: {fix}")
    report = bench(args.model, configs, threads=args.threads, repeat=args.repeat,
                   rounds=args.rounds, min_turn_ms=args.min_turn_ms, seed=args.seed,
                   calibration=args.calibration, show_progress=sys.stderr.isatty(), **_shapes(args))
    print(report.table())
    if args.json:
        Path(args.json).write_text(report.to_json())
    if args.plot:
        report.plot(args.plot)
    return 0


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paleozoic", description="ONNX -> hand-editable C++ inference sessions over a "
        "CNML-style accelerator SDK (built and run here on the CPU mock SDK).")
    parser.add_argument("--version", action="version", version=f"paleozoic {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="emit a C++ session from an ONNX model")
    p.add_argument("model", help="the .onnx file")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--plan", default="per-layer",
                   help="per-layer, fuse-all, or a plan.json (default: per-layer)")
    p.add_argument("--force", action="store_true", help="replace a non-empty output folder")
    p.add_argument("--emit", choices=("wrapper", "raw"), default="wrapper",
                   help="wrapper: the session over the runtime wrapper (default); raw: the "
                        "same session as direct CNML/CNRT calls, for comparison")
    p.add_argument("--precision", choices=("fp32", "fp16", "int8"), default=None,
                   help="what every block computes in (default: the plan's own precisions, "
                        "fp32 for the built-in plans); int8 needs --calibration")
    p.add_argument("--calibration", metavar="CALIB.json",
                   help="a file made by `paleozoic calibrate` for this model: its int8 "
                        "parameters go into weights.bin, so any block may be int8")
    p.add_argument("--data-parallelism", type=int, default=None, metavar="N",
                   help="every forward runs the batch as N groups of frames at once, each on "
                        "its block's MP cores (MLU100 data parallelism); blocks' MPs are "
                        "lowered to 32 / N where above it, and N must divide the batch "
                        "(default: the plan's own, 1 for the built-in plans)")
    p.add_argument("--profile", metavar="FILE",
                   help="device profile whose memory (dram_bytes) the session's weights and "
                        "arena must fit (default: the bundled MLU-100's, 8 GB)")
    p.add_argument("--generate", action="store_true",
                   help="a decoder LM exported with a KV cache (input_ids, attention_mask, "
                        "position_ids, past_* in; logits, present_* out): emit a C++ "
                        "generation loop (generate.cpp) over a prefill and a decode-step "
                        "session instead of one session")
    p.add_argument("--prompt-length", type=int, default=16, metavar="N",
                   help="--generate: tokens the prefill session takes at once (default 16)")
    p.add_argument("--max-length", type=int, default=128, metavar="N",
                   help="--generate: KV cache slots, prompt and new tokens (default 128)")
    _add_shape_options(p)
    p.set_defaults(func=_cmd_compile)

    p = sub.add_parser("build", help="build an emitted session with cmake and g++")
    p.add_argument("output", help="folder written by `paleozoic compile`")
    p.add_argument("--sdk", choices=SDKS, default=None,
                   help="SDK to compute with: the CPU mock or oneDNN (needs the onednn "
                        "extra); default: the one OUT was built for before, else mock. "
                        "verify and run use the SDK of the build")
    p.set_defaults(func=_cmd_build)

    p = sub.add_parser("verify", help="run a session on a seeded input, compare with "
                       "onnxruntime (builds it if needed)")
    p.add_argument("output", help="folder written by `paleozoic compile`")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated input")
    p.add_argument("--distribution", choices=("normal", "uniform"), default="normal",
                   help="generated input values: standard normal (default) or uniform "
                        "in [0, 1)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="your own data for input NAME (repeatable), or a folder of "
                        "NAME.npy files; replaces the generated input")
    p.add_argument("--float64", action="store_true",
                   help="also measure every output against a float64 evaluation of the "
                        "model (done anyway where onnxruntime disagrees)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--model", help="the ONNX model (default: the one it was compiled from)")
    p.add_argument("--sessions", type=_positive_int, default=1, metavar="N",
                   help="also run N sessions at once over the compiled model, each checked "
                        "against the serial run bit for bit (the session's -s)")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("inspect", help="print the layer queue of a model")
    p.add_argument("model", help="the .onnx file")
    _add_shape_options(p)
    p.set_defaults(func=_cmd_inspect)

    p = sub.add_parser("prune", help="zero the smallest weights of convolutions and fully "
                       "connected layers, for the SDK's sparse mode; write a new .onnx")
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--sparsity", required=True, metavar="S|LAYER=S,...",
                   help="fraction of weights (pairs) to zero: one value for every layer, "
                        "LAYER=S for one node (by ONNX node name), or both, comma separated")
    p.add_argument("--pattern", choices=["pairs", "unstructured"], default="pairs",
                   help="pairs: output channels 2i and 2i+1 zeroed together at each input "
                        "channel and kernel position, as Cambricon's tools prune for the "
                        "MLU100's sparse mode (default); unstructured: single weights")
    p.add_argument("-o", "--output", required=True, help="the pruned .onnx to write")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.set_defaults(func=_cmd_prune)

    p = sub.add_parser("space", help="size of the plan search space (paper Eq. 3) for a model")
    p.add_argument("model", help="the .onnx file")
    _add_shape_options(p)
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
    p.add_argument("--sdk", choices=SDKS, default="mock",
                   help="with --cost measured: the SDK whose runs are timed (onednn: real "
                        "wall-clock time of oneDNN primitives on MP threads)")
    p.add_argument("--precisions", type=_precisions_arg, default=_precisions_arg("fp32"),
                   metavar="LIST", help="precisions a block may compute in, e.g. "
                   "fp32,fp16,int8; the optimizer picks one per block for speed (default: "
                   "fp32). The cost oracle must price them")
    p.add_argument("-O", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the optimizer, e.g. -O iterations=20000 (repeatable)")
    p.add_argument("--knobs", type=_knobs_arg, default=frozenset(), metavar="LIST",
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
    p.add_argument("--accuracy-budget", type=_accuracy_budget_arg, metavar="METRIC=VALUE",
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
    _add_shape_options(p)
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser("calibrate", help="activation and weight ranges for int8, from the fp32 "
                       "model run on your data; write calib.json")
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--data", nargs="+", required=True, metavar="PATH",
                   help=".npy files (one input), .npz files (one array per input name) or "
                        "folders of them; each file is one batch of the model's input shape")
    p.add_argument("-o", "--output", default="calib.json", help="the calibration file")
    p.add_argument("--method", choices=("absmax", "percentile", "entropy"), default="absmax",
                   help="absmax (Cambricon's own, default), percentile, or entropy (KL, as "
                        "TensorRT and ncnn)")
    p.add_argument("--percentile", type=float, default=99.99,
                   help="for --method percentile: the share of |x| kept (default 99.99)")
    _add_shape_options(p)
    p.set_defaults(func=_cmd_calibrate)

    from paleozoic.accuracy.debug.analyse import CEILING_DB, JUMP_DB

    p = sub.add_parser("debug", help="where a session's numbers part from onnxruntime's: "
                       "SQNR and cosine per block and layer, by ONNX node; --fix writes a "
                       "plan that meets a budget",
                       description=_paragraphs(_DEBUG_HELP % {"ceiling": CEILING_DB,
                                                              "jump": JUMP_DB}),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("output", help="folder written by `paleozoic compile`")
    p.add_argument("--data", nargs="+", metavar="PATH",
                   help=".npy files (one input), .npz files (one array per input name) or "
                        "folders of them; each file is one batch of the session's input shape")
    p.add_argument("--seed", type=int, default=0,
                   help="without --data: one standard-normal batch from this seed (default 0)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--budget-sqnr", type=float, metavar="DB",
                        help="accuracy budget: every graph output's SQNR at least DB")
    budget.add_argument("--budget-cosine", type=float, metavar="X",
                        help="accuracy budget: every graph output's cosine at least X")
    p.add_argument("--jump-db", type=float, default=JUMP_DB, metavar="DB",
                   help=f"the drop that makes a jump (default {JUMP_DB:g})")
    p.add_argument("--layers", action="store_true",
                   help="show every block's layers (default: the first jump's and the first "
                        "block below budget's only)")
    p.add_argument("--fix", metavar="FIXED_PLAN.json",
                   help="with a budget: write a plan meeting it on the data, moving the fewest "
                        "layers to a higher precision or out of their fused block")
    p.add_argument("--json", metavar="REPORT.json", help="write the report as JSON")
    p.add_argument("--force", action="store_true", help="replace existing --fix/--json files")
    p.add_argument("--model", help="the ONNX model (default: the one it was compiled from)")
    p.set_defaults(func=_cmd_debug)

    p = sub.add_parser("bench", help="latency, memory and accuracy of a model's sessions per "
                       "SDK, plan and precision, beside onnxruntime, in one run")
    p.add_argument("model", nargs="+", help="one or more .onnx files")
    p.add_argument("--sdk", default="mock,onednn" if "onednn" in SDKS else "mock",
                   help="comma-separated SDKs (default: mock,onednn)")
    p.add_argument("--plan", default="per-layer,fuse-all",
                   help="comma-separated plans: per-layer, fuse-all, plan.json files")
    p.add_argument("--precision", default="fp32", help="comma-separated: fp32, fp16, int8 "
                   "(int8 needs --calibration)")
    p.add_argument("--calibration", metavar="CALIB.json", help="int8 parameters (one model)")
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
    _add_shape_options(p)
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("prefix", help="print the runtime's CMake prefix (CMAKE_PREFIX_PATH)")
    p.set_defaults(func=_cmd_prefix)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except PaleozoicError as err:
        print(f"paleozoic {args.command}: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
