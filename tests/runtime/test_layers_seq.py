"""The sequence-model kinds (BatchDot, Softmax on any axis, LayerNorm, Unary: sqrt, rsqrt,
pow, erf, gelu, gelu_tanh) on the runtime: against the float64 truth and onnxruntime with
stressing inputs (standard normal, large magnitudes, long reductions), fused and unfused, in
fp16 blocks, and the SDK's refusals as errors naming the layer."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ops import KINDS
from paleozoic.pipeline import Precision, import_onnx, resolve_plan, with_precision
from paleozoic.plan_runner import PlanRunner
from paleozoic.reference import Float64Reference
from paleozoic.testing.precision import PrecisionCase, single_node
from paleozoic.verify import reference_outputs


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
    "pow_half", "pow3")], ids=lambda c: c.name)
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
