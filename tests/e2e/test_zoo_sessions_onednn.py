"""The oneDNN SDK matches onnxruntime on the zoo: the nine CNNs under per-layer, fuse-all
and DP plans run in-process (paleozoic._runtime_onednn, the blocks an emitted session
compiles), and SqueezeNet's emitted sessions built with `build --sdk onednn` under both
built-in plans. Skipped without the `onednn` extra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import assert_outputs_match, dp_plan, onnxruntime_outputs, plan_outputs, zoo_model

from paleozoic.pipeline import build_session, compile_model, load_queue, run_session
from paleozoic.runner.sdk import built_sdk, sdk_available
from paleozoic_testing.zoo import ZOO_MODELS
from paleozoic.accuracy.inputs import random_inputs

pytestmark = pytest.mark.skipif(
    not sdk_available("onednn"),
    reason="the oneDNN SDK is not available: pip install 'paleozoic[onednn]'")

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
    assert_outputs_match(run_session(out, list(feeds.values())).outputs, onnxruntime_outputs(model, feeds))


# ZFNet-512 repeats AlexNet's layers at other sizes (run with --exhaustive).
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.exhaustive)
                                  if name == "zfnet512" else name for name in ZOO_MODELS])
def test_zoo_model_on_onednn_matches_onnxruntime(name: str) -> None:
    """`dp`: helpers.dp_plan."""
    model = zoo_model(name)
    queue = load_queue(model)
    feeds = random_inputs(model, 0)
    refs = onnxruntime_outputs(model, feeds)
    for plan in ("per-layer", "fuse-all", "dp"):
        chosen = dp_plan(queue) if plan == "dp" else plan
        assert_outputs_match(plan_outputs(queue, chosen, list(feeds.values()), sdk="onednn"),
                             refs)


def test_backend_api_builds_on_onednn(small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    """paleozoic.backend with sdk="onednn": its own cached session, built for oneDNN."""
    from paleozoic import backend

    feeds = random_inputs(small_cnn, seed=3)
    rep = backend.prepare(small_cnn, "CPU", cache_dir=str(tmp_path), sdk="onednn")
    outputs = rep.run(list(feeds.values()))
    assert rep.last_session is not None and built_sdk(rep.last_session) == "onednn"
    assert_outputs_match([np.asarray(outputs[0])], onnxruntime_outputs(small_cnn, feeds))
    mock = backend.prepare(small_cnn, "CPU", cache_dir=str(tmp_path))
    mock.run(list(feeds.values()))
    assert mock.last_session != rep.last_session and built_sdk(mock.last_session) == "mock"
