#!/usr/bin/env python3
"""The long fuzz profile: >= 1,000 random CNNs under random plans, each compared with
onnxruntime (tests/robustness/test_fuzz.py under `--hypothesis-profile long`).

    python scripts/fuzz_long.py [--examples 1000] [--seed N] [--max-steps 10]
                                [--emitted 25] [--cores 1] [--sdk all|mock|onednn]

The graphs (tests/robustness/fuzz_graphs.py) mix Conv, pooling, BN, LRN, Add, Concat,
Transpose, channel shuffles, Reshape / Flatten, up to three graph inputs and several graph
outputs; `--emitted N` more of them also go through emitted C++, g++ and the session
binary. Prints hypothesis' statistics (how many examples ran, passed, failed) and, on a
failure, the shrunk failing graph and plan with the @example / reproduce blob to turn into a
regression test. Exit status is pytest's (0: no failure found). `--cores N` keeps the run
on N CPUs (affinity, OpenMP threads, onnxruntime threads) on a shared machine."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    parser.add_argument("--max-steps", type=int, default=10,
                        help="graph-building steps per graph at most (CI: 7)")
    parser.add_argument("--emitted", type=int, default=25,
                        help="graphs also run as emitted C++ sessions (g++; ~3 s each)")
    parser.add_argument("--sdk", choices=("all", "mock", "onednn"), default="all",
                        help="which SDK's in-process runs (the emitted ones are the mock's; "
                             "onednn: skipped when its SDK is not built)")
    parser.add_argument("--cores", type=int, default=None,
                        help="run on this many CPUs only (default: all)")
    args = parser.parse_args()
    env = dict(os.environ, PZ_FUZZ_EXAMPLES=str(args.examples),
               PZ_FUZZ_MAX_STEPS=str(args.max_steps), PZ_FUZZ_EMITTED=str(args.emitted))
    if args.cores is not None:
        available = sorted(os.sched_getaffinity(0))
        if not 1 <= args.cores <= len(available):
            parser.error(f"--cores must be within 1..{len(available)}")
        # Inherited by pytest: the runtime sizes its OpenMP teams by omp_get_num_procs(),
        # which honours the affinity mask; onnxruntime reads PZ_FUZZ_THREADS (robust_util).
        os.sched_setaffinity(0, available[:args.cores])
        env.update(OMP_NUM_THREADS=str(args.cores), PZ_FUZZ_THREADS=str(args.cores))
    tests = "random_cnn" if args.sdk == "all" else (
        "random_cnn and not onednn" if args.sdk == "mock" else "random_cnn_on_onednn")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               str(ROOT / "tests" / "robustness" / "test_fuzz.py"), "-k", tests,
               "--hypothesis-profile", "long", "--hypothesis-show-statistics"]
    if args.seed is not None:
        command += ["--hypothesis-seed", str(args.seed)]
    return subprocess.call(command, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
