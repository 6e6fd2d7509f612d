"""Input shapes for symbolic dimensions, and folding what they make constant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.cli import main
from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend import import_onnx
from paleozoic.frontend.onnx_rewrites import fold_pads
from paleozoic.frontend.prepare import fix_input_shapes, fold_constants, parse_shape


def _dynamic_model() -> onnx.ModelProto:
    """Conv -> GAP -> a flatten computed from the run-time shape (as exporters write it)
    -> Gemm, with a symbolic batch."""
    rng = np.random.default_rng(0)

    def f32(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)

    def i64(name: str, value: object) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(value, dtype=np.int64), name)

    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Shape", ["g"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0, name="gather"),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0, name="concat"),
        helper.make_node("Reshape", ["g", "target"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["y"], transB=1, name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "dynamic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [f32("w", rng.standard_normal((8, 3, 3, 3)) * 0.3), f32("b", rng.standard_normal(8)),
         i64("zero", 0), i64("axes", [0]), i64("minus_one", [-1]),
         f32("fw", rng.standard_normal((5, 8))), f32("fb", rng.standard_normal(5))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_parse_shape() -> None:
    assert parse_shape("input=1x3x224x224") == ("input", (1, 3, 224, 224))
    assert parse_shape("a=b=2,3") == ("a=b", (2, 3))
    for bad in ("1x3", "x=", "x=1xax2", "x=0x3"):
        with pytest.raises(ValueError, match="--input-shape"):
            parse_shape(bad)


def test_symbolic_batch_needs_a_value() -> None:
    with pytest.raises(UnsupportedModelError,
                       match=r"input 'x' has symbolic dimensions \['N'\].*--input-shape "
                             r"x=Nx3x8x8 or --batch N"):
        import_onnx(_dynamic_model())


def test_batch_and_input_shape_fix_the_shapes() -> None:
    queue = import_onnx(_dynamic_model(), batch=3)
    assert queue.inputs[0].shape == (3, 3, 8, 8)
    assert queue.shape(queue.outputs[0]) == (3, 5)
    assert [layer.kind for layer in queue.layers].count("Reshape") == 1
    queue = import_onnx(_dynamic_model(), input_shapes={"x": (2, 3, 8, 8)})
    assert queue.inputs[0].shape == (2, 3, 8, 8)


def test_input_shape_errors_name_the_problem() -> None:
    model = _dynamic_model()
    with pytest.raises(UnsupportedModelError, match=r"names \['y'\].*inputs are \['x'\]"):
        fix_input_shapes(model, "m.onnx", {"y": (1, 5)})
    with pytest.raises(UnsupportedModelError, match="does not fit the input's declared shape"):
        fix_input_shapes(model, "m.onnx", {"x": (1, 4, 8, 8)})
    with pytest.raises(UnsupportedModelError, match="--batch must be at least 1"):
        fix_input_shapes(model, "m.onnx", batch=0)


def test_shape_chain_folds_into_an_initializer() -> None:
    model = _dynamic_model()
    fix_input_shapes(model, "m.onnx", batch=2)
    assert fold_constants(model, "m.onnx") == 4  # Shape, Gather, Unsqueeze, Concat
    assert [n.op_type for n in model.graph.node] == ["Conv", "Relu", "GlobalAveragePool",
                                                     "Reshape", "Gemm"]
    target = next(t for t in model.graph.initializer if t.name == "target")
    np.testing.assert_array_equal(numpy_helper.to_array(target), [2, -1])


def test_caller_model_is_not_modified() -> None:
    model = _dynamic_model()
    before = model.SerializeToString()
    import_onnx(model, batch=2)
    assert model.SerializeToString() == before


def test_cli_batch_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dynamic.onnx"
    onnx.save(_dynamic_model(), path)
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out)]) == 3
    assert "--batch N" in capsys.readouterr().err and not out.exists()
    assert main(["compile", str(path), "-o", str(out), "--batch", "2"]) == 0
    assert main(["verify", str(out)]) == 0
    assert "[2, 5]" in capsys.readouterr().out


def _pad_model(pad_value: float, consumer: str) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Pad", ["x", "pads", "value"], ["p"], name="pad")]
    inits = [numpy_helper.from_array(np.array([0, 0, 1, 0, 0, 0, 2, 1], dtype=np.int64), "pads"),
             numpy_helper.from_array(np.array(pad_value, dtype=np.float32), "value")]
    if consumer == "Conv":
        inits.append(numpy_helper.from_array(
            rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"))
        nodes.append(helper.make_node("Conv", ["p", "w"], ["y"], strides=[2, 2], name="conv"))
    else:
        nodes.append(helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[3, 3],
                                      count_include_pad=1, name="pool"))
    out_shape = [1, 4, 5, 4] if consumer == "Conv" else [1, 3, 10, 8]
    graph = helper.make_graph(nodes, "pad", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 3, 9, 9])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("consumer", ["Conv", "AveragePool"])
def test_zero_pad_merges_into_its_reader(consumer: str, tmp_path: Path) -> None:
    from helpers import compile_build_compare

    model = _pad_model(0.0, consumer)
    queue = import_onnx(model)
    first = queue.layers[0]
    assert first.kind in ("Conv", "Pool") and first.op.attrs["pads"] == [1, 2, 0, 1]
    compile_build_compare(model, tmp_path / "out")


def test_a_nonzero_pad_stays_a_pad_of_its_own() -> None:
    """A Pad of 1.0 cannot merge into the Conv (whose padding is zeros): it becomes
    Concats with constant blocks, and the result is onnxruntime's."""
    from paleozoic.pipeline import resolve_plan, run_passes
    from paleozoic.runner.plan_runner import PlanRunner
    from paleozoic.accuracy.verify import reference_outputs

    model = _pad_model(1.0, "Conv")
    queue = run_passes(import_onnx(model))
    # Pads 1 before and 2 after on H, 1 after on W: three constant blocks.
    assert [layer.kind for layer in queue.layers].count("ConcatConstant") == 3
    x = np.random.default_rng(1).standard_normal((1, 3, 9, 9)).astype(np.float32)
    got = PlanRunner(queue, resolve_plan(queue, "per-layer")).run([x])
    np.testing.assert_allclose(next(iter(got.values())),
                               reference_outputs(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


def _window_pad_model() -> onnx.ModelProto:
    """Swin's window padding in miniature: the pads come from shape arithmetic, so the
    padded tensor's shape, and the Shape -> Gather(scalar index) -> Unsqueeze -> Concat ->
    Reshape chain read from it, are static only once the pads are folded."""
    c = lambda name, value: helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.array(value, np.int64)))
    nodes = [
        helper.make_node("Shape", ["x"], ["s0"]),
        c("i1", 1), c("zero8", [0] * 8),
        helper.make_node("Gather", ["s0", "i1"], ["h"], axis=0),         # 6
        c("seven", 7), helper.make_node("Mod", ["h", "seven"], ["m"]),   # 6
        helper.make_node("Sub", ["seven", "m"], ["pad"]),                 # 1
        c("axis0", [0]), helper.make_node("Unsqueeze", ["pad", "axis0"], ["pad1"]),
        c("idx", [5]), helper.make_node("ScatterElements", ["zero8", "idx", "pad1"], ["pads"]),
        helper.make_node("Pad", ["x", "pads"], ["padded"]),               # (1, 7, 4, 3)
        helper.make_node("Shape", ["padded"], ["s1"]),
        helper.make_node("Gather", ["s1", "i1"], ["rows"], axis=0),       # 7, a scalar
        c("zero", [0]), helper.make_node("Unsqueeze", ["rows", "zero"], ["rows1"]),
        c("rest", [-1]), helper.make_node("Concat", ["rows1", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["padded", "target"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "window_pad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_shape_chains_fold_across_passes_and_keep_scalars_scalar() -> None:
    """Two mistakes this guards: one pass stopped at the Pad (its output shape was not
    static when the pass began), and a folded scalar index stored as shape (1,) made the
    Gather's result 1-D, the Unsqueeze's 2-D and the Concat invalid."""
    import onnxruntime as ort

    model = _window_pad_model()
    x = np.random.default_rng(0).standard_normal((1, 6, 4, 3)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    fold_constants(folded, "window_pad")
    assert [n.op_type for n in folded.graph.node] == ["Pad", "Reshape"]
    scalars = {t.name: list(t.dims) for t in folded.graph.initializer}
    assert scalars.get("i1", []) == []      # stays a scalar if kept at all
    got = ort.InferenceSession(folded.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, expected)
    assert got.shape == (7, 12)


def test_pad_by_nothing_is_removed_whatever_reads_it() -> None:
    pads = numpy_helper.from_array(np.zeros(6, np.int64), "pads")
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["p"]),
         helper.make_node("Relu", ["p"], ["y"])], "pad0",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 7])], [pads])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert fold_pads(model, "pad0") == 1
    assert [(n.op_type, list(n.input)) for n in model.graph.node] == [("Relu", ["x"])]


def test_small_streamed_constants_fold_through(tmp_path: Path) -> None:
    """A mask table built by ScatterND from initializers large enough to be streamed from
    the file (Swin's shifted-window masks) folds to a constant; the model imports."""
    rng = np.random.default_rng(0)
    base = numpy_helper.from_array(np.zeros((40, 49), np.float32), "base")
    idx = numpy_helper.from_array(np.arange(40, dtype=np.int64).reshape(40, 1), "idx")
    upd = numpy_helper.from_array(rng.standard_normal((40, 49)).astype(np.float32), "upd")
    graph = helper.make_graph(
        [helper.make_node("ScatterND", ["base", "idx", "upd"], ["mask"]),
         helper.make_node("Add", ["x", "mask"], ["y"])], "mask",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 40, 49])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40, 49])], [base, idx, upd])
    path = tmp_path / "mask.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    queue = import_onnx(str(path))
    assert [layer.kind for layer in queue.layers] == ["Reshape", "Scale", "Reshape"]


def test_folding_repeats_until_shapes_settle_and_keeps_scalars_0d() -> None:
    """A Slice whose end comes from Shape(x) leaves shape inference without the shape of
    what follows, so Shape(z) folds only in a second round; a scalar folded in the first
    round (s1) and read in the second must stay 0-d for Unsqueeze and Concat to fold."""
    def ints(name: str, values: list[int]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    table = numpy_helper.from_array(np.arange(256, dtype=np.float32).reshape(1, 64, 4), "pos")
    inits = [table, ints("one", [1]), ints("zero", [0]), ints("four", [4]),
             numpy_helper.from_array(np.array(1, dtype=np.int64), "i1")]
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node("Gather", ["sx", "i1"], ["s1"], axis=0),
        helper.make_node("Unsqueeze", ["s1", "zero"], ["end"]),
        helper.make_node("Slice", ["pos", "zero", "end", "one"], ["y"]),
        helper.make_node("Add", ["x", "y"], ["z"]),
        helper.make_node("Shape", ["z"], ["sz"]),
        helper.make_node("Gather", ["sz", "i1"], ["s2"], axis=0),
        helper.make_node("Add", ["s1", "s2"], ["t"]),
        helper.make_node("Unsqueeze", ["t", "zero"], ["u"]),
        helper.make_node("Concat", ["one", "u", "four"], ["shape"], axis=0),
        helper.make_node("Concat", ["z", "z"], ["zz"], axis=1),
        helper.make_node("Reshape", ["zz", "shape"], ["out"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, "s", 4])], [helper.make_tensor_value_info(
            "out", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    fix_input_shapes(model, "g", {"x": (1, 8, 4)}, None)
    fold_constants(model, "g")
    assert [n.op_type for n in model.graph.node] == ["Add", "Concat", "Reshape"]
    shape = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}["shape"]
    assert shape.tolist() == [1, 16, 4]


def test_gather_elements_of_constants_folds() -> None:
    """HuggingFace BERT's token types: a [1, 512] buffer gathered by [1, seq] position ids
    (onnx's reference kernel cannot evaluate it; numpy's take_along_axis does)."""
    buffer = numpy_helper.from_array(np.arange(512, dtype=np.int64).reshape(1, 512) % 3, "buf")
    ids = numpy_helper.from_array(np.array([[5, 0, -1, 7]], np.int64), "ids")
    graph = helper.make_graph(
        [helper.make_node("GatherElements", ["buf", "ids"], ["types"], axis=1),
         helper.make_node("Cast", ["types"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["x", "f"], ["y"])], "ge",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [buffer, ids])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert fold_constants(model, "ge") == 2
    f = next(t for t in model.graph.initializer if t.name == "f")
    np.testing.assert_array_equal(numpy_helper.to_array(f), [[2, 0, 1, 1]])  # 511 % 3 = 1


def test_batch_on_a_fixed_batch_model_is_an_error_not_ignored() -> None:
    model = _dynamic_model()
    fix_input_shapes(model, "m.onnx", batch=2)  # now fixed at 2
    fix_input_shapes(model, "m.onnx", batch=2)  # the same batch: fine
    with pytest.raises(UnsupportedModelError, match=r"--batch 4: input 'x' has a fixed first "
                                                    r"axis of 2.*dynamic batch axis"):
        fix_input_shapes(model, "m.onnx", batch=4)
