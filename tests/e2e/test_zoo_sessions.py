"""End to end on the nine classic CNNs of the onnx wheel, under both built-in plans and the
DP-tuned one:
compile, build with g++, run, compare with onnxruntime (rtol 1e-3, atol 1e-5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import compile_build_compare, dp_plan, zoo_model
from paleozoic.pipeline import load_queue
from paleozoic_testing.zoo import ZOO_MODELS

# ZFNet-512 fused repeats AlexNet's fused layers at other sizes: its per-layer session runs
# by default, the fused ones with --exhaustive. VGG-19's DP plan fuses the same conv chains
# as its fuse-all session, which runs by default (33 s here).
_REPEATS = {("zfnet512", "fuse-all"), ("zfnet512", "dp"), ("vgg19", "dp")}


@pytest.mark.slow
@pytest.mark.parametrize("name, plan", [
    pytest.param(name, plan, marks=pytest.mark.exhaustive) if (name, plan) in _REPEATS
    else (name, plan) for name in ZOO_MODELS for plan in ("per-layer", "fuse-all", "dp")])
def test_zoo_model_matches_onnxruntime(name: str, plan: str, tmp_path: Path) -> None:
    """`dp`: helpers.dp_plan."""
    model = zoo_model(name)
    chosen = dp_plan(load_queue(model)) if plan == "dp" else plan
    report = compile_build_compare(model, tmp_path / "session", plan=chosen)
    assert "total device time" in report
