"""merge_host_copies: a host cast that only reshapes an integer tensor merges into the host
cast reading it (HuggingFace's Unsqueeze, Unsqueeze, Cast of the mask: one host layer); a
cast that changes the type (a narrowing, whose range check is the point) is kept."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic_testing.bert import BERT_INPUTS, bert_model


def test_mask_chain_is_one_host_layer() -> None:
    queue = load_queue(bert_model(seed=0), input_shapes={n: (2, 16) for n in BERT_INPUTS})
    mask = [layer for layer in queue.layers if layer.inputs == ["attention_mask"]]
    assert len(mask) == 1 and mask[0].kind == "HostCast"
    assert mask[0].op.attrs["to"] == "float32" and mask[0].op.attrs["shape"] == [2, 1, 1, 16]
    assert len(mask[0].onnx_nodes) == 2  # the Unsqueeze and the Cast


def test_value_changing_cast_is_not_merged() -> None:
    nodes = [helper.make_node("Cast", ["x"], ["i"], name="to_int", to=TensorProto.INT32),
             helper.make_node("Cast", ["i"], ["y"], name="to_float", to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.INT64, [2, 3])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    queue = load_queue(model)
    assert [layer.name for layer in queue.layers] == ["to_int", "to_float"]
    x = np.array([[-2**31, -1, 0], [1, 7, 2**31 - 1]], np.int64)
    ours = next(iter(PlanRunner(queue, resolve_plan(queue, "per-layer")).run([x]).values()))
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(ours, want)
