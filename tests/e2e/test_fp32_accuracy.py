"""A RegNetY-style network (grouped convolutions with 8 channels per group, squeeze-and-
excite gates, residual Adds; BatchNorm folded into the convolutions) stays as accurate as
onnxruntime against float64 on standard-normal and uniform inputs: the regression test for
the case where a few-times-worse per-op error became a wrong answer on RegNetY-400MF."""

from __future__ import annotations

from pathlib import Path

import pytest

from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.blocks import regnety_stages
from paleozoic.accuracy.inputs import random_inputs
from paleozoic.accuracy.verify import TRUTH_FACTOR, ULP, onnxruntime_session, truth_error


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_regnety_stages_error_against_float64(plan: str, tmp_path: Path) -> None:
    model = regnety_stages(seed=0)
    out = tmp_path / "session"
    compile_model(model, out, plan=plan)
    build_session(out)
    truth = Float64Reference(model)
    optimised, plain = onnxruntime_session(model), onnxruntime_session(model, optimize=False)
    for distribution in ("normal", "uniform"):
        for seed in range(3):
            feeds = random_inputs(model, seed, None, distribution)
            want = truth.run(feeds)[0]
            ours = truth_error(run_session(out, list(feeds.values())).outputs[0], want)
            ort = max(truth_error(optimised.run(None, feeds)[0], want),
                      truth_error(plain.run(None, feeds)[0], want))
            assert ours <= TRUTH_FACTOR * ort + ULP, \
                f"{distribution} seed {seed}: {ours:.2e} against float64, onnxruntime {ort:.2e}"
