"""onnxruntime, the mock SDK and the oneDNN SDK side by side, in one run on 2 threads.

For each zoo model: onnxruntime's median latency, then the emitted session's median wall
time built against each SDK (`paleozoic build --sdk`) under the per-layer and fuse-all
plans at MP 2, and each one's ratio to onnxruntime. Not a test. A skeleton of issue 14's
benchmark: the measured-tuned plan and the paper workloads are not in it yet.

    python benchmarks/backends.py [--models squeezenet resnet50 ...] [--repeats 10]
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.pipeline import build_session, compile_model, load_queue
from paleozoic.sdk import SDKS, sdk_available
from paleozoic.testing.zoo import ZOO_MODELS, load_zoo_model, random_inputs
from paleozoic.verify import onnxruntime_session

PLANS = {"per-layer": per_layer, "fuse-all": fuse_all}

logger = logging.getLogger("backends")


def _ort_ms(model: onnx.ModelProto, feeds: dict, repeats: int, threads: int) -> float:
    session = onnxruntime_session(model, threads)
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
        value.astype("<f4").tofile(path)
        inputs += ["-i", str(path)]
    result = subprocess.run([str(out / "build" / "session"), "-w", str(out / "weights.bin"),
                             "-o", str(out), "-r", str(repeats + 1), *inputs],
                            capture_output=True, text=True, check=True)
    return float(re.search(r"wall time: ([0-9.]+) ms", result.stdout).group(1))


def bench(name: str, sdks: list[str], repeats: int, threads: int,
          work: Path) -> dict[str, float]:
    model = load_zoo_model(name)
    feeds = random_inputs(model)
    row = {"onnxruntime": _ort_ms(model, feeds, repeats, threads)}
    queue = load_queue(model)
    for plan_name, make in PLANS.items():
        out = work / f"{name}_{plan_name}"
        compile_model(model, out, plan=make(queue, mp=threads), force=True)
        for sdk in sdks:
            build_session(out, sdk=sdk)
            row[f"{sdk} {plan_name}"] = _session_ms(out, feeds, repeats)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(ZOO_MODELS), choices=ZOO_MODELS)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2,
                        help="onnxruntime's intra-op threads and the plans' MP")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sdks = [sdk for sdk in SDKS if sdk_available(sdk)]
    if "onednn" not in sdks:
        logger.info("the oneDNN SDK is not built (pip install 'paleozoic[onednn]'); "
                    "only the mock is timed")
    columns = ["onnxruntime"] + [f"{sdk} {plan}" for plan in PLANS for sdk in sdks]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="pz-backends-") as tmp:
        for name in args.models:
            rows[name] = bench(name, sdks, args.repeats, args.threads, Path(tmp))
            logger.info("%s done", name)
    logger.info("median latency in ms on %d threads (ratio to onnxruntime)", args.threads)
    logger.info("%-14s" + "".join(f"{c:>22}" for c in columns), "model")
    for name, row in rows.items():
        cells = [f"{row['onnxruntime']:>22.2f}"] + [
            f"{row[c]:>12.2f} ({row[c] / row['onnxruntime']:5.2f}x)" for c in columns[1:]]
        logger.info("%-14s" + "".join(cells), name)
    geo = {c: math.exp(np.mean([math.log(r[c] / r["onnxruntime"]) for r in rows.values()]))
           for c in columns[1:]}
    logger.info("%-14s%22s" + "".join(f"{geo[c]:>21.2f}x" for c in columns[1:]),
                "geomean", "")


if __name__ == "__main__":
    main()
