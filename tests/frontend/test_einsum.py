"""Einsum as exporters write attention (two-operand batched matrix products) rewritten into
Transpose / MatMul / Transpose before TVM: equal to onnxruntime on both SDKs; other
equations are refused naming the node and the equation."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import sdk_available
from paleozoic.accuracy.verify import reference_outputs

# equation, a's shape, b's shape, out's shape
EQUATIONS = [
    ("bhqd,bhkd->bhqk", [2, 3, 5, 4], [2, 3, 6, 4], [2, 3, 5, 6]),   # q k^T
    ("bhqk,bhkd->bhqd", [2, 3, 5, 6], [2, 3, 6, 4], [2, 3, 5, 4]),   # p v: a plain MatMul
    ("bqhd,bkhd->bhqk", [2, 5, 3, 4], [2, 6, 3, 4], [2, 3, 5, 6]),   # heads after tokens
    ("ij,jk->ik", [5, 4], [4, 6], [5, 6]),
    ("bik,bjk->bji", [2, 5, 4], [2, 6, 4], [2, 6, 5]),               # output transposed
]


def _model(equation: str, sa, sb, so) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation, name="attn")], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, sa),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, sb)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, so)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("equation,sa,sb,so", EQUATIONS, ids=[e[0] for e in EQUATIONS])
def test_batched_matmul_equations_match_onnxruntime(equation, sa, sb, so, sdk):
    model = _model(equation, sa, sb, so)
    queue = load_queue(model)
    assert "BatchDot" in [layer.kind for layer in queue.layers]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    (want,) = reference_outputs(model, {"a": a, "b": b})
    got = next(iter(PlanRunner(queue, resolve_plan(queue, "fuse-all"), sdk=sdk).run(
        [a, b]).values()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("equation,sa,sb,so,why", [
    ("bij,bjk->bk", [2, 3, 4], [2, 4, 5], [2, 5], "summed within one operand"),
    ("bii,bij->bij", [2, 3, 3], [2, 3, 4], [2, 3, 4], "a diagonal"),
    ("...ij,...jk->...ik", [2, 3, 4], [2, 4, 5], [2, 3, 5], "an ellipsis"),
    ("bhij,bhjk->bhik", [1, 2, 3, 4], [1, 2, 4, 5], [1, 2, 3, 5], None),   # fine: control
])
def test_other_equations_are_refused_naming_the_node(equation, sa, sb, so, why):
    model = _model(equation, sa, sb, so)
    if why is None:
        load_queue(model)
        return
    with pytest.raises(UnsupportedModelError, match=rf"node 'attn' \(Einsum .*{why}"):
        load_queue(model)
