"""Converters of the sequence-model operators from TVM Relax's ONNX import: MatMul of two
activations (BatchDot; a constant 2-D B stays FullyConnected), Softmax on any axis,
LayerNormalization, Erf, Gelu (opset 20, exact and tanh), Sqrt and Pow with a constant
exponent."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.errors import PaleozoicError
from paleozoic.pipeline import import_onnx
from paleozoic.testing.precision import single_node


def _layers(case) -> list[tuple[str, dict]]:
    return [(layer.kind, dict(layer.op.attrs)) for layer in import_onnx(case.model).layers]


def _zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


def test_matmul_of_two_activations_is_a_batch_dot() -> None:
    layers = _layers(single_node("mm", "MatMul", {"a": _zeros(2, 1, 3, 5), "b": _zeros(4, 5, 6)}))
    assert layers == [("BatchDot", {"trans_a": False, "trans_b": False})]


def test_matmul_by_a_constant_stays_fully_connected() -> None:
    kinds = [k for k, _ in _layers(single_node("mm", "MatMul", {"a": _zeros(2, 3, 5)},
                                               {"w": _zeros(5, 4)}))]
    assert kinds == ["Reshape", "FullyConnected", "Reshape"]


@pytest.mark.parametrize("a, b", [((5,), (2, 5, 4)), ((2, 3, 5), (5,))])
def test_matmul_with_a_vector_reshapes_around_a_batch_dot(a, b) -> None:
    kinds = [k for k, _ in _layers(single_node("mm", "MatMul", {"a": _zeros(*a),
                                                                "b": _zeros(*b)}))]
    assert kinds == ["Reshape", "BatchDot", "Reshape"]


def test_matmul_of_two_vectors_is_refused_naming_the_node() -> None:
    with pytest.raises(PaleozoicError, match="MatMul.*scalar result"):
        _layers(single_node("mm", "MatMul", {"a": _zeros(5), "b": _zeros(5)}))


@pytest.mark.parametrize("shape, axis, want", [((2, 3, 5), -1, 2), ((500, 3), 0, 0),
                                               ((2, 3, 5, 4), 2, 2)])
def test_softmax_on_any_axis(shape, axis, want) -> None:
    assert _layers(single_node("sm", "Softmax", {"x": _zeros(*shape)}, axis=axis)) == \
        [("Softmax", {"axis": want})]


@pytest.mark.parametrize("axis, want", [(-1, 2), (-2, 1), (1, 1)])
def test_layer_normalization(axis: int, want: int) -> None:
    shape = (2, 3, 4)
    case = single_node("ln", "LayerNormalization", {"x": _zeros(*shape)},
                       {"s": np.ones(shape[want:]), "b": np.zeros(shape[want:])},
                       axis=axis, epsilon=1e-3)
    queue = import_onnx(case.model)
    (layer,) = queue.layers
    assert layer.kind == "LayerNorm" and layer.op.attrs["axis"] == want
    assert layer.op.attrs["epsilon"] == pytest.approx(1e-3)
    assert queue.weights[layer.weights["gamma"]].shape == (int(np.prod(shape[want:])),)


def test_layer_normalization_without_bias_gets_zeros() -> None:
    case = single_node("ln", "LayerNormalization", {"x": _zeros(2, 4)}, {"s": np.ones(4)})
    queue = import_onnx(case.model)
    (layer,) = queue.layers
    assert not queue.weights[layer.weights["beta"]].any()


@pytest.mark.parametrize("op, attrs, function", [
    ("Erf", {}, "erf"), ("Sqrt", {}, "sqrt"), ("Gelu", {}, "gelu"),
    ("Gelu", {"approximate": "tanh"}, "gelu_tanh")])
def test_unary_operators(op: str, attrs: dict, function: str) -> None:
    case = single_node("u", op, {"x": _zeros(2, 3)}, opset=20, **attrs)
    assert _layers(case) == [("Unary", {"function": function, "power": 1.0})]


@pytest.mark.parametrize("exponent, function, power", [
    (2.0, "pow", 2.0), (0.5, "sqrt", 1.0), (-0.5, "rsqrt", 1.0), (3.0, "pow", 3.0)])
def test_pow_by_a_constant(exponent: float, function: str, power: float) -> None:
    case = single_node("p", "Pow", {"x": _zeros(2, 3)}, {"e": np.array(exponent)})
    assert _layers(case) == [("Unary", {"function": function, "power": power})]


def test_pow_by_an_activation_is_refused() -> None:
    with pytest.raises(PaleozoicError, match="constant exponent"):
        _layers(single_node("p", "Pow", {"x": _zeros(2, 3), "e": _zeros(2, 3)}))


def _pytorch_gelu(half: float = 0.5) -> "onnx.ModelProto":
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in (("root2", np.sqrt(2.0)), ("one", 1.0), ("half", half))]
    nodes = [helper.make_node("Div", ["x", "root2"], ["d"], name="div"),
             helper.make_node("Erf", ["d"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="add"),
             helper.make_node("Mul", ["x", "a"], ["m"], name="mul"),
             helper.make_node("Mul", ["m", "half"], ["y"], name="gelu_out")]
    graph = helper.make_graph(
        nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_pytorch_erf_gelu_is_one_layer() -> None:
    queue = import_onnx(_pytorch_gelu())
    assert [(l.kind, l.op.attrs["function"], l.name) for l in queue.layers] == \
        [("Unary", "gelu", "gelu_out")]


def test_erf_gelu_form_with_other_constants_is_not_gelu() -> None:
    kinds = [l.kind for l in import_onnx(_pytorch_gelu(half=0.6)).layers]
    assert "Unary" in kinds and len(kinds) > 1


@pytest.mark.parametrize("form, function", [("op", "gelu"), ("tanh", "gelu_tanh"),
                                            ("erf", "gelu"), ("torch_tanh", "gelu_tanh")])
def test_every_gelu_form_of_the_encoder_is_one_layer(form: str, function: str) -> None:
    from paleozoic.testing.sequence import encoder_layer

    layers = import_onnx(encoder_layer(gelu=form)).layers
    unary = [l.op.attrs["function"] for l in layers if l.kind == "Unary"]
    assert unary == [function]
    assert not [l for l in layers if l.kind in ("Binary", "Active")]
