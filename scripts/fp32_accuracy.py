"""fp32 accuracy of emitted sessions against a float64 truth, beside onnxruntime's.

For each model (a zoo name such as resnet50, or an .onnx file / folder of them): compile
(per-layer plan by default), build, and run on seeded inputs, uniform [0, 1) and standard
normal, seeds 0..N-1; every output of Paleozoic, onnxruntime optimised and onnxruntime
unoptimised is measured against the float64 evaluation (paleozoic.accuracy.truth) as
max |error| / max |truth|. A model passes when on every run and output Paleozoic's error is
at most 2x the larger of onnxruntime's two (plus one fp32 rounding at the output's scale),
the bar of `paleozoic verify`.

    python scripts/fp32_accuracy.py resnet50 squeezenet /work/exported/torch \\
        --seeds 5 -o benchmarks/results/fp32_accuracy.md --json acc.json

Not a test: it prints figures. Needs onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import onnx

from paleozoic.errors import PaleozoicError
from paleozoic.frontend.prepare import parse_shape
from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.zoo import ZOO_MODELS, load_zoo_model
from paleozoic.accuracy.inputs import random_inputs
from paleozoic.accuracy.verify import TRUTH_FACTOR, ULP, onnxruntime_session, truth_error


@dataclass
class Run:
    distribution: str
    seed: int
    output: str
    ours: float
    ort: float
    ort_plain: float

    @property
    def ratio(self) -> float:
        return self.ours / max(self.ort, self.ort_plain, ULP)

    @property
    def passed(self) -> bool:
        return self.ours <= TRUTH_FACTOR * max(self.ort, self.ort_plain) + ULP


@dataclass
class ModelResult:
    name: str
    plan: str
    runs: list[Run] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0


def _models(specs: list[str]) -> list[tuple[str, Path | None]]:
    found: list[tuple[str, Path | None]] = []
    for spec in specs or list(ZOO_MODELS):
        path = Path(spec)
        if spec in ZOO_MODELS:
            found.append((spec, None))
        elif path.is_dir():
            found += [(p.stem, p) for p in sorted(path.rglob("*.onnx"))]
        elif path.is_file():
            found.append((path.stem, path))
        else:
            sys.exit(f"{spec}: neither a zoo model ({', '.join(ZOO_MODELS)}) nor an .onnx "
                     f"file or folder")
    return found


def measure_model(name: str, path: Path | None, plan: str, seeds: int, work: Path,
                  shapes: dict[str, tuple[int, ...]]) -> ModelResult:
    result = ModelResult(name, plan)
    start = time.perf_counter()
    model = load_zoo_model(name) if path is None else onnx.load(str(path))
    out = work / name
    try:
        compile_model(model if path is None else path, out, plan=plan, force=True,
                      input_shapes=shapes or None)
        build_session(out)
    except PaleozoicError as err:
        result.error = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        return result
    manifest = json.loads((out / "session.json").read_text())
    input_shapes = {i["onnx_name"]: tuple(i["shape"]) for i in manifest["inputs"]}
    if path is not None:
        from paleozoic.frontend.prepare import fix_input_shapes

        fix_input_shapes(model, name, input_shapes)
    truth_model = Float64Reference(model)
    optimised = onnxruntime_session(model)
    plain = onnxruntime_session(model, optimize=False)
    names = [o["onnx_name"] for o in manifest["outputs"]]
    for distribution in ("uniform", "normal"):
        for seed in range(seeds):
            feeds = random_inputs(model, seed, input_shapes, distribution)
            ours = run_session(out, list(feeds.values())).outputs
            truths = truth_model.run(feeds)
            a, b = optimised.run(None, feeds), plain.run(None, feeds)
            for i, output in enumerate(names):
                result.runs.append(Run(distribution, seed, output,
                                       truth_error(ours[i], truths[i]),
                                       truth_error(a[i], truths[i]),
                                       truth_error(b[i], truths[i])))
    shutil.rmtree(out, ignore_errors=True)
    result.seconds = time.perf_counter() - start
    return result


def markdown(results: list[ModelResult], seeds: int) -> str:
    lines = [
        f"Error against float64 = max |y - y64| / max |y64| per output; worst over "
        f"{seeds} seeds for each input distribution. Verdict: every run within "
        f"{TRUTH_FACTOR:g}x the larger onnxruntime error (+ 2^-23).", "",
        "| model | plan | inputs | Paleozoic | onnxruntime opt | onnxruntime unopt | "
        "worst ratio | verdict |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        if r.error:
            lines.append(f"| {r.name} | {r.plan} | | | | | | ERROR: {r.error} |")
            continue
        for distribution in ("uniform", "normal"):
            runs = [x for x in r.runs if x.distribution == distribution]
            worst = max(runs, key=lambda x: x.ratio)
            lines.append(
                f"| {r.name} | {r.plan} | {distribution} | {max(x.ours for x in runs):.2e} | "
                f"{max(x.ort for x in runs):.2e} | {max(x.ort_plain for x in runs):.2e} | "
                f"{worst.ratio:.2f} (seed {worst.seed}) | "
                f"{'ok' if all(x.passed for x in runs) else 'WORSE'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=[],
                        help="zoo names, .onnx files or folders (default: the nine zoo models)")
    parser.add_argument("--plan", default="per-layer",
                        help="plan(s) to compile with, comma separated (e.g. per-layer,fuse-all)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--input-shape", action="append", default=[], type=parse_shape,
                        help="NAME=1x3x224x224 for symbolic inputs (all models)")
    parser.add_argument("--kinds", action="store_true",
                        help="also measure each layer kind alone on adversarial inputs "
                             "(paleozoic_testing.precision) and print that table first")
    parser.add_argument("-o", "--output", help="write the markdown table here")
    parser.add_argument("--json", help="write every run as JSON here")
    args = parser.parse_args(argv)
    shapes = dict(args.input_shape)
    results = []
    kinds_table = ""
    if args.kinds:
        from paleozoic_testing.precision import kind_cases, markdown_table, measure

        with tempfile.TemporaryDirectory(prefix="pz-kinds-") as tmp:
            kinds_table = ("## Layer kinds alone, adversarial inputs\n\n" +
                           markdown_table(measure(kind_cases(0), Path(tmp) / "session")) +
                           "\n\n## Whole models\n\n")
        print(kinds_table, flush=True)
    with tempfile.TemporaryDirectory(prefix="pz-acc-") as tmp:
        for name, path in _models(args.models):
            for plan in args.plan.split(","):
                r = measure_model(name, path, plan, args.seeds, Path(tmp), shapes)
                results.append(r)
                status = r.error or ("ok" if all(x.passed for x in r.runs) else
                                     f"WORSE (worst ratio {max(x.ratio for x in r.runs):.2f})")
                print(f"{name} {plan}: {status} ({r.seconds:.0f} s)", flush=True)
    table = kinds_table + markdown(results, args.seeds)
    print(table)
    if args.output:
        Path(args.output).write_text(table)
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{**asdict(r), "runs": [asdict(x) for x in r.runs]} for r in results], indent=1))
    return 0 if all(not r.error and all(x.passed for x in r.runs) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
