"""Peak resident memory of emitted sessions beside onnxruntime's: for each model, plan and
SDK, the session is compiled, built and run as a separate process (with --own-buffers, a
second time with the arena edited out: each tensor its own buffer, as before the memory
plan). onnxruntime's peak is measured the same way (a child process: its peak resident set
less the interpreter's and onnxruntime's own after import). The goal column is the issue's
bound, weights + arena + 64 MB. Not a test: figures depend on the machine.

    python benchmarks/memory_bench.py [resnet50 vgg19 ... | model.onnx ...] \
        [--plan per-layer,fuse-all] [--sdk mock,onednn] [--own-buffers] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

from paleozoic.ir import Model
from paleozoic.ir.memory import plan_memory
from paleozoic.pipeline import build_session, compile_model, load_queue, resolve_plan
from paleozoic.testing.zoo import ZOO_MODELS, load_zoo_model

_ORT_PEAK = r"""
import sys
import numpy as np, onnxruntime as ort
if len(sys.argv) < 2:
    sys.exit(0)  # the interpreter and onnxruntime alone
options = ort.SessionOptions()
options.intra_op_num_threads = 2
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
feeds = {}
for i in session.get_inputs():
    shape = [d if isinstance(d, int) else 1 for d in i.shape]
    kind = np.float32 if "float" in i.type else np.int64
    feeds[i.name] = np.zeros(shape, kind)
session.run(None, feeds)
"""


def child_peak_mb(command: list[str], cwd: Path | None = None) -> float:
    """The command's peak resident set in MB, as GNU time reports it (a process forked from
    this large one would count this one's pages: time forks it from its own small image)."""
    out = subprocess.run(["/usr/bin/time", "-f", "peak_kb=%M", *command], cwd=cwd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {out.stderr[-400:]}")
    return int(out.stderr.rsplit("peak_kb=", 1)[1].split()[0]) / 1024.0


def ort_peak_mb(model: Path) -> float:
    """onnxruntime's peak less the interpreter's with onnxruntime imported."""
    python = [sys.executable, "-c", _ORT_PEAK]
    return child_peak_mb([*python, str(model)]) - child_peak_mb(python)


def without_arena(folder: Path) -> None:
    path = folder / "session.cpp"
    source = path.read_text()
    start = source.index("  // ---- Memory:")
    end = source.index("  }};\n", start) + len("  }};\n")
    path.write_text(source[:start] + source[end:])


def measure(name: str, path: Path, plans: list[str], sdks: list[str], work: Path,
            with_own_buffers: bool = False) -> list[dict]:
    model = onnx.load(str(path))
    queue = load_queue(model)
    ort = ort_peak_mb(path)
    rows = []
    for plan in plans:
        memory = plan_memory(Model.build(queue, resolve_plan(queue, plan)))
        every = sum(int(np.prod(t.shape)) * 4 for t in queue.tensors.values()
                    if t.dtype == "float32")
        for sdk in sdks:
            out = compile_model(model, work / f"{name}-{plan}-{sdk}", plan=plan, force=True)
            build_session(out, sdk=sdk)
            planned = child_peak_mb([str(out / "build" / "session"), "-w", "weights.bin"], out)
            own = float("nan")
            if with_own_buffers:
                without_arena(out)
                build_session(out, sdk=sdk)
                own = child_peak_mb([str(out / "build" / "session"), "-w", "weights.bin"], out)
            shutil.rmtree(out, ignore_errors=True)
            rows.append({"model": name, "plan": plan, "sdk": sdk,
                         "weights_mb": memory.weights_bytes / 1e6,
                         "arena_mb": memory.arena_bytes / 1e6,
                         "lower_bound_mb": memory.lower_bound_bytes / 1e6,
                         "all_tensors_mb": every / 1e6, "peak_own_buffers_mb": own,
                         "peak_arena_mb": planned, "onnxruntime_peak_mb": ort})
            r = rows[-1]
            budget = r["weights_mb"] + r["arena_mb"] + 64.0
            r["goal_mb"] = budget
            print(f"{name:<14} {plan:<10} {sdk:<7} {r['weights_mb']:9.1f} {r['arena_mb']:8.2f} "
                  f"{r['lower_bound_mb']:8.2f} {r['all_tensors_mb']:9.1f} {own:10.1f} "
                  f"{planned:10.1f} {budget:9.1f} {ort:9.1f} {planned / ort:6.2f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["resnet50", "vgg19", "squeezenet"],
                        help=f"zoo names ({', '.join(ZOO_MODELS)}) or .onnx files")
    parser.add_argument("--plan", default="per-layer,fuse-all")
    parser.add_argument("--sdk", default="mock,onednn")
    parser.add_argument("--json")
    parser.add_argument("--own-buffers", action="store_true",
                        help="also build each session with the arena edited out (every tensor "
                             "its own buffer, as before the memory plan) and measure it")
    args = parser.parse_args(argv)
    print(f"{'model':<14} {'plan':<10} {'sdk':<7} {'weights':>9} {'arena':>8} {'bound':>8} "
          f"{'tensors':>9} {'peak own':>10} {'peak':>10} {'goal':>9} {'ort peak':>9} "
          f"{'/ort':>6}  (MB; goal = weights + arena + 64)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="pz-memory-") as tmp:
        for entry in args.models:
            path = Path(entry)
            if not entry.endswith(".onnx"):  # the zoo model with its seeded weights
                path = Path(tmp) / f"{entry}.onnx"
                onnx.save(load_zoo_model(entry), str(path))
            rows += measure(Path(entry).stem, path, args.plan.split(","), args.sdk.split(","),
                            Path(tmp), args.own_buffers)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
