"""ONNX Expand of run-time tensors: a float activation as Concat copies along each expanded
axis (grouped-query attention's repeated key heads; a rank extension on the way), an integer
tensor on the host; equal to onnxruntime on both SDKs and plans (copies, so exactly), and
the refusal past the copy limit."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import sdk_available
from paleozoic.accuracy.verify import reference_outputs


def _model(target: list[int] | None = None) -> onnx.ModelProto:
    kv_target = target or [1, 2, 3, 4, 5]
    nodes = [helper.make_node("Expand", ["kv", "kv_shape"], ["heads"], name="heads"),
             helper.make_node("Expand", ["row", "row_shape"], ["rows"], name="rows"),
             helper.make_node("Expand", ["ids", "ids_shape"], ["ids_rows"], name="ids_rows")]
    inits = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in (
        ("kv_shape", kv_target), ("row_shape", [2, 3, 4]), ("ids_shape", [3, 4]))]
    graph = helper.make_graph(
        nodes, "expands",
        [helper.make_tensor_value_info("kv", TensorProto.FLOAT, [1, 2, 1, 4, 5]),
         helper.make_tensor_value_info("row", TensorProto.FLOAT, [3, 1]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("heads", TensorProto.FLOAT, kv_target),
         helper.make_tensor_value_info("rows", TensorProto.FLOAT, [2, 3, 4]),
         helper.make_tensor_value_info("ids_rows", TensorProto.INT64, [3, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_expand_of_activations_and_integers(plan: str, sdk: str) -> None:
    model = _model()
    rng = np.random.default_rng(0)
    feeds = {"kv": rng.standard_normal((1, 2, 1, 4, 5)).astype(np.float32),
             "row": np.array([[np.inf], [-0.0], [np.nan]], dtype=np.float32),
             "ids": rng.integers(-9, 9, size=(1, 4)).astype(np.int64)}
    queue = load_queue(model)
    kinds = [layer.kind for layer in queue.layers]
    # heads: one Concat of 3 copies; rows: a rank-3 view, then copies on axes 0 and 2.
    assert kinds.count("Concat") == 3 and "HostArith" in kinds
    want = reference_outputs(model, feeds)
    got = PlanRunner(queue, resolve_plan(queue, plan), sdk=sdk).run(
        [feeds[n] for n in queue.onnx_input_names])
    for ours, ref in zip(got.values(), want):
        assert ours.dtype == ref.dtype
        np.testing.assert_array_equal(ours, ref)


def test_expand_beyond_the_copy_limit_is_refused() -> None:
    with pytest.raises(UnsupportedModelError, match=r"heads.*makes 300 copies"):
        load_queue(_model(target=[1, 2, 300, 4, 5]))


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
def test_a_constant_that_widens_the_result_and_rotary_angles(sdk: str) -> None:
    """Llama's decode step: run-time positions [1, 1, 1] times constant frequencies [16]
    give angles [1, 1, 16] (the position expanded first), then Sin and Cos on the device;
    within a few ulps of the float64 truth at positions up to 2048."""
    freqs = (1.0 / 10000 ** (np.arange(16) / 16)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["pos", "freqs"], ["angles"], name="angles"),
         helper.make_node("Sin", ["angles"], ["sin"], name="sin"),
         helper.make_node("Cos", ["angles"], ["cos"], name="cos")], "rotary",
        [helper.make_tensor_value_info("pos", TensorProto.FLOAT, [1, 1, 1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1, 16]) for n in ("sin",
                                                                                   "cos")],
        [numpy_helper.from_array(freqs, "freqs")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    queue = load_queue(model)
    for position in (0.0, 7.0, 2047.0):
        pos = np.full((1, 1, 1), position, dtype=np.float32)
        got = list(PlanRunner(queue, resolve_plan(queue, "fuse-all"), sdk=sdk).run(
            [pos]).values())
        angles = np.float32(position) * freqs  # fp32 product, as onnxruntime's
        for ours, truth in zip(got, (np.sin(angles.astype(np.float64)),
                                     np.cos(angles.astype(np.float64)))):
            np.testing.assert_allclose(ours.reshape(-1), truth, rtol=0, atol=4e-7)
