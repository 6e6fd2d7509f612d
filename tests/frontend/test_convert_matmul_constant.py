"""MatMul with a constant operand other than a 2-D weight: a constant first operand (a DETR
decoder's first queries, constant until they meet the image) as (x^T c^T)^T, and a batched
constant (one FullyConnected a batch, concatenated back), equal to onnxruntime on both SDKs
within fp32's summation noise; too many batches refused naming the count."""

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


def _model(a_shape: list[int], b_shape: list[int], constant_first: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    const = rng.standard_normal(a_shape if constant_first else b_shape).astype(np.float32)
    run_time = b_shape if constant_first else a_shape
    inputs = ["c", "x"] if constant_first else ["x", "c"]
    out = np.matmul(np.zeros(a_shape, np.float32), np.zeros(b_shape, np.float32)).shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", inputs, ["y"], name="mm")], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, run_time)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out))],
        [numpy_helper.from_array(const, "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("a_shape, b_shape, constant_first", [
    ([4, 20, 32], [4, 32, 64], True),       # per-head constant queries times keys^T
    ([20, 32], [2, 32, 64], True),          # one constant matrix for every batch
    ([2, 3, 5, 8], [3, 8, 6], False),       # a batched constant weight, broadcast batch
    ([2, 5, 8], [1, 8, 6], False),          # batch axes of 1: one 2-D weight
])
def test_matmul_with_a_constant_operand(a_shape, b_shape, constant_first, sdk) -> None:
    model = _model(a_shape, b_shape, constant_first)
    x_shape = b_shape if constant_first else a_shape
    x = np.random.default_rng(1).standard_normal(x_shape).astype(np.float32)
    (want,) = reference_outputs(model, {"x": x})
    queue = load_queue(model)
    assert "BatchDot" not in {layer.kind for layer in queue.layers}
    got = next(iter(PlanRunner(queue, resolve_plan(queue, "fuse-all"), sdk=sdk).run(
        [x]).values()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_too_many_constant_batches_are_refused() -> None:
    with pytest.raises(UnsupportedModelError, match="constant with 80 batches"):
        load_queue(_model([80, 4, 8], [80, 8, 4], constant_first=False))
