"""move_products_after_their_inputs: a gate's Mul that TVM binds after unrelated layers (a
second branch's gate) moves up to just after its inputs, so x * g(x) is one run the oneDNN
SDK can fuse; the queue stays in dependency order and the numbers do not change."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.plan_runner import PlanRunner


def _two_hardswish_branches():
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((8, 8, 1, 1)) * 0.5).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("HardSwish", ["c"], ["h"], name="hswish"),
             helper.make_node("HardSwish", ["x"], ["hx"], name="hswish_in"),
             helper.make_node("Add", ["h", "hx"], ["y"], name="sum")]
    graph = helper.make_graph(
        nodes, "gates", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])],
        [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_gate_products_follow_their_gates() -> None:
    model = _two_hardswish_branches()
    queue = load_queue(model)
    names = [layer.name for layer in queue.layers]
    for gate in ("hswish", "hswish_in"):
        assert names.index(f"{gate}_mul") == names.index(f"{gate}_scale") + 1, names
    seen = {t.name for t in queue.inputs}
    for layer in queue.layers:  # dependency order
        assert all(name in seen for name in layer.inputs), layer.name
        seen.add(layer.output)
    x = (np.random.default_rng(0).standard_normal((1, 8, 6, 6)) * 4).astype(np.float32)
    ours = next(iter(PlanRunner(queue, resolve_plan(queue, "fuse-all")).run([x]).values()))
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)
