"""Sparse against dense fully connected layers on the oneDNN SDK, measured: one layer
compiled alone in the SDK's sparse mode (the SDK's pair kernel, onednn/sparse_mlp.cpp, where
it takes the layer) and in dense mode (oneDNN's inner product), weights pruned in pairs
(prune_pairs) at several fractions, at several batches; wall time of Session.run, the
median of alternating rounds (so drift hits both alike). Sets the kernel's thresholds
(kSparseMlpMinZeroPairs, kSparseMlpMaxBatch). Not a test: figures depend on the machine.

    python benchmarks/sparse_mlp.py [--shapes 25088x4096,4096x4096,1024x1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from paleozoic.frontend.prune import prune_pairs
from paleozoic.sdk import runtime_module


def session(rt, w: np.ndarray, batch: int, sparse: bool, threads: int):
    s = rt.Session()
    x = s.input("x", [batch, w.shape[1]])
    fc = s.fully_connected("fc", x, out_features=w.shape[0])
    fc.set_sparse(sparse)
    fc.config(w, np.zeros(w.shape[0], np.float32))
    s.mark_output(fc.output)
    s.compile_block("b", False, threads, [fc])
    s.set_input(x, np.random.default_rng(0).standard_normal((batch, w.shape[1]))
                .astype(np.float32))
    return s, fc


def timed(s, runs: int) -> float:
    s.run()
    start = time.perf_counter()
    for _ in range(runs):
        s.run()
    return (time.perf_counter() - start) / runs * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="25088x4096,4096x4096,1024x1000",
                        help="in x out features, comma-separated")
    parser.add_argument("--fractions", default="0.5,0.67,0.8,0.9")
    parser.add_argument("--batches", default="1,4,8,16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    rt = runtime_module("onednn")
    print(f"{'layer':<12} {'batch':>5} {'pairs':>6} {'dense ms':>9} {'sparse ms':>9} "
          f"{'speed-up':>8}")
    for shape in args.shapes.split(","):
        k, co = (int(v) for v in shape.split("x"))
        dense_w = np.random.default_rng(1).standard_normal((co, k)).astype(np.float32)
        for fraction in (float(f) for f in args.fractions.split(",")):
            w = prune_pairs(dense_w, fraction, 0)
            for batch in (int(b) for b in args.batches.split(",")):
                built = {mode: session(rt, w, batch, mode == "sparse", args.threads)
                         for mode in ("dense", "sparse")}
                runs = max(2, int(2e8 // (k * co * batch)) // 4)
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
