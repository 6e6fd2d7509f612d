"""Peak memory of `paleozoic compile` against the size of the model's weights.

Each measurement runs in its own process; the parent samples /proc/<pid>/status every
10 ms for the anonymous (heap) resident size and reads the kernel's high-water mark of the
whole resident size at exit. Weights streamed from a memory-mapped file count in the
resident size while they are being written out but are page cache the kernel can drop,
so the anonymous peak is the figure that says how many copies were held.

Side by side, in one run: the compile, and the naive reading it replaced (onnx.load, then
every initializer to numpy), on the same file.

    python benchmarks/compile_memory.py [--model vgg19]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

NAIVE = """
import sys, onnx
from onnx import numpy_helper
model = onnx.load(sys.argv[1])
arrays = [numpy_helper.to_array(t) for t in model.graph.initializer]
"""

COMPILE = """
import sys
from paleozoic.pipeline import compile_model
compile_model(sys.argv[1], sys.argv[2], plan="fuse-all", force=True)
"""

BASELINE = "import onnx, numpy, tvm\n"  # the imports alone


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def measure(code: str, *args: str) -> tuple[float, float, float]:
    """(peak anonymous MB, peak resident MB, seconds) of `python -c code args`."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args])
    anon = hwm = 0
    while proc.poll() is None:
        anon = max(anon, _status_kb(proc.pid, "RssAnon"))
        hwm = max(hwm, _status_kb(proc.pid, "VmHWM"))
        time.sleep(0.01)
    if proc.returncode != 0:
        raise SystemExit(f"measurement failed (exit {proc.returncode}): {code.strip()}")
    return anon / 1024, hwm / 1024, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vgg19", help="zoo model name or .onnx path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pz-mem-") as tmp:
        path = Path(args.model)
        if not path.is_file():
            from paleozoic_testing.zoo import load_zoo_model

            path = Path(tmp) / f"{args.model}.onnx"
            onnx.save(load_zoo_model(args.model), path)
        model = onnx.load(path, load_external_data=False)
        weights_mb = sum(len(t.raw_data) for t in model.graph.initializer) / 2**20
        del model
        rows = [("imports only (onnx, numpy, tvm)", measure(BASELINE)),
                ("onnx.load + numpy_helper.to_array", measure(NAIVE, str(path))),
                ("paleozoic compile (fuse-all)", measure(COMPILE, str(path),
                                                         str(Path(tmp) / "out")))]
    print(f"model {args.model}: {weights_mb:.0f} MB of weights\n")
    print("| job | peak anonymous MB | peak resident MB | anon / weights | s |")
    print("|---|---|---|---|---|")
    for name, (anon, hwm, seconds) in rows:
        print(f"| {name} | {anon:.0f} | {hwm:.0f} | {anon / weights_mb:.2f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
