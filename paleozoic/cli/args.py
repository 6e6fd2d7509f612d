"""The argument helpers the `paleozoic` subcommands share: argparse types that turn option
text into values (shapes, constant inputs, tensor names, precisions, knobs, accuracy
budgets, positive integers), the shape options several commands take and the keyword
arguments they become, optimizer options, and small formatting helpers for what the
commands print. Imports of the library happen inside the functions, so building the parser
for `paleozoic --help` stays fast.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from paleozoic.errors import OutputExistsError


def _shape_arg(text: str) -> tuple[str, tuple[int, ...]]:
    from paleozoic.frontend.prepare import parse_shape

    try:
        return parse_shape(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


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


def add_shape_options(p: argparse.ArgumentParser) -> None:
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


def add_farm_options(p: argparse.ArgumentParser, work: str, workers: str,
                     simulate: bool = False) -> None:
    """--workers / --ray (and --simulate-boards): the farm of boards `work` runs on
    (paleozoic.farm; docs/tuning-farm.md). `workers` says what N may be."""
    farm = p.add_mutually_exclusive_group()
    farm.add_argument("--workers", type=int, metavar="N",
                      help=f"{work} on a local Ray cluster of N boards (pip install "
                           f"'paleozoic[ray]'); {workers}")
    farm.add_argument("--ray", metavar="ADDRESS",
                      help=f"{work} on the boards of the Ray cluster at ADDRESS (hosts "
                           f"started with --resources '{{\"pz_board\": 1}}'; 'auto': the "
                           f"cluster started on this host; a cluster with token "
                           f"authentication needs RAY_AUTH_MODE=token and its token)")
    if simulate:
        farm.add_argument("--simulate-boards", type=int, metavar="N",
                          help="with --cost measured --sdk mock: answer from the kept "
                               "timings (--measurements) or the device model, and report "
                               "how long N boards would take")


def shapes(args: argparse.Namespace) -> dict[str, object]:
    values = dict(args.input_value)
    return {"input_shapes": dict(args.input_shape), "batch": args.batch,
            **({"input_values": values} if values else {}),
            **({"outputs": args.outputs} if args.outputs else {})}


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"needs a positive integer, got {text!r}")
    return value


def parse_options(pairs: list[str]) -> dict[str, object]:
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


def precision_names() -> list[str]:
    """What a block may compute in, as plan.json and the CLI spell it (Precision)."""
    from paleozoic.ir.plan import Precision

    return [p.value for p in Precision]


def precisions_arg(text: str) -> tuple[object, ...]:
    from paleozoic.optimize.space import canonical_precisions

    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in precision_names()]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a comma-separated list of {', '.join(precision_names())}")
    return canonical_precisions(names)


def knobs_arg(text: str) -> frozenset[str]:
    from paleozoic.optimize.knobs import KNOBS

    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(names - set(KNOBS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a comma-separated list of {', '.join(KNOBS)}")
    return frozenset(names)


def accuracy_budget_arg(text: str) -> tuple[str, float]:
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


def csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def paragraphs(text: str, width: int = 78) -> str:
    """Blank-line separated paragraphs, each filled to `width` (argparse's own formatter
    would run them into one)."""
    import textwrap

    return "\n\n".join(textwrap.fill(" ".join(par.split()), width)
                       for par in text.strip().split("\n\n"))


def new_output(path: str, force: bool) -> Path:
    """The file a command writes: OutputExistsError when it exists and --force is not given."""
    out = Path(path)
    if out.exists() and not force:
        raise OutputExistsError(f"{out}: exists; choose another file or pass --force to "
                                f"replace it")
    return out
