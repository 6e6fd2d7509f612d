"""The frontend's integer inputs: int64/int32/uint8 inputs keep their type in the queue,
Cast and ArgMax become host layers, a reshape of an integer tensor is a host copy, a float
layer reading an integer tensor is refused naming the node, and so are input types and
attributes the session cannot take. A plan fusing a host layer is refused by name."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.ir import Plan, PlannedBlock
from paleozoic.ir.plan import PlanError
from paleozoic.optimize import fusible_kinds
from paleozoic.pipeline import load_queue


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _mask_model(elem: int = TensorProto.INT64) -> onnx.ModelProto:
    return _model(
        [helper.make_node("Unsqueeze", ["mask", "axes"], ["m4"], name="unsqueeze"),
         helper.make_node("Cast", ["m4"], ["mf"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("Relu", ["mf"], ["y"], name="relu")],
        [helper.make_tensor_value_info("mask", elem, [2, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1, 6])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])


@pytest.mark.parametrize("elem, dtype", [(TensorProto.INT64, "int64"),
                                         (TensorProto.INT32, "int32"),
                                         (TensorProto.UINT8, "uint8")])
def test_integer_input_types_reach_the_queue(elem: int, dtype: str) -> None:
    queue = load_queue(_mask_model(elem))
    assert [(t.name, t.dtype) for t in queue.inputs] == [("mask", dtype)]
    kinds = [(layer.name, layer.kind, queue.tensors[layer.output].dtype) for layer in queue.layers]
    # The Unsqueeze (a host copy) merged into the Cast (paleozoic.passes.host).
    assert kinds == [("cast", "HostCast", "float32"), ("relu", "Active", "float32")]
    assert queue.layers[0].inputs == ["mask"] and queue.layers[0].onnx_nodes == ["unsqueeze",
                                                                                 "cast"]


def test_float_layer_reading_integers_is_refused() -> None:
    model = _model([helper.make_node("Relu", ["ids"], ["y"], name="relu_ids")],
                   [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 3])])
    with pytest.raises(UnsupportedModelError, match=r"relu_ids.*int64 tensor 'ids'"):
        load_queue(model)


def test_unsupported_input_type_is_refused() -> None:
    model = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
                   [helper.make_tensor_value_info("x", TensorProto.INT16, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(UnsupportedModelError, match="input 'x' is int16; inputs must be"):
        load_queue(model)


def test_argmax_select_last_index_is_refused() -> None:
    model = _model([helper.make_node("ArgMax", ["x"], ["y"], name="am", axis=1,
                                     select_last_index=1)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 1])])
    with pytest.raises(UnsupportedModelError, match="select_last_index=1"):
        load_queue(model)


def test_plan_fusing_a_host_layer_is_refused() -> None:
    queue = load_queue(_mask_model())
    names = [layer.name for layer in queue.layers]
    plan = Plan([PlannedBlock("b1", names, mp=4, fuse=True)])
    with pytest.raises(PlanError, match=r"layer 'cast' \(HostCast\) cannot join a fusion op"):
        plan.validate(queue, fusible_kinds())


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_huggingface_mask_forms_run_on_the_host(exporter: str) -> None:
    """transformers 5's BertModel export: Cast(mask, bool), Flatten, Gather by arange,
    Reshape (the dynamo exporter: GatherND by the coordinates (0, j), a reshape too), And
    with an all-true constant, Expand, Where(mask, 0, -inf) added to the scores, and
    Where(IsNaN(p), 0, p) after Softmax: two HostSelect layers and host copies, matching
    onnxruntime (the padded keys get no weight)."""
    import numpy as np
    import onnxruntime as ort

    from paleozoic.pipeline import resolve_plan
    from paleozoic.runner.plan_runner import PlanRunner
    from paleozoic_testing.host import hf_masked_softmax

    s = 6
    model = hf_masked_softmax(seq=s, exporter=exporter)
    queue = load_queue(model)
    assert [layer.kind for layer in queue.layers].count("HostSelect") == 2
    mask = np.array([[1, 1, 1, 1, 0, 0]])
    scores = np.random.default_rng(0).standard_normal((1, 2, s, s)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"mask": mask,
                                                                      "scores": scores})[0]
    for plan in ("per-layer", "fuse-all"):
        ours = next(iter(PlanRunner(queue, resolve_plan(queue, plan)).run(
            [mask, scores]).values()))
        np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-7)
        assert (ours[..., 4:] == 0).all()


def _topk_model(outputs: list[str], **attrs) -> onnx.ModelProto:
    shape = [2, 5, 7]
    shape[attrs.get("axis", -1)] = 3
    return _model([helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="top",
                                    **attrs)],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 7])],
                  [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "indices"
                                                 else TensorProto.FLOAT, shape)
                   for o in outputs],
                  [helper.make_tensor("k", TensorProto.INT64, [1], [3])])


def test_topk_becomes_a_host_layer_per_output_read() -> None:
    queue = load_queue(_topk_model(["indices"], axis=1, largest=0))
    assert [(layer.name, layer.kind, dict(layer.op.attrs)) for layer in queue.layers] == [
        ("top_indices", "HostTopK", {"axis": 1, "k": 3, "largest": False,
                                     "output": "indices"})]
    assert queue.tensors[queue.layers[0].output].dtype == "int64"
    assert queue.tensors[queue.layers[0].output].shape == (2, 3, 7)
    both = load_queue(_topk_model(["values", "indices"]))
    assert [(layer.name, layer.op.attrs["output"]) for layer in both.layers] == [
        ("top", "values"), ("top_indices", "indices")]


def test_topk_unsorted_is_refused() -> None:
    with pytest.raises(UnsupportedModelError, match=r"top.*sorted=0"):
        load_queue(_topk_model(["values"], sorted=0))
