"""A ViT in small (paleozoic_testing.sequence.vit_block: patch-embedding Conv, Reshape,
Transpose, the class token concatenated before the patch tokens as a constant operand of
ConcatConstant, position embedding, an encoder layer, LayerNorm, the class token's row, the
head) against onnxruntime and float64, per layer and fused, at batch 1 and 2 (the token is
expanded over the batch), in-process and as one g++-built session."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from helpers import runtime_outputs

from paleozoic.pipeline import build_session, compile_model, load_queue, run_session
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.sequence import vit_block
from paleozoic.accuracy.verify import reference_outputs

logger = logging.getLogger(__name__)


def _relative(x: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(x.reshape(truth.shape) - truth).max() / np.abs(truth).max())


def _case(batch: int, class_token: str = "expand"):
    model = vit_block(seed=batch, batch=batch, class_token=class_token)
    # Large-magnitude pixels: the LayerNorms and the softmax see wide ranges.
    x = (np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)) * 4).astype(
        np.float32)
    truth = Float64Reference(model).run({"x": x})[0]
    return model, x, truth, reference_outputs(model, {"x": x})[0]


@pytest.mark.parametrize("class_token", ["expand", "constant", "last"])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_runtime_matches_onnxruntime_and_float64(plan: str, batch: int,
                                                class_token: str) -> None:
    model, x, truth, ort = _case(batch, class_token)
    queue = load_queue(model)
    (concat,) = [layer for layer in queue.layers if layer.kind == "ConcatConstant"]
    assert concat.op.attrs["constant_shape"] == [batch, 1, 32]
    assert concat.op.attrs["constant_at"] == (1 if class_token == "last" else 0)
    ours = runtime_outputs(queue, [x], plan)
    error, ort_error = _relative(ours, truth), _relative(ort, truth)
    logger.info("vit %s batch %d %s: vs float64 %.2e (onnxruntime %.2e)", plan, batch,
                class_token, error, ort_error)
    assert error <= 2 * ort_error + 1e-7
    assert _relative(ours, ort) < 1e-5


def test_emitted_session_batch_2(tmp_path) -> None:
    model, x, truth, ort = _case(2)
    out = compile_model(model, tmp_path / "out", plan="fuse-all")
    source = (out / "session.cpp").read_text()
    assert "/*constant=*/{2, 1, 32}, /*constant_at=*/0};" in source
    build_session(out)
    ours = run_session(out, [x]).outputs[0]
    assert _relative(ours, truth) <= 2 * _relative(ort, truth) + 1e-7
    assert _relative(ours, ort) < 1e-5
