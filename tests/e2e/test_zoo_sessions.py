"""End to end on the nine classic CNNs of the onnx wheel, under both built-in plans and the
DP-tuned one:
compile, build with g++, run, compare with onnxruntime (rtol 1e-3, atol 1e-5)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from helpers import compile_build_compare
from paleozoic.optimize import load_optimizer, run_optimizer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.ir import Plan
from paleozoic.pipeline import load_queue
from paleozoic_testing.zoo import ZOO_MODELS, load_zoo_model

_cache: dict[str, onnx.ModelProto] = {}


def zoo_model(name: str) -> onnx.ModelProto:
    """Keeps one model at a time: VGG-19 alone holds 575 MB of weights."""
    if name not in _cache:
        _cache.clear()
        _cache[name] = load_zoo_model(name, seed=0)
    return _cache[name]


@pytest.mark.slow
@pytest.mark.parametrize("name, plan", [(name, plan) for name in ZOO_MODELS
                                        for plan in ("per-layer", "fuse-all", "dp")])
def test_zoo_model_matches_onnxruntime(name: str, plan: str, tmp_path: Path) -> None:
    """`dp` is the plan the exact DP finds under the device model: mixed fused and
    single-layer blocks on MPs other than 1 and 32."""
    model = zoo_model(name)
    chosen: str | Plan = plan
    if plan == "dp":
        queue = load_queue(model)
        chosen = run_optimizer(load_optimizer("dp"), queue, DeviceModelOracle(queue))
    report = compile_build_compare(model, tmp_path / "session", plan=chosen)
    assert "total device time" in report
