"""The float64 reference: every operator the frontend maps agrees with onnxruntime on
well-conditioned inputs (so the widening and the replaced kernels compute the right thing),
and the reference evaluator's own defects stay fixed."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.accuracy.truth import Float64Reference, ReferenceUnavailable, float64_model
from paleozoic_testing.precision import kind_cases, relative_error, single_node
from paleozoic.accuracy.verify import onnxruntime_session

# Well-conditioned single operators: fp32 onnxruntime is within a few roundings of the
# truth, so a reference that computes something else shows up far above this.
AGREE = 1e-5
# batchnorm_cancelling and instancenorm_1d_offset are built so that fp32 cancels
# catastrophically: onnxruntime's error is large there by design (measured in
# tests/testing/test_precision.py).
ILL_CONDITIONED = {"batchnorm_cancelling", "instancenorm_1d_offset"}


@pytest.mark.parametrize("case", [c for c in kind_cases(0) if c.name not in ILL_CONDITIONED],
                         ids=lambda c: c.name)
def test_reference_agrees_with_onnxruntime(case):
    truth = Float64Reference(case.model).run(case.feeds)[0]
    assert truth.dtype == np.float64
    ort = onnxruntime_session(case.model, optimize=False).run(None, case.feeds)[0]
    assert relative_error(ort, truth) < AGREE


def _zoo_like(op_type: str, opset: int, x: np.ndarray, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, list(x.shape))], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


def test_pre_13_softmax_flattens_at_axis():
    """Opset < 13 Softmax normalises over all axes from `axis` on (the zoo's squeezenet
    ends in one on [1, 1000, 1, 1]); the reference evaluator knows only the later form."""
    x = np.random.default_rng(0).standard_normal((2, 5, 1, 3)).astype(np.float32)
    model = _zoo_like("Softmax", 9, x, axis=1)
    got = Float64Reference(model).run({"x": x})[0]
    flat = x.reshape(2, -1).astype(np.float64)
    want = np.exp(flat) / np.exp(flat).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got.reshape(2, -1), want, rtol=1e-12)


def test_lrn_sums_over_channels():
    x = np.random.default_rng(1).standard_normal((1, 6, 2, 2)).astype(np.float32) * 3
    model = _zoo_like("LRN", 13, x, size=3, alpha=0.5, beta=0.75, bias=1.0)
    got = Float64Reference(model).run({"x": x})[0]
    x64 = x.astype(np.float64)
    sq = np.zeros_like(x64)
    for c in range(6):
        sq[:, c] = np.square(x64[:, max(0, c - 1):c + 2]).sum(axis=1)
    np.testing.assert_allclose(got, x64 / (1.0 + 0.5 / 3 * sq) ** 0.75, rtol=1e-12)


def test_opset9_batchnorm_with_momentum_is_inference():
    """paddle2onnx writes `momentum` on inference BatchNormalization nodes."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    params = {"s": rng.uniform(0.5, 2, 3), "b": rng.standard_normal(3),
              "m": rng.standard_normal(3), "v": rng.uniform(0.5, 2, 3)}
    node = helper.make_node("BatchNormalization", ["x", *params], ["y"], epsilon=1e-5,
                            momentum=0.9)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    got = Float64Reference(model).run({"x": x})[0]
    ort = onnxruntime_session(model).run(None, {"x": x})[0]
    assert relative_error(ort, got) < AGREE


def test_widening_covers_casts_and_constants():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
                 np.full((2, 3), 1 / 3, np.float32))),
             helper.make_node("Cast", ["x"], ["xc"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["xc", "c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 3])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    wide = float64_model(model)
    assert wide.graph.input[0].type.tensor_type.elem_type == TensorProto.DOUBLE
    assert wide.graph.node[1].attribute[0].i == TensorProto.DOUBLE
    got = Float64Reference(model).run({"x": x})[0]
    # The constant is float32's 1/3, widened exactly, not float64's.
    np.testing.assert_array_equal(got, x.astype(np.float64) + np.float64(np.float32(1 / 3)))


def test_unrunnable_model_is_reported_as_unavailable():
    x = np.zeros((1, 3), np.float32)
    model = _zoo_like("NoSuchOp", 13, x)
    with pytest.raises(ReferenceUnavailable):
        Float64Reference(model).run({"x": x})


def test_conv_matches_reference_loops_on_awkward_geometry():
    """The vectorised Conv and pools against onnx's own (slow, looped) implementations:
    groups, dilation, asymmetric pads, stride, ceil_mode and count_include_pad."""
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 9, 8))
    cases = [
        single_node("conv", "Conv", {"x": x}, {"w": rng.standard_normal((4, 3, 3, 2)),
                                               "b": rng.standard_normal(4)},
                    group=2, dilations=[2, 1], pads=[1, 0, 2, 1], strides=[2, 3]),
        single_node("conv_same", "Conv", {"x": x}, {"w": rng.standard_normal((6, 1, 3, 3))},
                    group=6, auto_pad="SAME_LOWER", strides=[2, 2]),
        single_node("avg", "AveragePool", {"x": x}, kernel_shape=[3, 2], strides=[2, 2],
                    pads=[1, 0, 1, 1], ceil_mode=1, count_include_pad=1),
        single_node("avg_excl", "AveragePool", {"x": x}, kernel_shape=[3, 3],
                    strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
        single_node("max", "MaxPool", {"x": x}, kernel_shape=[2, 3], strides=[2, 2],
                    pads=[0, 1, 1, 1], ceil_mode=1, dilations=[2, 1]),
    ]
    for case in cases:
        wide = float64_model(case.model)
        got = Float64Reference(case.model).run({"x": x.astype(np.float32)})[0]
        x32 = {"x": x.astype(np.float32).astype(np.float64)}
        want = ReferenceEvaluator(wide).run(None, x32)[0]
        assert got.shape == want.shape, case.name
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=case.name)


def test_maxpool_indices_and_training_batchnorm_are_evaluated() -> None:
    """The two forms the fast kernels do not cover run the reference's own algorithms."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 2, 4, 4])], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    y, i = Float64Reference(model).run({"x": x})
    ort_y, ort_i = onnxruntime_session(model).run(None, {"x": x})
    np.testing.assert_array_equal(i, ort_i)
    assert relative_error(ort_y, y) == 0.0

    params = {"s": np.ones(2), "b": np.zeros(2), "m": np.zeros(2), "v": np.ones(2)}
    node = helper.make_node("BatchNormalization", ["x", *params], ["y", "rm", "rv"],
                            training_mode=1, momentum=0.5)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "rm", "rv")],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    y, running_mean, _ = Float64Reference(model).run({"x": x})
    batch_mean = x.astype(np.float64).mean(axis=(0, 2, 3))
    np.testing.assert_allclose(running_mean, 0.5 * batch_mean, rtol=1e-12)
    np.testing.assert_allclose(y.mean(axis=(0, 2, 3)), 0.0, atol=1e-12)


def test_global_max_pool_of_a_1d_input_is_over_its_length() -> None:
    """onnx's own GlobalMaxPool reduced C and L of an [N, C, L] input."""
    x = np.random.default_rng(4).standard_normal((2, 3, 5)).astype(np.float32)
    got = Float64Reference(_zoo_like("GlobalMaxPool", 17, x)).run({"x": x})[0]
    np.testing.assert_array_equal(got, x.astype(np.float64).max(axis=2, keepdims=True))


def test_group_normalization_is_float64_two_pass() -> None:
    """GroupNormalization-21's function body computes in float32 (its stash type); the
    reference takes the float64 truth, per-channel scale and bias, a large mean."""
    rng = np.random.default_rng(5)
    x = (1e4 + rng.standard_normal((2, 6, 40))).astype(np.float32)
    s, b = rng.uniform(0.5, 2, 6), rng.standard_normal(6)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3,
                            epsilon=1e-5)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, list(x.shape))], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, list(x.shape))],
        [numpy_helper.from_array(s.astype(np.float32), "s"),
         numpy_helper.from_array(b.astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    got = Float64Reference(model).run({"x": x})[0]
    g = x.astype(np.float64).reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    want = want.reshape(x.shape) * s.astype(np.float32)[:, None] + b.astype(np.float32)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_gather_elements_over_more_than_64_positions_matches_onnxruntime() -> None:
    # onnx's own kernel goes through numpy.choose, limited to 64 choices.
    rng = np.random.default_rng(0)
    data = rng.normal(size=(1, 300, 4)).astype(np.float32)
    indices = rng.integers(-300, 300, size=(1, 50, 4)).astype(np.int64)
    graph = helper.make_graph(
        [helper.make_node("GatherElements", ["data", "indices"], ["out"], axis=1)], "g",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 300, 4]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [1, 50, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 50, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"data": data, "indices": indices}
    (ours,) = Float64Reference(model).run(feeds)
    (theirs,) = onnxruntime_session(model).run(None, feeds)
    np.testing.assert_array_equal(ours, theirs.astype(np.float64))
