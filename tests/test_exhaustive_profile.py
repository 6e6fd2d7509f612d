"""The opt-in profile (tests/conftest.py): cases marked exhaustive are collected only with
--exhaustive, and the default run says how many it left out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def _collect(*options: str) -> str:
    # From tests/: `python -m` puts its folder first on the path, and a source checkout's
    # paleozoic (no compiled runtime) would shadow the installed one.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *options, str(TESTS / "codegen" / "test_raw.py")],
        cwd=TESTS, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_exhaustive_cases_run_only_when_asked() -> None:
    default, everything = _collect(), _collect("--exhaustive")
    exhaustive = "test_raw_matches_wrapper_bit_for_bit[resnet50-plans1]"
    assert exhaustive not in default and "2 deselected" in default
    assert exhaustive in everything and "deselected" not in everything
    # The rest of the file is collected either way.
    assert "test_raw_matches_wrapper_bit_for_bit[resnet18-plans0]" in default
