"""Peak resident memory of emitted sessions beside onnxruntime's: for each model, plan and
SDK, the session is compiled, built and run as a separate process (with --own-buffers, a
second time with the arena edited out: each tensor its own buffer, as before the memory
plan). onnxruntime's peak is measured the same way (a child process: its peak resident set
less the interpreter's and onnxruntime's own after import). The goal column is the issue's
bound, weights + arena + 64 MB. With --sessions 2,4 each session also runs that many
sessions at once in its process (-s N: one compiled model, an arena each, five runs each),
and the report gives what each added session costs, (peak with N - peak alone) / N, beside
its arena, and the runs per second of the N sessions beside the serial run's. With
--precision fp16,int8 every block also computes in that precision (int8 calibrated by
`paleozoic calibrate` on seeded standard-normal inputs, as int8_bench.py does); the "dev w"
column is then what the device holds, the weights at 2 or 1 bytes, while the goal keeps the
file's fp32 weights, which a CPU SDK computes from. Not a test: figures depend on the
machine.

    python benchmarks/memory_bench.py [resnet50 vgg19 ... | model.onnx ...] \
        [--plan per-layer,fuse-all] [--sdk mock,onednn] [--precision fp32,fp16,int8] \
        [--own-buffers] [--sessions 2,4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

from paleozoic.errors import PaleozoicError
from paleozoic.ir import Model
from paleozoic.ir.memory import plan_memory
from paleozoic.pipeline import build_session, compile_model, load_queue, resolve_plan
from paleozoic_testing.zoo import ZOO_MODELS, load_zoo_model

_ORT_PEAK = r"""
import sys
import numpy as np, onnxruntime as ort
if len(sys.argv) < 2:
    sys.exit(0)  # the interpreter and onnxruntime alone
options = ort.SessionOptions()
options.intra_op_num_threads = 2
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
with np.load(sys.argv[2]) as feeds:
    session.run(None, dict(feeds))
"""


def child_run(command: list[str], cwd: Path | None = None) -> tuple[float, str]:
    """The command's peak resident set in MB, as GNU time reports it (a process forked from
    this large one would count this one's pages: time forks it from its own small image),
    and its output."""
    out = subprocess.run(["/usr/bin/time", "-f", "peak_kb=%M", *command], cwd=cwd,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {out.stderr[-400:]}")
    return int(out.stderr.rsplit("peak_kb=", 1)[1].split()[0]) / 1024.0, out.stdout


def child_peak_mb(command: list[str], cwd: Path | None = None) -> float:
    return child_run(command, cwd)[0]


def runs_per_second(report: str) -> tuple[float, float]:
    """(serial, concurrent) runs per second from a session's report with -s N: the median
    serial run's wall time, and the concurrent sessions' runs over their wall time."""
    serial = re.search(r"wall time: ([0-9.]+) ms", report)
    together = re.search(r"\(([0-9.]+) runs/s\)", report)
    return (1000.0 / float(serial.group(1)) if serial else float("nan"),
            float(together.group(1)) if together else float("nan"))


def ort_feeds(model: onnx.ModelProto, options: dict) -> dict[str, np.ndarray]:
    """Zeros of each graph input, in the shapes and with the values the session is compiled
    for (NAME.options: a KV cache's lengths, a sample rate); symbolic axes of 1 otherwise."""
    init = {i.name for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in init:
            continue
        t = value.type.tensor_type
        shape = (options["input_shapes"] or {}).get(value.name) or [
            d.dim_value if d.HasField("dim_value") else 1 for d in t.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        given = (options["input_values"] or {}).get(value.name)
        if given is None:
            feeds[value.name] = np.zeros(shape, dtype)
            continue
        given = np.asarray(given, dtype)
        feeds[value.name] = (given.reshape(shape) if given.size == int(np.prod(shape))
                             else np.broadcast_to(given, shape).copy())
    return feeds


def ort_peak_mb(model: Path, feeds: dict[str, np.ndarray], work: Path) -> float:
    """onnxruntime's peak on `feeds` less the interpreter's with onnxruntime imported."""
    path = work / f"{model.stem}-feeds.npz"
    np.savez(path, **feeds)
    python = [sys.executable, "-c", _ORT_PEAK]
    return child_peak_mb([*python, str(model), str(path)]) - child_peak_mb(python)


def without_arena(folder: Path) -> None:
    path = folder / "session.cpp"
    source = path.read_text()
    start = source.index("  // ---- Memory:")
    end = source.index("  }};\n", start) + len("  }};\n")
    path.write_text(source[:start] + source[end:])


def model_options(path: Path) -> dict:
    """compile_model's shape, value and output options for an acceptance export: its
    NAME.options, else the static shapes acceptance_bench gives its symbolic inputs."""
    from acceptance_bench import own_options, shapes_for

    own = own_options(path)
    return {"input_shapes": own["input_shapes"] or shapes_for(path),
            "input_values": own["input_values"] or None, "outputs": own["outputs"] or None}


def measure(name: str, path: Path, plans: list[str], sdks: list[str], work: Path,
            with_own_buffers: bool = False, plan_only: bool = False,
            sessions: list[int] | None = None,
            precisions: tuple[str, ...] = ("fp32",)) -> list[dict]:
    model = onnx.load(str(path))
    options = model_options(path)
    calibration = None
    if "int8" in precisions and not plan_only:
        from int8_bench import calibration_file

        calibration = calibration_file(path, options["input_shapes"], work / f"{name}-calib", 4)
    queue = load_queue(model, options["input_shapes"], None, options["input_values"],
                       options["outputs"])
    ort = float("nan") if plan_only else ort_peak_mb(path, ort_feeds(model, options), work)
    rows = []
    for plan in plans:
        memory = plan_memory(Model.build(queue, resolve_plan(queue, plan)))
        every = sum(int(np.prod(t.shape)) * 4 for t in queue.tensors.values()
                    if t.dtype == "float32")
        if plan_only:
            ratio = memory.arena_bytes / max(memory.lower_bound_bytes, 1)
            rows.append({"model": name, "plan": plan, "weights_mb": memory.weights_bytes / 1e6,
                         "arena_mb": memory.arena_bytes / 1e6,
                         "lower_bound_mb": memory.lower_bound_bytes / 1e6,
                         "arena_over_bound": ratio, "all_tensors_mb": every / 1e6})
            print(f"{name:<26} {plan:<10} {memory.weights_bytes / 1e6:9.1f} "
                  f"{memory.arena_bytes / 1e6:9.2f} {memory.lower_bound_bytes / 1e6:9.2f} "
                  f"{ratio:7.3f} {every / 1e6:9.1f}", flush=True)
            continue
        for sdk, precision in [(s, p) for p in precisions for s in sdks]:
            out = compile_model(model, work / f"{name}-{plan}-{sdk}", plan=plan, force=True,
                                precision=None if precision == "fp32" else precision,
                                calibration=calibration if precision == "int8" else None,
                                **options)
            device_weights = json.loads((out / "session.json").read_text())["memory"][
                "device_weights_bytes"] / 1e6
            build_session(out, sdk=sdk)
            run = [str(out / "build" / "session"), "-w", "weights.bin"]
            planned = child_peak_mb(run, out)
            # -s N runs N sessions after the first: N more arenas than alone. Each runs
            # `repeat` times so that the throughput is not the first run's alone.
            together = {n: child_run([*run, "-r", "5", "-s", str(n)], out)
                        for n in sessions or []}
            own = float("nan")
            if with_own_buffers:
                without_arena(out)
                build_session(out, sdk=sdk)
                own = child_peak_mb([str(out / "build" / "session"), "-w", "weights.bin"], out)
            shutil.rmtree(out, ignore_errors=True)
            rows.append({"model": name, "plan": plan, "sdk": sdk, "precision": precision,
                         "weights_mb": memory.weights_bytes / 1e6,
                         "device_weights_mb": device_weights,
                         "arena_mb": memory.arena_bytes / 1e6,
                         "lower_bound_mb": memory.lower_bound_bytes / 1e6,
                         "all_tensors_mb": every / 1e6, "peak_own_buffers_mb": own,
                         "peak_arena_mb": planned, "onnxruntime_peak_mb": ort,
                         "peak_with_sessions_mb": {n: t[0] for n, t in together.items()},
                         "runs_per_s_with_sessions": {n: runs_per_second(t[1])
                                                      for n, t in together.items()}})
            r = rows[-1]
            budget = r["weights_mb"] + r["arena_mb"] + 64.0
            r["goal_mb"] = budget
            print(f"{name:<14} {plan:<10} {sdk:<7} {precision:<5} {r['weights_mb']:9.1f} "
                  f"{device_weights:7.1f} {r['arena_mb']:8.2f} {r['lower_bound_mb']:8.2f} "
                  f"{r['all_tensors_mb']:9.1f} {own:10.1f} {planned:10.1f} {budget:9.1f} "
                  f"{ort:9.1f} {planned / ort:6.2f}", flush=True)
            for n, (peak, report) in together.items():
                alone, concurrent = runs_per_second(report)
                print(f"{'':<14} {'':<10} {'':<7} -s {n}: peak {peak:.1f} MB, each added "
                      f"session {(peak - planned) / n:.1f} MB (arena {r['arena_mb']:.1f}); "
                      f"{concurrent:.1f} runs/s against {alone:.1f} serial", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["resnet50", "vgg19", "squeezenet"],
                        help=f"zoo names ({', '.join(ZOO_MODELS)}), .onnx files or folders "
                             f"of them (with their NAME.options)")
    parser.add_argument("--plan", default="per-layer,fuse-all")
    parser.add_argument("--sdk", default="mock,onednn")
    parser.add_argument("--precision", default="fp32",
                        help="comma-separated: fp32 (the plans' own), fp16, int8")
    parser.add_argument("--json")
    parser.add_argument("--own-buffers", action="store_true",
                        help="also build each session with the arena edited out (every tensor "
                             "its own buffer, as before the memory plan) and measure it")
    parser.add_argument("--sessions", default="",
                        help="also run each session with -s N for these N (comma-separated): "
                             "N sessions at once over one compiled model")
    parser.add_argument("--plan-only", action="store_true",
                        help="the memory plans alone (arena against its lower bound), no "
                             "sessions built")
    args = parser.parse_args(argv)
    if args.plan_only:
        print(f"{'model':<26} {'plan':<10} {'weights':>9} {'arena':>9} {'bound':>9} "
              f"{'a/bound':>7} {'tensors':>9}  (MB)")
    else:
        print(f"{'model':<14} {'plan':<10} {'sdk':<7} {'prec':<5} {'weights':>9} {'dev w':>7} "
              f"{'arena':>8} {'bound':>8} {'tensors':>9} {'peak own':>10} {'peak':>10} "
              f"{'goal':>9} {'ort peak':>9} {'/ort':>6}  (MB; goal = weights + arena + 64)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="pz-memory-") as tmp:
        entries = [str(p) for entry in args.models
                   for p in (sorted(Path(entry).glob("*.onnx")) if Path(entry).is_dir()
                             else [Path(entry)])]
        for entry in entries:
            path = Path(entry)
            if not entry.endswith(".onnx"):  # the zoo model with its seeded weights
                path = Path(tmp) / f"{entry}.onnx"
                onnx.save(load_zoo_model(entry), str(path))
            try:
                rows += measure(Path(entry).stem, path, args.plan.split(","),
                                args.sdk.split(","), Path(tmp), args.own_buffers, args.plan_only,
                                [int(n) for n in args.sessions.split(",") if n],
                                tuple(args.precision.split(",")))
            except (PaleozoicError, RuntimeError) as err:
                print(f"{Path(entry).name}: failed: {str(err).splitlines()[0][:160]}",
                      flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
