#!/usr/bin/env python3
"""The long fuzz profile: >= 1,000 random CNNs under random plans, each compared with
onnxruntime (tests/robustness/test_fuzz.py under `--hypothesis-profile long`).

    python scripts/fuzz_long.py [--examples 1000] [--seed N]

Prints hypothesis' statistics (how many examples ran, passed, failed) and, on a failure, the
shrunk failing graph and plan with the @example / reproduce blob to turn into a regression
test. Exit status is pytest's (0: no failure found)."""

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
    args = parser.parse_args()
    env = dict(os.environ, PZ_FUZZ_EXAMPLES=str(args.examples))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               str(ROOT / "tests" / "robustness" / "test_fuzz.py"), "-k", "random_cnn",
               "--hypothesis-profile", "long", "--hypothesis-show-statistics"]
    if args.seed is not None:
        command += ["--hypothesis-seed", str(args.seed)]
    return subprocess.call(command, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
