"""Vertical-slice figures for the nine classic CNNs, and for exported sequence and
transformer models, measured side by side in one run.

For each model: codegen seconds (after imports), cmake-configure and g++ seconds of the
emitted session (runtime prebuilt), emitted lines of code, the session's run time on the
mock SDK beside onnxruntime's on the same thread count, and their ratio. Not a test.

    python benchmarks/vertical_slice.py [--models resnet50 vgg19 ...] [--plan fuse-all]
        [--exports DIR]

--exports DIR adds the models of SEQUENCE_EXPORTS found in DIR, as
scripts/export_sequence.py writes them (BERT-base, ViT-B/16, the LSTM classifier; they are
not generated here: exporting them needs torch and transformers), at the input shapes
given there (the sequence axes are symbolic in the files).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from paleozoic.pipeline import compile_model, runtime_prefix
from paleozoic.accuracy.verify import onnxruntime_session
from paleozoic_testing.zoo import ZOO_MODELS, load_zoo_model
from paleozoic.accuracy.inputs import random_inputs

THREADS = 2  # the machine's cores; the mock uses min(MP, cores) OpenMP threads

# name -> (file in --exports, input shapes fixing the symbolic axes)
SEQUENCE_EXPORTS: dict[str, tuple[str, dict[str, tuple[int, ...]]]] = {
    "bert_base": ("bert_op17.onnx", {"input_ids": (1, 128), "attention_mask": (1, 128)}),
    "vit_b_16": ("vit_b_16_op17.onnx", {}),
    "lstm": ("lstm_op17.onnx", {"input": (1, 50, 40)}),
}


def _ort_ms(model: onnx.ModelProto, feeds: dict, repeats: int) -> float:
    session = onnxruntime_session(model, THREADS)
    session.run(None, feeds)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def _session_ms(out: Path, feeds: dict, repeats: int) -> float:
    inputs = []
    for i, value in enumerate(feeds.values()):
        path = out / f"input{i}.bin"
        value.astype(value.dtype.newbyteorder("<")).tofile(path)
        inputs += ["-i", str(path)]
    # The session runs `repeats` times and reports its median run (the first run also
    # touches every buffer for the first time, like onnxruntime's warm-up run).
    result = subprocess.run([str(out / "build" / "session"), "-w", str(out / "weights.bin"),
                             "-o", str(out), "-r", str(repeats + 1), *inputs],
                            capture_output=True, text=True, check=True)
    return float(re.search(r"wall time: ([0-9.]+) ms", result.stdout).group(1))


def bench(name: str, model_path: Path, plan: str, repeats: int, work: Path,
          shapes: dict[str, tuple[int, ...]] | None = None) -> dict:
    model = onnx.load(str(model_path))
    out = work / f"{name}_{plan}"
    start = time.perf_counter()
    compile_model(model_path, out, plan=plan, force=True, input_shapes=shapes or None)
    codegen_s = time.perf_counter() - start
    build = out / "build"
    start = time.perf_counter()
    subprocess.run(["cmake", "-S", str(out), "-B", str(build), "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={runtime_prefix()}"],
                   capture_output=True, check=True)
    configure_s = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run(["cmake", "--build", str(build)], capture_output=True, check=True)
    gxx_s = time.perf_counter() - start
    loc = (out / "session.cpp").read_text().count("\n")
    feeds = random_inputs(model, shapes=shapes)
    session_ms = _session_ms(out, feeds, repeats)
    ort_ms = _ort_ms(model, feeds, repeats)
    return dict(model=name, codegen_s=codegen_s, configure_s=configure_s, gxx_s=gxx_s,
                loc=loc, session_ms=session_ms, ort_ms=ort_ms, ratio=session_ms / ort_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(ZOO_MODELS))
    parser.add_argument("--plan", default="fuse-all")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--exports", type=Path, default=None,
                        help="folder of scripts/export_sequence.py's exports to add")
    args = parser.parse_args()
    import tvm.relax.frontend.onnx  # noqa: F401  (codegen is timed after imports)

    print(f"plan {args.plan}; session and onnxruntime on {THREADS} threads; "
          f"median of {args.repeats} runs")
    header = (f"{'model':<14}{'codegen s':>10}{'cmake s':>9}{'g++ s':>8}{'LOC':>7}"
              f"{'session ms':>12}{'ort ms':>9}{'ratio':>7}")
    print(header)
    with tempfile.TemporaryDirectory(prefix="pz-bench-") as tmp:
        jobs: list[tuple[str, Path, dict[str, tuple[int, ...]]]] = []
        for name in args.models:
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(load_zoo_model(name), str(path))
            jobs.append((name, path, {}))
        if args.exports is not None:
            for name, (file, shapes) in SEQUENCE_EXPORTS.items():
                if (args.exports / file).exists():
                    jobs.append((name, args.exports / file, shapes))
                else:
                    print(f"{name:<14}(not in {args.exports}: run scripts/export_sequence.py)")
        for name, path, shapes in jobs:
            try:
                r = bench(name, path, args.plan, args.repeats, Path(tmp), shapes)
            except Exception as err:  # noqa: BLE001  (one model's failure is a row, not the end)
                print(f"{name:<14}FAILED: {type(err).__name__}: {str(err)[:160]}", flush=True)
                continue
            print(f"{r['model']:<14}{r['codegen_s']:>10.2f}{r['configure_s']:>9.2f}"
                  f"{r['gxx_s']:>8.2f}{r['loc']:>7}{r['session_ms']:>12.1f}"
                  f"{r['ort_ms']:>9.1f}{r['ratio']:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
