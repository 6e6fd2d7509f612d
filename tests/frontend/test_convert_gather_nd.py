"""GatherND: the numpy implementation against onnx's reference, folding of constant data,
a reshape of a run-time tensor whose constant indices pick every element in order (the
dynamo exporter's form around HuggingFace's mask: tests/frontend/test_host_inputs.py), and
refusals naming the node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from paleozoic.errors import PaleozoicError
from paleozoic.frontend.convert.layout import gather_nd
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.verify import reference_outputs


def _reference(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    node = helper.make_node("GatherND", ["data", "indices"], ["y"], batch_dims=batch_dims)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, data.shape),
                      helper.make_tensor_value_info("indices", TensorProto.INT64,
                                                    indices.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return ReferenceEvaluator(model).run(None, {"data": data, "indices": indices})[0]


@pytest.mark.parametrize("data_shape, indices_shape, batch_dims", [
    ((4, 5), (3, 2), 0),            # elements
    ((4, 5, 6), (2, 3, 1), 0),      # rows
    ((4, 5, 6), (7, 2), 0),         # slices of the last axis
    ((3, 4, 5), (3, 2, 1), 1),      # per batch element
    ((2, 3, 4, 5), (2, 3, 6, 2), 2),
    ((2, 3, 4), (2, 5, 2), 1),      # elements per batch element
])
def test_gather_nd_matches_onnx_reference(data_shape, indices_shape, batch_dims) -> None:
    rng = np.random.default_rng(sum(data_shape))
    data = rng.standard_normal(data_shape).astype(np.float32)
    depth = indices_shape[-1]
    extents = np.array(data_shape[batch_dims:batch_dims + depth])
    # Negative coordinates too: they count from the end of their axis.
    indices = rng.integers(-extents, extents, size=indices_shape).astype(np.int64)
    np.testing.assert_array_equal(gather_nd(data, indices, batch_dims),
                                  _reference(data, indices, batch_dims))


def test_gather_nd_refuses_coordinates_outside_the_data() -> None:
    with pytest.raises(ValueError, match="outside"):
        gather_nd(np.zeros((2, 3)), np.array([[0, 3]]))


def _model(data_is_input: bool, indices: np.ndarray, out_shape: list[int],
           data: np.ndarray | None = None, batch_dims: int = 0) -> onnx.ModelProto:
    """y = GatherND(data, indices) + x, or GatherND(x, indices) when data_is_input, with a
    Relu after so the output is a layer's."""
    shape = (2, 3, 4)
    inits = [numpy_helper.from_array(indices, "indices")]
    if data_is_input:
        nodes = [helper.make_node("GatherND", ["x", "indices"], ["g"], name="pick",
                                  batch_dims=batch_dims),
                 helper.make_node("Relu", ["g"], ["y"])]
    else:
        inits.append(numpy_helper.from_array(data, "data"))
        nodes = [helper.make_node("GatherND", ["data", "indices"], ["g"], name="pick",
                                  batch_dims=batch_dims),
                 helper.make_node("Add", ["x", "g"], ["y"])]
    graph = helper.make_graph(nodes, "gather_nd",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _run(model: onnx.ModelProto) -> tuple[list[str], np.ndarray, np.ndarray]:
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    queue = load_queue(model)
    ours = next(iter(PlanRunner(queue, resolve_plan(queue, "per-layer")).run([x]).values()))
    return [layer.kind for layer in queue.layers], ours, reference_outputs(model, {"x": x})[0]


def test_gather_nd_of_constants_is_folded() -> None:
    rng = np.random.default_rng(2)
    data = rng.standard_normal((5, 3, 4)).astype(np.float32)
    indices = np.array([[-1], [0]], np.int64)  # rows 4 and 0 of the data: [2, 3, 4]
    kinds, ours, want = _run(_model(False, indices, [2, 3, 4], data))
    assert "GatherND" not in kinds and not {"Gather", "Concat"} & set(kinds)
    np.testing.assert_array_equal(ours, want)


def test_gather_nd_picking_every_element_in_order_is_a_reshape() -> None:
    coords = np.stack(np.meshgrid(np.arange(2), np.arange(3), indexing="ij"), -1)  # [2, 3, 2]
    kinds, ours, want = _run(_model(True, coords.reshape(1, 6, 2), [1, 6, 4]))
    assert kinds == ["Reshape", "Active"]
    np.testing.assert_array_equal(ours.reshape(want.shape), want)


def test_gather_nd_of_a_run_time_tensor_in_another_order_is_refused() -> None:
    with pytest.raises(PaleozoicError, match="'pick'.*every element in order"):
        load_queue(_model(True, np.array([[1, 0], [0, 0]], np.int64), [2, 4]))
