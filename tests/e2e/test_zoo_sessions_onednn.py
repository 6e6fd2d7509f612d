"""Emitted sessions built against the oneDNN SDK (`build --sdk onednn`) match onnxruntime:
the zoo's nine CNNs under per-layer, fuse-all and DP plans (slow), and SqueezeNet under both
built-in plans in the default run. Skipped without the `onednn` extra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import onnxruntime_outputs

from paleozoic.ir import Plan
from paleozoic.optimize import load_optimizer, run_optimizer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.pipeline import build_session, compile_model, load_queue, run_session
from paleozoic.sdk import built_sdk, sdk_available
from paleozoic.testing.zoo import ZOO_MODELS, load_zoo_model, random_inputs

pytestmark = pytest.mark.skipif(
    not sdk_available("onednn"),
    reason="the oneDNN SDK is not built: pip install 'paleozoic[onednn]', then reinstall "
           "paleozoic")

_cache: dict[str, onnx.ModelProto] = {}


def zoo_model(name: str) -> onnx.ModelProto:
    """Keeps one model at a time: VGG-19 alone holds 575 MB of weights."""
    if name not in _cache:
        _cache.clear()
        _cache[name] = load_zoo_model(name, seed=0)
    return _cache[name]


def _check(name: str, plan: str, out: Path) -> None:
    model = zoo_model(name)
    chosen: str | Plan = plan
    if plan == "dp":
        queue = load_queue(model)
        chosen = run_optimizer(load_optimizer("dp"), queue, DeviceModelOracle(queue))
    compile_model(model, out, plan=chosen)
    build_session(out, sdk="onednn")
    assert built_sdk(out) == "onednn"
    feeds = random_inputs(model, 0)
    result = run_session(out, list(feeds.values()))
    for ours, ref in zip(result.outputs, onnxruntime_outputs(model, feeds), strict=True):
        ref = ref.reshape(ours.shape)
        err = float(np.abs(ours - ref).max())
        assert np.allclose(ours, ref, rtol=1e-3, atol=1e-5), f"max abs error {err}"


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_squeezenet_on_onednn_matches_onnxruntime(plan: str, tmp_path: Path) -> None:
    _check("squeezenet", plan, tmp_path / "session")


@pytest.mark.slow
@pytest.mark.parametrize("name, plan", [(name, plan) for name in ZOO_MODELS
                                        for plan in ("per-layer", "fuse-all", "dp")])
def test_zoo_model_on_onednn_matches_onnxruntime(name: str, plan: str, tmp_path: Path) -> None:
    _check(name, plan, tmp_path / "session")
