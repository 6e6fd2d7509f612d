"""A transformer encoder layer (paleozoic_testing.sequence: LayerNorm, Q/K/V by constant
MatMuls, BatchDot(Q, K^T), scale, Softmax(axis=-1), BatchDot(., V), residual, LayerNorm,
MatMul, GELU, MatMul, residual) compiled to C++, built with g++, run, and compared with
onnxruntime and the float64 truth, per layer and fused; in fp16 (the emitted session equals
the runtime's run of the plan) with its error against fp32 measured."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from paleozoic.ir.plan import Precision
from paleozoic.pipeline import (build_session, compile_model, load_queue, resolve_plan,
                                run_session, with_precision)
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.sequence import encoder_layer
from paleozoic.accuracy.verify import reference_outputs

logger = logging.getLogger(__name__)


def _relative(x: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(x.reshape(truth.shape) - truth).max() / np.abs(truth).max())


@pytest.fixture(scope="module")
def model_and_truth():
    model = encoder_layer(seed=0)
    x = np.random.default_rng(0).standard_normal((2, 16, 32)).astype(np.float32)
    truth = Float64Reference(model).run({"x": x})[0]
    ort = reference_outputs(model, {"x": x})[0]
    return model, x, truth, ort


@pytest.mark.parametrize("plan, precision", [
    ("fuse-all", None),
    pytest.param("per-layer", None, marks=pytest.mark.slow),
    ("fuse-all", "fp16"),
])
def test_emitted_session(model_and_truth, tmp_path, plan: str, precision: str | None) -> None:
    model, x, truth, ort = model_and_truth
    out = compile_model(model, tmp_path / "out", plan=plan, precision=precision)
    build_session(out)
    ours = run_session(out, [x]).outputs[0]
    error, ort_error = _relative(ours, truth), _relative(ort, truth)
    logger.info("encoder %s %s: vs float64 %.2e (onnxruntime %.2e), vs onnxruntime %.2e",
                plan, precision or "fp32", error, ort_error, _relative(ours, ort))
    if precision is None:
        assert error <= 1.5 * ort_error
        assert _relative(ours, ort) < 1e-6
        return
    # fp16: identical to the runtime's run of the plan, and within binary16's reach.
    queue = load_queue(model)
    runner = PlanRunner(queue, with_precision(resolve_plan(queue, plan), Precision(precision)))
    np.testing.assert_array_equal(ours.reshape(-1),
                                  next(iter(runner.run([x]).values())).reshape(-1))
    assert error < 2e-3


@pytest.mark.parametrize("gelu", ["op", "tanh", "erf", "torch_tanh"])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_runtime_fp32_and_fp16(gelu: str, plan: str) -> None:
    model = encoder_layer(seed=1, gelu=gelu)
    x = np.random.default_rng(1).standard_normal((2, 16, 32)).astype(np.float32) * 3
    truth = Float64Reference(model).run({"x": x})[0]
    ort = reference_outputs(model, {"x": x})[0]
    queue = load_queue(model)
    resolved = resolve_plan(queue, plan)
    fp32 = next(iter(PlanRunner(queue, resolved).run([x]).values()))
    fp16 = next(iter(PlanRunner(queue, with_precision(resolved, Precision.FP16)).run(
        [x]).values()))
    assert _relative(fp32, truth) <= 1.5 * _relative(ort, truth)
    assert _relative(fp16, fp32) < 2e-3


def test_raw_cnml_form(model_and_truth, tmp_path) -> None:
    """--emit raw: the CNML calls the wrapper makes (BatchDot, NdLayerNorm, Gelu, ...)
    printed as a program of their own, built and run."""
    model, x, truth, ort = model_and_truth
    out = compile_model(model, tmp_path / "out", plan="fuse-all", emit="raw")
    source = (out / "session.cpp").read_text()
    assert "cnmlCreateBatchDotOp" in source and "cnmlCreateNdLayerNormOp" in source
    build_session(out)
    ours = run_session(out, [x]).outputs[0]
    assert _relative(ours, ort) < 1e-6


def test_int8_block_runs_batch_dot_in_fp16(tmp_path) -> None:
    """In an int8 block only the fully connected layers take quantisation parameters; the
    BatchDots (two activations, no calibrated filter), LayerNorm, Softmax and GELU compute
    in fp16. The error stays at int8's level against float64."""
    from paleozoic.calibration import calibrate
    from paleozoic.calibration.params import layer_quantization

    model = encoder_layer(seed=0)
    queue = load_queue(model)
    rng = np.random.default_rng(5)
    for i in range(4):
        np.save(tmp_path / f"{i:02d}.npy", rng.standard_normal((2, 16, 32)).astype(np.float32))
    quantization = layer_quantization(queue, calibrate(queue, [tmp_path]))
    assert {layer.kind for layer in queue.layers if layer.name in quantization} == \
        {"FullyConnected"}
    x = rng.standard_normal((2, 16, 32)).astype(np.float32)
    truth = Float64Reference(model).run({"x": x})[0]
    plan = with_precision(resolve_plan(queue, "fuse-all"), Precision.INT8)
    out = next(iter(PlanRunner(queue, plan, quantization=quantization).run([x]).values()))
    assert 1e-3 < _relative(out, truth) < 5e-2
