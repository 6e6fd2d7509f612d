"""Helpers shared by test modules (imported as `helpers`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.testing.zoo import random_inputs
from paleozoic.verify import reference_outputs


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list:
    return reference_outputs(model, feeds)


def compile_build_compare(model: onnx.ModelProto, out: Path, plan: str = "per-layer",
                          seed: int = 0, rtol: float = 1e-3, atol: float = 1e-5) -> str:
    """Compiles, builds and runs the session; asserts it matches onnxruntime; returns the
    session's report."""
    compile_model(model, out, plan=plan)
    build_session(out)
    feeds = random_inputs(model, seed)
    result = run_session(out, list(feeds.values()))
    refs = onnxruntime_outputs(model, feeds)
    assert len(result.outputs) == len(refs)
    for ours, ref in zip(result.outputs, refs):
        ref = ref.reshape(ours.shape)
        err = float(np.abs(ours - ref).max())
        assert np.allclose(ours, ref, rtol=rtol, atol=atol), f"max abs error {err}"
    return result.report
