"""The `paleozoic` commands about a session's numbers: calibrate, which records the int8
ranges of a model run on your data, and debug, which finds where a session's tensors part
from onnxruntime's and can write a plan meeting an accuracy budget. The library is
imported inside the handlers, so `paleozoic --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from paleozoic.cli.args import add_shape_options, paragraphs, shapes


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from paleozoic.calibration import calibrate
    from paleozoic.calibration.file import write_calibration
    from paleozoic.pipeline import load_queue

    queue = load_queue(args.model, **shapes(args))
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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds calibrate and debug."""
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
    add_shape_options(p)
    p.set_defaults(func=_cmd_calibrate)

    from paleozoic.accuracy.debug.analyse import CEILING_DB, JUMP_DB

    p = sub.add_parser("debug", help="where a session's numbers part from onnxruntime's: "
                       "SQNR and cosine per block and layer, by ONNX node; --fix writes a "
                       "plan that meets a budget",
                       description=paragraphs(_DEBUG_HELP % {"ceiling": CEILING_DB,
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
