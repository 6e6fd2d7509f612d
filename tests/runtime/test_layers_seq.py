"""The sequence-model kinds (BatchDot, Softmax and LogSoftmax on any axis, LayerNorm, Reduce,
Unary: sqrt, rsqrt, pow, erf, gelu, gelu_tanh, exp, log, abs, neg, sin, cos;
Binary pow) on the runtime: against the float64 truth and onnxruntime with
stressing inputs (standard normal, large magnitudes, long reductions), fused and unfused, in
fp16 blocks, and the SDK's refusals as errors naming the layer."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ops import KINDS
from paleozoic.pipeline import Precision, import_onnx, resolve_plan, with_precision
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.precision import PrecisionCase, single_node
from paleozoic.accuracy.verify import reference_outputs


def _cases() -> list[PrecisionCase]:
    rng = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    return [
        single_node("softmax_last_large", "Softmax", {"x": normal(2, 4, 1000) * 30}, axis=-1),
        single_node("softmax_middle", "Softmax", {"x": normal(2, 300, 5) * 10}, axis=1),
        single_node("softmax_axis0", "Softmax", {"x": normal(500, 3) * 10}, axis=0),
        single_node("batch_dot_long", "MatMul", {"a": normal(2, 3, 8, 4096),
                                                 "b": normal(2, 3, 4096, 8)}),
        single_node("batch_dot_broadcast_large", "MatMul", {"a": normal(2, 1, 8, 64) * 1e3,
                                                            "b": normal(4, 64, 5) * 1e3}),
        single_node("layer_norm_large_mean", "LayerNormalization",
                    {"x": normal(4, 6, 768) * 100 + 1e4}, {"s": normal(768), "b": normal(768)},
                    axis=-1, epsilon=1e-5),
        single_node("layer_norm_two_axes", "LayerNormalization", {"x": normal(2, 6, 8, 16)},
                    {"s": normal(8, 16), "b": normal(8, 16)}, axis=-2),
        single_node("erf", "Erf", {"x": normal(4, 1000) * 3}),
        single_node("gelu", "Gelu", {"x": normal(4, 1000) * 5}, opset=20),
        single_node("gelu_tanh", "Gelu", {"x": normal(4, 1000) * 5}, opset=20,
                    approximate="tanh"),
        single_node("sqrt_large", "Sqrt", {"x": np.abs(normal(4, 1000)) * 1e4}),
        single_node("pow2", "Pow", {"x": normal(4, 1000) * 100}, {"e": np.array(2.0)}),
        single_node("pow_half", "Pow", {"x": np.abs(normal(4, 1000))}, {"e": np.array(0.5)}),
        single_node("pow3", "Pow", {"x": normal(4, 1000)}, {"e": np.array(3.0)}),
        # Long rows of large values with a large common offset: a float accumulator loses
        # the small terms; the sums run in double.
        single_node("reduce_sum_long_large", "ReduceSum",
                    {"x": normal(4, 10000) * 1e3 + 1e6}, opset=11, axes=[1], keepdims=0),
        single_node("reduce_mean_long_cancelling", "ReduceMean",
                    {"x": normal(3, 10000, 2) * 1e5}, axes=[1], keepdims=1),
        single_node("reduce_mean_two_axes", "ReduceMean", {"x": normal(2, 30, 4, 50) * 10},
                    axes=[1, 3], keepdims=0),
        single_node("reduce_max_middle", "ReduceMax", {"x": normal(2, 500, 7) * 1e3},
                    axes=[1], keepdims=1),
        single_node("reduce_min_all", "ReduceMin", {"x": normal(3, 40, 5)}, keepdims=1),
        single_node("reduce_prod", "ReduceProd", {"x": 1.0 + normal(6, 40) * 0.05},
                    axes=[-1], keepdims=0),
        single_node("log_softmax_last_large", "LogSoftmax", {"x": normal(2, 4, 1000) * 30},
                    axis=-1),
        single_node("log_softmax_axis0", "LogSoftmax", {"x": normal(500, 3) * 10}, axis=0),
        single_node("exp", "Exp", {"x": normal(4, 1000) * 20}),
        single_node("log_wide_range", "Log", {"x": np.exp(normal(4, 1000) * 20)}),
        single_node("abs", "Abs", {"x": normal(4, 1000) * 1e4}),
        single_node("neg", "Neg", {"x": normal(4, 1000) * 1e4}),
        # Rotary angles: positions up to 2048 times frequencies up to 1 (large arguments).
        single_node("sin", "Sin", {"x": normal(4, 1000) * 500}),
        single_node("cos", "Cos", {"x": normal(4, 1000) * 500}),
        single_node("reciprocal", "Reciprocal", {"x": normal(4, 1000) * 1e3}),
        single_node("pow_tensor", "Pow", {"x": np.abs(normal(4, 1000)) * 10,
                                          "e": normal(4, 1000) * 3}),
        single_node("pow_tensor_broadcast", "Pow", {"x": normal(4, 1000) * 3,
                                                    "e": np.array([[2.0], [3.0], [-1.0],
                                                                   [4.0]], np.float32)}),
    ]


CASES = _cases()


def _run(case: PrecisionCase, plan: str, precision: Precision | None = None) -> np.ndarray:
    queue = import_onnx(case.model)
    resolved = resolve_plan(queue, plan)
    if precision is not None:
        resolved = with_precision(resolved, precision)
    out = PlanRunner(queue, resolved).run(list(case.feeds.values()))
    return next(iter(out.values()))


def _relative(x: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(x.reshape(truth.shape) - truth).max() / np.abs(truth).max())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_matches_float64_at_onnxruntime_level(case: PrecisionCase, plan: str) -> None:
    truth = Float64Reference(case.model).run(case.feeds)[0]
    ort = reference_outputs(case.model, case.feeds)[0]
    ours = _run(case, plan)
    # Reductions in double: the error is one float rounding, never above onnxruntime's.
    assert _relative(ours, truth) <= max(_relative(ort, truth), 1.2e-7) * 1.01
    assert _relative(ours, ort) < 4e-6


@pytest.mark.parametrize("case", [c for c in CASES if c.name in (
    "softmax_middle", "batch_dot_long", "layer_norm_two_axes", "erf", "gelu", "gelu_tanh",
    "pow_half", "pow3", "reduce_mean_two_axes", "reduce_max_middle", "log_softmax_axis0",
    "reciprocal", "pow_tensor_broadcast")], ids=lambda c: c.name)
def test_fp16_block_error(case: PrecisionCase) -> None:
    """In an fp16 block: inputs and outputs rounded to binary16, the op in fp32 between."""
    truth = Float64Reference(case.model).run(case.feeds)[0]
    assert _relative(_run(case, "fuse-all", Precision("fp16")), truth) < 2e-3


def test_fp16_overflow_is_inf_like_the_device() -> None:
    """x^2 of 1e4 is past binary16's 65504."""
    case = next(c for c in CASES if c.name == "pow2")
    assert np.isinf(_run(case, "per-layer", Precision("fp16"))).any()


def _build(kind: str, shapes: list[list[int]], **attrs: object):
    from paleozoic import _runtime as rt

    session = rt.Session()
    inputs = [session.input(f"x{i}", shape) for i, shape in enumerate(shapes)]
    spec = KINDS[kind]
    return session, spec.build_runtime(session, "seq_layer", spec.complete_attrs(attrs),
                                       inputs)


def test_batch_dot_transposes_and_broadcasts(run_layer, rng) -> None:
    a = rng.standard_normal((3, 1, 7, 5)).astype(np.float32)   # trans_a: [.., k=7, m=5]
    b = rng.standard_normal((4, 6, 7)).astype(np.float32)      # trans_b: [.., n=6, k=7]

    def build(s, x0, x1):
        return KINDS["BatchDot"].build_runtime(s, "bd", {"trans_a": True, "trans_b": True},
                                               [x0, x1])

    out = run_layer(build, a, b)
    want = np.swapaxes(a, -1, -2).astype(np.float64) @ np.swapaxes(b, -1, -2)
    assert out.shape == (3, 4, 5, 6)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind, shapes, attrs, words", [
    ("BatchDot", [[2, 3, 4], [2, 5, 6]], {}, "reduced axes differ"),
    ("BatchDot", [[2, 3, 4], [3, 4, 6]], {}, "do not broadcast"),
    ("BatchDot", [[4], [4, 6]], {}, "rank >= 2"),
    ("LayerNorm", [[2, 3, 4]], {"axis": 5}, "axis"),
    ("LayerNorm", [[2, 3, 4]], {"axis": 2, "epsilon": -1.0}, "epsilon"),
    ("Softmax", [[2, 3, 4]], {"axis": 3}, "axis"),
    ("Unary", [[2, 3]], {"function": "cube"}, "unknown unary function"),
    ("Reduce", [[2, 3, 4]], {"op": "sum", "axes": [2, 1]}, "reduce axes"),
    ("Reduce", [[2, 3, 4]], {"op": "sum", "axes": [3]}, "reduce axes"),
    ("Reduce", [[2, 3]], {"op": "sum", "axes": [0, 1], "keepdims": False}, "0-d tensor"),
    ("Reduce", [[2, 3]], {"op": "median", "axes": [0]}, "unknown reduction"),
])
def test_bad_parameters_are_errors_naming_the_layer(kind, shapes, attrs, words) -> None:
    with pytest.raises(Exception) as err:
        _build(kind, shapes, **attrs)
    assert "seq_layer" in str(err.value) and words in str(err.value)


def test_layer_norm_weights_of_the_wrong_size_are_refused() -> None:
    _, layer = _build("LayerNorm", [[2, 3, 4]], axis=1)
    with pytest.raises(Exception) as err:
        layer.config(np.ones(4, np.float32), np.zeros(4, np.float32))
    assert "seq_layer" in str(err.value)


@pytest.mark.parametrize("shape, axis, sdk_op", [
    ((2, 3, 5), 2, "cnmlCreateNdSoftmaxOp"), ((2, 3, 5, 4), 3, "cnmlCreateSoftmaxOp"),
    ((4, 10), 1, "cnmlCreateSoftmaxOp")])
def test_softmax_sdk_op_by_rank(tmp_path, shape, axis, sdk_op) -> None:
    """cnmlDimension_t names NCHW axes: Softmax for 4-D and 2-D inputs, NdSoftmax (a plain
    axis) for other ranks, as the raw form shows."""
    from paleozoic.pipeline import compile_model

    case = single_node("sm", "Softmax", {"x": np.zeros(shape, np.float32)}, axis=axis)
    out = compile_model(case.model, tmp_path / "out", emit="raw")
    source = (out / "session.cpp").read_text()
    assert sdk_op + "(" in source
    other = {"cnmlCreateNdSoftmaxOp", "cnmlCreateSoftmaxOp"} - {sdk_op}
    assert other.pop() + "(" not in source


@pytest.mark.parametrize("axis, opset", [(-1, 17), (1, 18), (0, 17)])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_layer_norm_mean_and_inv_std_outputs(axis: int, opset: int, plan: str) -> None:
    """LayerNormalization's Mean and InvStdDev (Reduce layers beside the LayerNorm op)
    against onnxruntime and float64, on rows with a large mean."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    shape = (3, 5, 64)
    norm = tuple(shape[axis % 3:])
    x = (rng.standard_normal(shape) * 10 + 1e3).astype(np.float32)
    stats = tuple(d if i < axis % 3 else 1 for i, d in enumerate(shape))
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"],
                            name="ln", axis=axis, epsilon=1e-3)
    graph = helper.make_graph(
        [node], "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape)),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, list(stats)),
         helper.make_tensor_value_info("inv", TensorProto.FLOAT, list(stats))],
        [numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "s"),
         numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    queue = import_onnx(model)
    out = PlanRunner(queue, resolve_plan(queue, plan)).run([x])
    ours = [out[name].reshape(want.shape) for name, want in
            zip(queue.outputs, reference_outputs(model, {"x": x}))]
    ort = reference_outputs(model, {"x": x})
    truth = Float64Reference(model).run({"x": x})
    for got, o, t in zip(ours, ort, truth):
        assert _relative(got, t) <= max(_relative(o, t), 1.2e-7) * 4
        assert _relative(got, o) < 1e-5
