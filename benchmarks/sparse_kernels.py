"""Sparse against dense layers on the oneDNN SDK, measured: one fully connected layer, or
one 1x1 convolution (--conv), compiled alone in the SDK's sparse mode (the SDK's pair
kernels, backends/onednn/sparse.cpp, where they take the layer) and in dense mode
(oneDNN's), weights pruned in pairs (prune_pairs) at several fractions; wall time of
Session.run, the median of alternating rounds (so drift hits both alike). Sets the kernels'
thresholds (sparse.cpp).
Not a test: figures depend on the machine.

    python benchmarks/sparse_kernels.py [--shapes 25088x4096,4096x4096,1024x1000] [--rounds 7]
    python benchmarks/sparse_kernels.py --conv [--shapes 64x256x56,256x64x56,...]
        (in x out channels x side, batch 1)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from paleozoic.frontend.prune import prune_pairs
from paleozoic.runner.sdk import runtime_module


def session(rt, w: np.ndarray, batch: int, sparse: bool, threads: int, side: int = 0):
    """A session of one layer with weights w: fully connected ([out, in]), or a 1x1
    convolution ([out, in, 1, 1]) over side x side planes."""
    s = rt.Session()
    if side:
        x = s.input("x", [batch, w.shape[1], side, side])
        layer = s.conv("conv", x, out_channels=w.shape[0], kernel=[1, 1])
    else:
        x = s.input("x", [batch, w.shape[1]])
        layer = s.fully_connected("fc", x, out_features=w.shape[0])
    layer.set_sparse(sparse)
    layer.config(w, np.zeros(w.shape[0], np.float32))
    s.mark_output(layer.output)
    s.compile_block("b", False, threads, [layer])
    shape = [batch, w.shape[1]] + ([side, side] if side else [])
    s.set_input(x, np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    return s, layer


def timed(s, runs: int) -> float:
    s.run()
    start = time.perf_counter()
    for _ in range(runs):
        s.run()
    return (time.perf_counter() - start) / runs * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=None,
                        help="in x out features (with --conv: in x out channels x side), "
                             "comma-separated")
    parser.add_argument("--conv", action="store_true", help="1x1 convolutions, batch 1")
    parser.add_argument("--fractions", default="0.5,0.67,0.8,0.9")
    parser.add_argument("--batches", default="1,4,8,16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.shapes is None:
        args.shapes = ("24x144x56,64x256x56,256x64x56,512x128x28,96x576x14,1024x256x14,"
                       "2048x512x7" if args.conv else "25088x4096,4096x4096,1024x1000")
    if args.conv:
        args.batches = "1"
    rt = runtime_module("onednn")
    print(f"{'layer':<12} {'batch':>5} {'pairs':>6} {'dense ms':>9} {'sparse ms':>9} "
          f"{'speed-up':>8}")
    for shape in args.shapes.split(","):
        k, co, *rest = (int(v) for v in shape.split("x"))
        side = rest[0] if rest else 0
        dense_w = np.random.default_rng(1).standard_normal((co, k) + ((1, 1) if side else ())
                                                           ).astype(np.float32)
        for fraction in (float(f) for f in args.fractions.split(",")):
            w = prune_pairs(dense_w, fraction, 0)
            for batch in (int(b) for b in args.batches.split(",")):
                built = {mode: session(rt, w, batch, mode == "sparse", args.threads, side)
                         for mode in ("dense", "sparse")}
                runs = max(2, int(2e8 // (k * co * batch * max(1, side * side))) // 4)
                samples: dict[str, list[float]] = {"dense": [], "sparse": []}
                for _ in range(args.rounds):
                    for mode, (s, _) in built.items():
                        samples[mode].append(timed(s, runs))
                dense, sparse = (statistics.median(samples[m]) for m in ("dense", "sparse"))
                print(f"{shape:<12} {batch:>5} {fraction:>6.2f} {dense:>9.3f} {sparse:>9.3f} "
                      f"{dense / sparse:>7.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
