"""int8 on the oneDNN SDK beside onnxruntime's own static int8 (issue 23's int8 goal):
for each model, calibration data drawn like `bench`'s input (seeded standard-normal images,
token ids inside the embedding table and all-ones masks; other seeds than the timed input),
`paleozoic calibrate` (absmax), then one `paleozoic bench` run per model with onnxruntime
fp32, onnxruntime's static int8 (QDQ, per-channel, calibrated on the same files), and the
oneDNN SDK's fuse-all fp32 and int8, in interleaved rounds. Accuracy is against
onnxruntime fp32 on the timed input. Not a test: run it on an otherwise idle machine.

    python benchmarks/int8_bench.py /work/exported/torch /work/exported/seq \
        [--models resnet50,mobilenet_v2,distilbert,bert] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

from acceptance_bench import shapes_for  # the exports' static shapes, in one place
from paleozoic.bench import BenchReport, bench, resolve_configs
from paleozoic.accuracy.inputs import random_inputs

DEFAULT_MODELS = "resnet50,mobilenet_v2,distilbert,bert"


def calibration_file(path: Path, shapes: dict[str, tuple[int, ...]] | None, folder: Path,
                     batches: int) -> Path:
    """A calibration record of `path` made from `batches` seeded inputs saved in `folder`,
    by `paleozoic calibrate` in its own process, as a user makes one (the timed process
    then holds nothing of the calibration run)."""
    model = onnx.load(str(path), load_external_data=False)
    data = folder / "data"
    data.mkdir(parents=True)
    for k in range(batches):
        np.savez(data / f"{k:02d}.npz", **random_inputs(model, 100 + k, shapes))
    out = folder / "calibration.json"
    shape_args = [a for name, shape in (shapes or {}).items()
                  for a in ("--input-shape", f"{name}={'x'.join(map(str, shape))}")]
    subprocess.run([sys.executable, "-m", "paleozoic", "calibrate", str(path), "--data",
                    str(data), "-o", str(out), *shape_args], check=True, cwd=folder,
                   stdout=subprocess.DEVNULL)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--models", default=DEFAULT_MODELS,
                        help="comma-separated file-name stems' prefixes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--min-turn-ms", type=float, default=50.0)
    parser.add_argument("--batches", type=int, default=8, help="calibration batches")
    parser.add_argument("--json", help="write the figures as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    configs = resolve_configs(["onednn"], ["fuse-all"], ["fp32", "int8"])
    wanted = args.models.split(",")
    models = sorted(p for folder in args.folders for p in folder.glob("*.onnx")
                    if any(p.stem.startswith(w + "_op") for w in wanted))
    total = BenchReport(args.threads, args.repeat, args.rounds,
                        min_turn_ms=args.min_turn_ms)
    rows = []
    for path in models:
        shapes = shapes_for(path)
        with tempfile.TemporaryDirectory(prefix="pz-int8-") as tmp:
            calib = calibration_file(path, shapes, Path(tmp), args.batches)
            report = bench([path], configs, threads=args.threads, repeat=args.repeat,
                           rounds=args.rounds, min_turn_ms=args.min_turn_ms,
                           calibration=calib, input_shapes=shapes)
        print(report.table().split("\n", 2)[2], flush=True)
        total.models += report.models
        for m in report.models:
            by = {r.config: r for r in m.results}
            ours = next(r for r in m.results if r.precision == "int8" and r.sdk == "onednn")
            peer = by["onnxruntime int8 (QDQ)"]
            rows.append((path.stem, m.ort_median_ms, peer.median_ms, peer.sqnr_db,
                         ours.median_ms, ours.sqnr_db, ours.median_ms / peer.median_ms))
    print("\nmodel                     ort fp32  ort int8 (SQNR)     onednn int8 (SQNR)  "
          "vs ort int8")
    for stem, fp32, peer, peer_db, ours, ours_db, ratio in rows:
        print(f"{stem:<24} {fp32:8.2f}  {peer:8.2f} ({peer_db:5.1f})  {ours:8.2f} "
              f"({ours_db:5.1f})     {ratio:5.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(json.loads(total.to_json()), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
