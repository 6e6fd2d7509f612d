"""The oneDNN SDK matches onnxruntime on the zoo: the nine CNNs under per-layer, fuse-all
and DP plans run in-process (paleozoic._runtime_onednn, the blocks an emitted session
compiles), and SqueezeNet's emitted sessions built with `build --sdk onednn` under both
built-in plans. Skipped without the `onednn` extra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import onnxruntime_outputs

from paleozoic.ir import Plan
from paleozoic.optimize import load_optimizer, run_optimizer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.pipeline import (
    build_session,
    compile_model,
    load_queue,
    resolve_plan,
    run_session,
)
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import built_sdk, sdk_available
from paleozoic_testing.zoo import ZOO_MODELS, load_zoo_model
from paleozoic.accuracy.inputs import random_inputs

pytestmark = pytest.mark.skipif(
    not sdk_available("onednn"),
    reason="the oneDNN SDK is not available: pip install 'paleozoic[onednn]'")

_cache: dict[str, onnx.ModelProto] = {}


def zoo_model(name: str) -> onnx.ModelProto:
    """Keeps one model at a time: VGG-19 alone holds 575 MB of weights."""
    if name not in _cache:
        _cache.clear()
        _cache[name] = load_zoo_model(name, seed=0)
    return _cache[name]


def _compare(ours: list[np.ndarray], refs: list[np.ndarray]) -> None:
    assert len(ours) == len(refs)
    for out, ref in zip(ours, refs):
        ref = ref.reshape(out.shape)
        err = float(np.abs(out - ref).max())
        assert np.allclose(out, ref, rtol=1e-3, atol=1e-5), f"max abs error {err}"


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_squeezenet_session_built_on_onednn_matches_onnxruntime(plan: str,
                                                                tmp_path: Path) -> None:
    model = zoo_model("squeezenet")
    out = tmp_path / "session"
    compile_model(model, out, plan=plan)
    build_session(out, sdk="onednn")
    build_session(out)  # a later build without --sdk keeps the folder's SDK
    assert built_sdk(out) == "onednn"
    assert "PALEOZOIC_SDK:STRING=onednn" in (out / "build" / "CMakeCache.txt").read_text()
    feeds = random_inputs(model, 0)
    _compare(run_session(out, list(feeds.values())).outputs, onnxruntime_outputs(model, feeds))


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_zoo_model_on_onednn_matches_onnxruntime(name: str) -> None:
    """`dp` is the plan the exact DP finds under the device model: mixed fused and
    single-layer blocks on MPs other than 1 and 32."""
    model = zoo_model(name)
    queue = load_queue(model)
    feeds = random_inputs(model, 0)
    refs = onnxruntime_outputs(model, feeds)
    for plan in ("per-layer", "fuse-all", "dp"):
        chosen: str | Plan = plan
        if plan == "dp":
            chosen = run_optimizer(load_optimizer("dp"), queue, DeviceModelOracle(queue))
        runner = PlanRunner(queue, resolve_plan(queue, chosen), sdk="onednn")
        outputs = runner.run(list(feeds.values()))
        _compare([outputs[name] for name in queue.outputs], refs)


def test_backend_api_builds_on_onednn(small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    """paleozoic.backend with sdk="onednn": its own cached session, built for oneDNN."""
    from paleozoic import backend

    feeds = random_inputs(small_cnn, seed=3)
    rep = backend.prepare(small_cnn, "CPU", cache_dir=str(tmp_path), sdk="onednn")
    outputs = rep.run(list(feeds.values()))
    assert rep.last_session is not None and built_sdk(rep.last_session) == "onednn"
    _compare([np.asarray(outputs[0])], onnxruntime_outputs(small_cnn, feeds))
    mock = backend.prepare(small_cnn, "CPU", cache_dir=str(tmp_path))
    mock.run(list(feeds.values()))
    assert mock.last_session != rep.last_session and built_sdk(mock.last_session) == "mock"
