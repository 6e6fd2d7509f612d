"""The emitted session's report says what computes each op: counts per kernel and, on the
oneDNN SDK, the layers left on the SDK's own C++ kernels (a slow path the user sees before
measuring it); on the mock every op is a mock kernel and nothing is flagged."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.runner.sdk import sdk_available


def _model():
    w = np.random.default_rng(0).standard_normal((8, 4, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Erf", ["r"], ["y"], name="erf")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
        [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _report(tmp_path, sdk: str) -> str:
    out = compile_model(_model(), tmp_path / sdk, plan="fuse-all")
    build_session(out, sdk=sdk)
    x = np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype(np.float32)
    return run_session(out, [x]).report


def test_mock_report_counts_mock_kernels(tmp_path):
    report = _report(tmp_path, "mock")
    kernels = report.split("kernels (SDK ops on each):")[1]
    assert "mock kernel Conv" in kernels and "mock kernel Unary" in kernels
    assert "slow paths" not in report


@pytest.mark.skipif(not sdk_available("onednn"), reason="the oneDNN SDK is not built")
def test_onednn_report_names_layers_on_mock_kernels(tmp_path):
    report = _report(tmp_path, "onednn")
    kernels = report.split("kernels (SDK ops on each):")[1]
    assert "convolution " in kernels and "(2 ops per call)" in kernels  # conv + relu
    slow = report.split("slow paths (1 layer(s)")[1]
    assert "erf (mock kernel Unary)" in slow
