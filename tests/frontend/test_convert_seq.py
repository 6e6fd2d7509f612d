"""Converters of the sequence-model operators from TVM Relax's ONNX import: MatMul of two
activations (BatchDot; a constant 2-D B stays FullyConnected), Softmax and LogSoftmax on any
axis, LayerNormalization (with its Mean and InvStdDev outputs), Erf, Gelu (opset 20, exact
and tanh), Sqrt, Exp, Log, Abs, Neg, Reciprocal, Pow with a constant or tensor exponent, the
reductions, CastLike, a broadcast Div and Sum with constants."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.errors import PaleozoicError
from paleozoic.pipeline import import_onnx, load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic_testing.precision import single_node
from paleozoic.accuracy.verify import reference_outputs


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
        [("Softmax", {"axis": want, "log": False})]
    assert _layers(single_node("lsm", "LogSoftmax", {"x": _zeros(*shape)}, axis=axis)) == \
        [("Softmax", {"axis": want, "log": True})]


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
    ("Gelu", {"approximate": "tanh"}, "gelu_tanh"), ("Exp", {}, "exp"), ("Log", {}, "log"),
    ("Abs", {}, "abs"), ("Neg", {}, "neg"), ("Sin", {}, "sin"), ("Cos", {}, "cos")])
def test_unary_operators(op: str, attrs: dict, function: str) -> None:
    case = single_node("u", op, {"x": _zeros(2, 3)}, opset=20, **attrs)
    assert _layers(case) == [("Unary", {"function": function, "power": 1.0})]


def test_reciprocal_is_pow_minus_one() -> None:
    assert _layers(single_node("r", "Reciprocal", {"x": _zeros(2, 3)})) == \
        [("Unary", {"function": "pow", "power": -1.0})]


@pytest.mark.parametrize("exponent, function, power", [
    (2.0, "pow", 2.0), (0.5, "sqrt", 1.0), (-0.5, "rsqrt", 1.0), (3.0, "pow", 3.0)])
def test_pow_by_a_constant(exponent: float, function: str, power: float) -> None:
    case = single_node("p", "Pow", {"x": _zeros(2, 3)}, {"e": np.array(exponent)})
    assert _layers(case) == [("Unary", {"function": function, "power": power})]


@pytest.mark.parametrize("e", [(2, 3), (3,), (1, 1)])
def test_pow_by_an_activation_is_a_binary_pow(e) -> None:
    assert _layers(single_node("p", "Pow", {"x": _zeros(2, 3), "e": _zeros(*e)})) == \
        [("Binary", {"op": "pow"})]


def test_pow_of_an_activation_that_broadcasts_to_the_exponent_is_refused() -> None:
    with pytest.raises(PaleozoicError, match="broadcasts the second operand"):
        _layers(single_node("p", "Pow", {"x": _zeros(3), "e": _zeros(2, 3)}))


def test_pow_by_a_constant_tensor_of_one_value_is_unary() -> None:
    case = single_node("p", "Pow", {"x": _zeros(2, 3)}, {"e": np.full((2, 3), 3.0)})
    assert _layers(case) == [("Unary", {"function": "pow", "power": 3.0})]


def test_pow_by_a_constant_tensor_of_several_values_is_refused_naming_the_node() -> None:
    case = single_node("p", "Pow", {"x": _zeros(3)}, {"e": np.array([1.0, 2.0, 3.0])})
    with pytest.raises(PaleozoicError, match="'p'.*constant exponent of shape \\(3,\\)"):
        _layers(case)


def _model(nodes: list, inputs: dict[str, tuple], outputs: list[str],
           inits: dict[str, np.ndarray] | None = None, opset: int = 18):
    """A graph of float32 inputs whose initializers keep their numpy dtype (int64 axes,
    integer exponents)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v))
                     for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint32])
def test_pow_by_an_integer_constant_is_cast_to_float_before_tvm(dtype) -> None:
    from onnx import helper

    model = _model([helper.make_node("Pow", ["x", "e"], ["y"], name="p")], {"x": (2, 3)},
                   ["y"], {"e": np.array(3, dtype)}, opset=15)
    assert [(l.kind, dict(l.op.attrs)) for l in import_onnx(model).layers] == \
        [("Unary", {"function": "pow", "power": 3.0})]


def _reduce(op: str, shape: tuple, axes: list[int] | None, keepdims: int = 1,
            opset: int = 18, **attrs: object):
    from onnx import helper

    inputs = ["x"]
    inits = {}
    if axes is not None and opset >= 18 or (op == "ReduceSum" and opset >= 13 and axes):
        inputs.append("axes")
        inits["axes"] = np.array(axes, np.int64)
    elif axes is not None:
        attrs["axes"] = axes
    node = helper.make_node(op, inputs, ["y"], name="r", keepdims=keepdims, **attrs)
    return _model([node], {"x": shape}, ["y"], inits, opset)


@pytest.mark.parametrize("op, name", [("ReduceSum", "sum"), ("ReduceMean", "mean"),
                                      ("ReduceMax", "max"), ("ReduceMin", "min"),
                                      ("ReduceProd", "prod")])
@pytest.mark.parametrize("opset", [13, 18])
def test_reductions_are_one_reduce_layer(op: str, name: str, opset: int) -> None:
    model = _reduce(op, (2, 3, 4, 5), [-1, 1], keepdims=0, opset=opset)
    assert [(l.kind, dict(l.op.attrs)) for l in import_onnx(model).layers] == \
        [("Reduce", {"op": name, "axes": [1, 3], "keepdims": False})]


def test_reduce_without_axes_reduces_every_axis_and_keeps_dims() -> None:
    (layer,) = import_onnx(_reduce("ReduceSum", (2, 3), None)).layers
    assert layer.op.attrs == {"op": "sum", "axes": [0, 1], "keepdims": True}


def test_reduce_with_empty_axes_and_noop_is_a_copy() -> None:
    model = _reduce("ReduceSum", (2, 3), [], noop_with_empty_axes=1)
    assert [l.kind for l in import_onnx(model).layers] == ["Reshape"]


def test_reduce_to_a_scalar_is_a_one_element_tensor() -> None:
    model = _reduce("ReduceMax", (2, 3), None, keepdims=0)
    queue = load_queue(model)
    assert [(l.kind, l.op.attrs) for l in queue.layers] == [
        ("Reduce", {"op": "max", "axes": [0, 1], "keepdims": True}),
        ("Reshape", {"shape": [1]})]
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    (got,) = PlanRunner(queue, resolve_plan(queue, "per-layer")).run([x]).values()
    (want,) = reference_outputs(model, {model.graph.input[0].name: x})
    assert got.shape == (1,) and want.shape == ()
    assert got[0] == want


def test_mean_and_max_over_nchw_spatial_axes_stay_pooling() -> None:
    for op, kind in (("ReduceMean", "GlobalAvgPool"), ("ReduceMax", "Pool")):
        assert [l.kind for l in import_onnx(_reduce(op, (1, 4, 5, 6), [2, 3])).layers] == \
            [kind]


def test_reduce_sum_square_is_a_multiply_and_a_sum() -> None:
    kinds = [l.kind for l in import_onnx(_reduce("ReduceSumSquare", (2, 8), [1])).layers]
    assert kinds == ["Binary", "Reduce"]


def test_layer_normalization_statistics_are_reduce_layers() -> None:
    from onnx import helper

    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"],
                            name="ln", axis=1, epsilon=1e-3)
    model = _model([node], {"x": (2, 3, 4)}, ["y", "mean", "inv"],
                   {"s": np.ones((3, 4), np.float32), "b": np.zeros((3, 4), np.float32)},
                   opset=17)
    queue = import_onnx(model)
    kinds = [l.kind for l in queue.layers]
    assert kinds[0] == "LayerNorm" and kinds.count("Reduce") == 2
    reduces = [l for l in queue.layers if l.kind == "Reduce"]
    assert all(l.op.attrs == {"op": "mean", "axes": [1, 2], "keepdims": True}
               for l in reduces)
    assert len(queue.outputs) == 3


def test_broadcast_div_is_a_reciprocal_and_a_multiply() -> None:
    case = single_node("d", "Div", {"a": _zeros(3, 5), "b": _zeros(3, 1)})
    assert _layers(case) == [("Unary", {"function": "pow", "power": -1.0}),
                             ("Binary", {"op": "mul"})]


def test_sum_with_a_constant_adds_it_as_a_bias() -> None:
    from onnx import helper

    node = helper.make_node("Sum", ["x", "one", "y"], ["z"], name="s")
    model = _model([node], {"x": (2, 3), "y": (2, 3)}, ["z"],
                   {"one": np.array(1.0, np.float32)}, opset=13)
    kinds = [l.kind for l in import_onnx(model).layers]
    assert kinds[0] == "Add" and kinds.count("Scale") == 1 and "Binary" not in kinds


def test_castlike_to_float_is_no_layer() -> None:
    from onnx import helper

    nodes = [helper.make_node("CastLike", ["x", "like"], ["c"], name="cl"),
             helper.make_node("Sqrt", ["c"], ["y"], name="sq")]
    model = _model(nodes, {"x": (2, 3)}, ["y"], {"like": np.zeros(1, np.float32)}, opset=15)
    assert [l.kind for l in import_onnx(model).layers] == ["Unary"]


def test_a_zero_dimensional_input_is_a_one_element_input() -> None:
    case = single_node("p", "Pow", {"x": np.array([1.5, -2.0, 0.5], np.float32),
                                    "e": np.array(3.0, np.float32)})
    queue = load_queue(case.model)
    assert [(i.name, i.shape) for i in queue.inputs] == [("x", (3,)), ("e", (1,))]
    (got,) = PlanRunner(queue, resolve_plan(queue, "per-layer")).run(
        list(case.feeds.values())).values()
    np.testing.assert_array_equal(got, reference_outputs(case.model, case.feeds)[0])


def _pytorch_gelu(half: float = 0.5) -> onnx.ModelProto:
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
    from paleozoic_testing.sequence import encoder_layer

    layers = import_onnx(encoder_layer(gelu=form)).layers
    unary = [l.op.attrs["function"] for l in layers if l.kind == "Unary"]
    assert unary == [function]
    assert not [l for l in layers if l.kind in ("Binary", "Active")]


def _decomposed_layer_norm(square: str, affine: bool, eps: float = 1e-5,
                           two: float = 2.0, extra_reader: bool = False):
    """LayerNorm as paddle2onnx and PyTorch before opset 17 export it, on [2, 7, 24]."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in {
        "two": two, "eps": eps, "gamma": rng.uniform(0.5, 1.5, 24),
        "beta": rng.uniform(-1, 1, 24)}.items()]
    nodes = [helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]),
             helper.make_node("Sub", ["x", "mean"], ["d"])]
    nodes.append(helper.make_node("Pow", ["d", "two"], ["sq"]) if square == "pow"
                 else helper.make_node("Mul", ["d", "d"], ["sq"]))
    nodes += [helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
              helper.make_node("Add", ["var", "eps"], ["ve"]),
              helper.make_node("Sqrt", ["ve"], ["sd"]),
              helper.make_node("Div", ["d", "sd"], ["n"])]
    out = "n"
    if affine:
        nodes += [helper.make_node("Mul", ["n", "gamma"], ["g"]),
                  helper.make_node("Add", ["beta", "g"], ["y"])]
        out = "y"
    if extra_reader:   # the centred value is also an output: not a LayerNorm any more
        nodes.append(helper.make_node("Relu", ["d"], ["r"]))
    outputs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2, 7, 24])]
    if extra_reader:
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 7, 24]))
    graph = helper.make_graph(
        nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7, 24])],
        outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("square", ["pow", "mul"])
@pytest.mark.parametrize("affine", [True, False])
def test_decomposed_layer_norm_is_one_layer(square: str, affine: bool) -> None:
    from paleozoic.accuracy.truth import Float64Reference
    from helpers import runtime_outputs

    model = _decomposed_layer_norm(square, affine)
    queue = import_onnx(model)
    assert [layer.kind for layer in queue.layers] == ["LayerNorm"]
    assert queue.layers[0].op.attrs["axis"] == 2
    assert queue.layers[0].op.attrs["epsilon"] == pytest.approx(1e-5)
    x = (np.random.default_rng(0).standard_normal((2, 7, 24)) * 50 + 20).astype(np.float32)
    got = runtime_outputs(queue, [x]).reshape(2, 7, 24)
    truth = Float64Reference(model).run({"x": x})[0]
    assert np.abs(got - truth).max() < 2e-5 * np.abs(truth).max()


def test_decomposition_with_other_constants_or_readers_is_not_a_layer_norm() -> None:
    # A cube is not a variance, and a centred value read outside is a tensor of its own:
    # both stay element-wise layers and Reduce means.
    for model in (_decomposed_layer_norm("pow", True, two=3.0),
                  _decomposed_layer_norm("pow", True, extra_reader=True)):
        kinds = [layer.kind for layer in import_onnx(model).layers]
        assert "LayerNorm" not in kinds and kinds.count("Reduce") == 2


def test_every_occurrence_of_a_pattern_is_matched() -> None:
    """Kinds are tried over the whole function one after another: each occurrence of a form
    is its own match (two chained Clips, two LayerNorms), not only the first."""
    from onnx import TensorProto, helper, numpy_helper

    first = _decomposed_layer_norm("pow", True)
    nodes = list(first.graph.node)
    renamed = []
    for node in nodes:   # a second LayerNorm on the first one's output, then two Clips
        copy = helper.make_node(node.op_type, [f"{i}_2" if i in {n.output[0] for n in nodes}
                                              else ("y" if i == "x" else i)
                                              for i in node.input],
                                [f"{node.output[0]}_2"], **{a.name: helper.get_attribute_value(a)
                                                            for a in node.attribute})
        renamed.append(copy)
    clips = [helper.make_node("Clip", ["y_2", "zero", "six"], ["c1"]),
             helper.make_node("Clip", ["c1", "zero", "six"], ["c2"])]
    inits = list(first.graph.initializer) + [
        numpy_helper.from_array(np.array(v, np.float32), k) for k, v in
        {"zero": 0.0, "six": 6.0}.items()]
    graph = helper.make_graph(
        nodes + renamed + clips, "two", list(first.graph.input),
        [helper.make_tensor_value_info("c2", TensorProto.FLOAT, [2, 7, 24])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    kinds = [layer.kind for layer in import_onnx(model).layers]
    assert kinds == ["LayerNorm", "LayerNorm", "Active", "Active"]


@pytest.mark.parametrize("cond, want", [([[True, False], [False, True]], None),
                                        ([[True, True], [True, True]], "x"),
                                        ([[False, False], [False, False]], "y")])
def test_where_between_two_activations(cond, want) -> None:
    """A constant condition that picks one side throughout is that side; a mixed one is
    refused (no select of two tensors; a 0/1 blend would turn the other side's inf to nan)."""
    from onnx import helper

    model = _model([helper.make_node("Where", ["c", "x", "y"], ["z"], name="wh")],
                   {"x": (2, 2), "y": (2, 2)}, ["z"], {"c": np.array(cond)}, opset=16)
    if want is None:
        with pytest.raises(PaleozoicError, match="'wh'.*no select op"):
            import_onnx(model)
    else:
        queue = import_onnx(model)
        assert [layer.inputs for layer in queue.layers] == [[want]]


def test_pow_of_an_integer_base_is_refused_before_tvm() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Pow", ["x", "e"], ["y"], name="p")], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    with pytest.raises(PaleozoicError, match="'p' \\(Pow\\): the base 'x' is an integer"):
        import_onnx(model)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_pow_by_an_integer_input_is_a_host_cast_and_a_binary_pow(dtype) -> None:
    from onnx import TensorProto, helper

    elem = {np.int64: TensorProto.INT64, np.int32: TensorProto.INT32}[dtype]
    graph = helper.make_graph(
        [helper.make_node("Pow", ["x", "e"], ["y"], name="p")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("e", elem, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    assert [layer.kind for layer in import_onnx(model).layers] == ["HostCast", "Binary"]
