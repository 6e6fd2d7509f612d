"""Data-parallel sessions, emitted both ways: built with g++, run, matched against
onnxruntime and bit-identical to the same plan at data parallelism 1, with the device time
the device model prices the plan at and a throughput line."""

from __future__ import annotations

import re

import numpy as np
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.ir import Plan
from paleozoic.optimize import per_layer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.plans import fuse_all
from paleozoic.passes import run_passes
from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.accuracy.inputs import random_inputs

from helpers import onnxruntime_outputs
from ir.test_plan_data_parallel import batched


def _total_us(report: str) -> float:
    return float(re.search(r"total device time: ([0-9.]+) us", report).group(1))


@pytest.mark.parametrize("emit", ["wrapper", "raw"])
def test_data_parallel_session_matches_dp1_and_onnxruntime(small_cnn, tmp_path, emit) -> None:
    model = batched(small_cnn)
    queue = run_passes(import_onnx(model, batch=32))
    x = random_inputs(model, 0, shapes={"x": (32, 3, 16, 16)})["x"] * np.float32(10)
    outputs, reports, expected = {}, {}, {}
    for dp in (1, 4):
        plan = fuse_all(queue) if emit == "wrapper" else per_layer(queue)
        for block in plan.blocks:
            block.mp = 8
        plan.data_parallelism = dp
        path = tmp_path / f"plan{dp}.json"
        path.write_text(plan.to_json())
        out = tmp_path / f"dp{dp}"
        compile_model(model, out, plan=path, batch=32, emit=emit)
        source = (out / "session.cpp").read_text()
        assert ("kDataParallelism = 4" in source) == (dp == 4)
        build_session(out)
        result = run_session(out, [x])
        outputs[dp], reports[dp] = result.outputs[0], result.report
        expected[dp] = DeviceModelOracle(queue).plan_cost(Plan.from_json(path.read_text()))
        assert _total_us(result.report) == pytest.approx(expected[dp], rel=1e-3, abs=0.1)
        assert f"(batch 32, data parallelism {dp})" in result.report
    np.testing.assert_array_equal(outputs[1], outputs[4])
    ref = onnxruntime_outputs(model, {"x": x})[0]
    np.testing.assert_allclose(outputs[4], ref.reshape(outputs[4].shape), rtol=1e-4, atol=1e-5)
    if emit == "wrapper":  # fused: four groups of 8 frames take less time than one of 32
        assert expected[4] < expected[1] - 0.5
