"""The exporter acceptance set on the oneDNN SDK beside onnxruntime: `paleozoic bench` over
every exported model that compiles (scripts/export_torchvision.py, export_sequence.py,
export_paddle.py, export_families.py and the PP-OCR networks of the rapidocr wheel), with
the static shapes symbolic inputs need (a model's NAME.options beside it: its
--input-shape and --input-value options). Prints bench's table per model and, at the end,
the best built-in plan of each model with its ratio, the geometric mean and the models
above 1.3x. Not a test: figures depend on the machine; run it on an otherwise idle one.

    python benchmarks/acceptance_bench.py /work/exported/torch /work/exported/seq \
        /work/exported/paddle [--sdk onednn] [--threads 2] [--repeat 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
from pathlib import Path

from paleozoic.bench import BenchReport, bench, geomean, resolve_configs
from paleozoic.errors import PaleozoicError

# Static shapes for the symbolic inputs of the exports (file stem prefix -> NAME -> shape).
SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "bert": {"input_ids": (1, 32), "attention_mask": (1, 32)},
    "distilbert": {"input_ids": (1, 32), "attention_mask": (1, 32)},
    "lstm": {"input": (1, 50, 40)},
    "gru": {"input": (50, 1, 40)},
    "ch_PP-OCRv4_det": {"x": (1, 3, 320, 320)},
    "ch_PP-OCRv4_rec": {"x": (1, 3, 48, 320)},
    "ch_ppocr_mobile_v2.0_cls": {"x": (1, 3, 48, 192)},
}


def shapes_for(path: Path) -> dict[str, tuple[int, ...]] | None:
    for prefix, shapes in SHAPES.items():
        if path.stem.startswith(prefix):
            return shapes
    return None


def own_options(path: Path) -> dict[str, dict]:
    """The --input-shape, --input-value and --outputs options in NAME.options beside it
    (scripts/export_families.py writes them; scripts/exporter_acceptance.py reads them too),
    as bench's input_shapes, input_values and outputs."""
    from paleozoic.frontend.prepare import parse_shape, parse_value

    options = path.with_suffix(".options")
    words = shlex.split(options.read_text()) if options.is_file() else []
    found: dict[str, dict] = {"input_shapes": {}, "input_values": {}, "outputs": []}
    for flag, value in zip(words[::2], words[1::2]):
        if flag == "--input-shape":
            name, shape = parse_shape(value)
            found["input_shapes"][name] = shape
        elif flag == "--input-value":
            name, values = parse_value(value)
            found["input_values"][name] = values
        elif flag == "--outputs":
            found["outputs"] = value.split(",")
        else:
            raise SystemExit(f"{options}: {flag} is not an option this benchmark passes on")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--sdk", default="onednn")
    parser.add_argument("--plan", default="per-layer,fuse-all")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--min-turn-ms", type=float, default=50.0)
    parser.add_argument("--only", default="", help="comma-separated file-name substrings")
    parser.add_argument("--json", help="write every model's figures as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    configs = resolve_configs(args.sdk.split(","), args.plan.split(","), ["fp32"])
    models = sorted(p for folder in args.folders for p in folder.glob("*.onnx")
                    if not args.only or any(s in p.name for s in args.only.split(",")))
    total = BenchReport(args.threads, args.repeat, args.rounds,
                        min_turn_ms=args.min_turn_ms)
    refused: dict[str, str] = {}
    for path in models:
        try:
            own = own_options(path)
            report = bench([path], configs, threads=args.threads, repeat=args.repeat,
                           rounds=args.rounds, min_turn_ms=args.min_turn_ms,
                           input_shapes=own["input_shapes"] or shapes_for(path),
                           input_values=own["input_values"] or None,
                           outputs=own["outputs"] or None)
        except PaleozoicError as err:
            refused[path.name] = str(err).splitlines()[0][:160]
            print(f"{path.name}: refused: {refused[path.name]}", flush=True)
            continue
        print(report.table().split("\n", 2)[2], flush=True)
        total.models += report.models
    print()
    print(total.table())
    sdk = args.sdk.split(",")[-1]
    best = total.best(sdk)
    if best:
        print(f"\n{sdk}, best built-in plan per model (ratio to onnxruntime):")
        for name, r in sorted(best.items(), key=lambda kv: -kv[1].ratio):
            print(f"  {Path(name).name:<44} {r.config:<22} {r.ratio:6.2f}x")
        geo = geomean(r.ratio for r in best.values())
        slow = [Path(n).name for n, r in best.items() if r.ratio > 1.3]
        print(f"geometric mean {geo:.2f}x over {len(best)} models; above 1.3x: "
              f"{len(slow)} ({', '.join(slow) or 'none'}); refused: {len(refused)}")
    if args.json:
        data = json.loads(total.to_json())
        data["refused"] = refused
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
