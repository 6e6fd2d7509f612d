"""Speech-like 1-D models end to end on both SDKs: the speech encoder (Conv1d stride 2,
GroupNorm as PyTorch exports it, GELU, Conv1d, mean over time, Linear) and a 1-D transposed
convolution + max pool (paleozoic_testing.speech), in-process under per-layer and fuse-all
and as emitted sessions built with g++, against onnxruntime and the float64 truth (the
cancellation case of instance normalisation, a large mean over a unit spread, is in
tests/frontend/test_convert_1d.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import onnxruntime_outputs

from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.pipeline import build_session, compile_model, load_queue, run_session
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.speech import deconv_pool_1d, speech_encoder

SDKS = ["mock", pytest.param("onednn", marks=pytest.mark.skipif(
    not sdk_available("onednn"), reason="the oneDNN SDK is not built"))]
MODELS = {"speech_encoder": (speech_encoder, (1, 1, 800), 1e3),
          "deconv_pool_1d": (deconv_pool_1d, (1, 16, 64), 0.0)}
# Relative to the output's largest magnitude: a few fp32 roundings through a handful of
# layers (measured: 3e-7 on both SDKs).
TRUTH = 2e-6


def _case(name: str) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray, np.ndarray]:
    build, shape, offset = MODELS[name]
    model = build(seed=0)
    x = (offset + np.random.default_rng(1).standard_normal(shape)).astype(np.float32)
    (ref,) = onnxruntime_outputs(model, {"x": x})
    (truth,) = Float64Reference(model).run({"x": x})
    return model, x, ref, truth


def _check(ours: np.ndarray, ref: np.ndarray, truth: np.ndarray) -> None:
    scale = float(np.abs(truth).max())
    assert ours.shape == truth.shape
    assert np.abs(ours - truth).max() <= TRUTH * scale
    assert np.abs(ours - ref).max() <= TRUTH * scale + np.abs(ref - truth).max()


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("name", list(MODELS))
def test_in_process_plans_match_float64(name: str, sdk: str) -> None:
    model, x, ref, truth = _case(name)
    queue = load_queue(model)
    for plan in (per_layer(queue, mp=2), fuse_all(queue, mp=2)):
        _check(PlanRunner(queue, plan, sdk=sdk).run([x])[queue.outputs[0]], ref, truth)


@pytest.mark.parametrize("sdk", SDKS)
def test_emitted_speech_encoder_session(sdk: str, tmp_path: Path) -> None:
    model, x, ref, truth = _case("speech_encoder")
    out = tmp_path / "session"
    compile_model(model, out, plan="fuse-all")
    text = (out / "session.cpp").read_text()
    # The 1-D convolutions are the 2-D ConvLayer with a kernel of height 1; the group norm
    # is the LayerNorm layer over the trailing axis of the grouped view.
    assert "pz::Conv{32, {1, 10}}.stride(1, 2)" in text
    assert "pz::LayerNormLayer" in text
    build_session(out, sdk=sdk)
    _check(run_session(out, [x]).outputs[0], ref, truth)
