"""If nodes whose condition is known at compile time (a shape check, an input made a
constant with --input-value) folded into the branch they take, nested ones and the names a
branch captures included; Pad (constant, reflect, edge, negative pads) rewritten into the
SDK's Slice and Concat; each equal to onnxruntime on both SDKs, and the refusals naming what
to change."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import model_of
from paleozoic.cli import main
from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import sdk_available
from paleozoic.accuracy.verify import reference_outputs

SDKS = [s for s in ("mock", "onednn") if sdk_available(s)]


def _branch(name: str, scale: float, inner: onnx.NodeProto | None = None) -> onnx.GraphProto:
    """y = relu(x * scale), optionally through a nested If reading a name captured from
    this branch (its scale constant)."""
    nodes = [helper.make_node("Constant", [], [f"{name}_k"], value=numpy_helper.from_array(
        np.array(scale, np.float32))),
             helper.make_node("Mul", ["x", f"{name}_k"], [f"{name}_y"])]
    last = f"{name}_y"
    if inner is not None:
        nodes.append(inner)
        last = inner.output[0]
    nodes.append(helper.make_node("Relu", [last], ["y"]))
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)])


def _if_model() -> onnx.ModelProto:
    """out = (sr == 16000 ? relu(2x) : relu(-3x)) + (width == 4 ? x * hi_k nested : ...)."""
    nested = helper.make_node(
        "If", ["wide"], ["nested_out"], name="nested",
        then_branch=helper.make_graph([helper.make_node("Add", ["shape_y", "shape_k"],
                                                        ["n_y"])], "n_then", [],
                                      [helper.make_tensor_value_info("n_y", TensorProto.FLOAT,
                                                                     None)]),
        else_branch=helper.make_graph([helper.make_node("Sub", ["shape_y", "shape_k"],
                                                        ["n_y2"])], "n_else", [],
                                      [helper.make_tensor_value_info("n_y2", TensorProto.FLOAT,
                                                                     None)]))
    nodes = [
        helper.make_node("Equal", ["sr", "k16"], ["is16"]),
        helper.make_node("If", ["is16"], ["rate_out"], name="rate",
                         then_branch=_branch("hi", 2.0), else_branch=_branch("lo", -3.0)),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["width"]),
        helper.make_node("Equal", ["width", "four"], ["wide"]),
        helper.make_node("If", ["wide"], ["shape_out"], name="shape_check",
                         then_branch=_branch("shape", 0.5, nested),
                         else_branch=_branch("narrow", 7.0)),
        helper.make_node("Add", ["rate_out", "shape_out"], ["out"]),
    ]
    inits = [numpy_helper.from_array(np.array(16000, np.int64), "k16"),
             numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(4, np.int64), "four")]
    graph = helper.make_graph(nodes, "ifs", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
        helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3, 4])], inits)
    model = model_of(graph, 17)
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("rate", [16000, 8000])
def test_ifs_with_known_conditions_fold_to_their_branch(rate: int, sdk: str) -> None:
    model = _if_model()
    queue = load_queue(model, input_values={"sr": np.array([float(rate)])})
    assert [i.name for i in queue.inputs] == ["x"]
    assert queue.input_values["sr"].dtype == np.int64 and queue.input_values["sr"].shape == ()
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    (want,) = reference_outputs(model, {"x": x, "sr": np.array(rate, np.int64)})
    got = PlanRunner(queue, resolve_plan(queue, "fuse-all"), sdk=sdk).run([x])
    np.testing.assert_allclose(next(iter(got.values())), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sdk", SDKS)
def test_a_condition_on_a_0d_input_left_at_run_time_runs_both_ways(sdk: str) -> None:
    """Without --input-value the sample-rate If is split (tests/e2e/test_runtime_if.py) and
    `sr` is a one-element int64 input; the shape check still folds."""
    model = _if_model()
    queue = load_queue(model)
    assert [(i.name, i.shape, i.dtype) for i in queue.inputs] == [
        ("x", (3, 4), "float32"), ("sr", (1,), "int64")]
    assert set(queue.conditions) == {"rate"}
    runner = PlanRunner(queue, resolve_plan(queue, "fuse-all"), sdk=sdk)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for rate in (16000, 8000):
        (want,) = reference_outputs(model, {"x": x, "sr": np.array(rate, np.int64)})
        got = runner.run([x, np.array([rate], np.int64)])
        np.testing.assert_allclose(next(iter(got.values())), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("text, message", [
    ("rate=16000", r"--input-value rate: no such input"),
    ("sr=1,2", r"--input-value sr: 2 value\(s\) for an input of shape \[\]"),
    ("sr=0.5", r"--input-value sr: 0.5 is not exactly a int64 value"),
])
def test_input_value_errors(text: str, message: str, tmp_path, capsys) -> None:
    onnx.save(_if_model(), str(tmp_path / "ifs.onnx"))
    assert main(["compile", str(tmp_path / "ifs.onnx"), "-o", str(tmp_path / "out"),
                 "--input-value", text]) == 3
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_compile_and_verify_with_an_input_value(tmp_path, capsys) -> None:
    onnx.save(_if_model(), str(tmp_path / "ifs.onnx"))
    assert main(["compile", str(tmp_path / "ifs.onnx"), "-o", str(tmp_path / "out"),
                 "--input-value", "sr=8000"]) == 0
    assert main(["verify", str(tmp_path / "out"), "--model", str(tmp_path / "ifs.onnx")]) == 0
    assert "PASS" in capsys.readouterr().out


def _pad_model(mode: str, pads: list[int], value: float | None = None) -> onnx.ModelProto:
    inputs = ["x", "pads"] + (["value"] if value is not None else [])
    inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads")]
    if value is not None:
        inits.append(numpy_helper.from_array(np.array(value, np.float32), "value"))
    graph = helper.make_graph(
        [helper.make_node("Pad", inputs, ["p"], mode=mode, name="pad"),
         helper.make_node("Relu", ["p"], ["y"], name="relu")], "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, _padded(pads))], inits)
    return model_of(graph, 17)


def _padded(pads: list[int]) -> list[int]:
    return [d + pads[i] + pads[i + 4] for i, d in enumerate((1, 2, 5, 6))]


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("mode, pads, value", [
    ("constant", [0, 0, 1, 2, 0, 1, 2, 0], 1.5),
    ("constant", [0, 1, 0, 0, 0, 0, 0, 3], None),
    ("reflect", [0, 0, 2, 3, 0, 0, 4, 2], None),
    ("edge", [0, 0, 3, 0, 0, 0, 1, 5], None),
    ("reflect", [0, 0, -1, 2, 0, 0, 1, -2], None),   # crops, then pads
])
def test_pad_modes(mode: str, pads: list[int], value: float | None, sdk: str) -> None:
    model = _pad_model(mode, pads, value)
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6)).astype(np.float32) * 3
    (want,) = reference_outputs(model, {"x": x})
    queue = load_queue(model)
    assert {layer.kind for layer in queue.layers} <= {"Slice", "Concat", "ConcatConstant",
                                                      "Active", "Reshape"}
    got = PlanRunner(queue, resolve_plan(queue, "per-layer"), sdk=sdk).run([x])
    np.testing.assert_array_equal(next(iter(got.values())), want)


def test_pad_refusals() -> None:
    with pytest.raises(UnsupportedModelError, match=r"reflect pads 5, 0 on axis 2 of size 5"):
        load_queue(_pad_model("reflect", [0, 0, 5, 0, 0, 0, 0, 0]))
    with pytest.raises(UnsupportedModelError, match=r"crop axis 3 of size 6 to nothing"):
        load_queue(_pad_model("constant", [0, 0, 0, -3, 0, 0, 0, -3]))


def _loop_model(early_exit: bool = False) -> onnx.ModelProto:
    """h_{i+1} = tanh(h_i W + i), n times (n an input); scan output: each step's h summed
    (the body reads the iteration number and an outer weight)."""
    body_nodes = [
        helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
        helper.make_node("Add", ["hw", "i_f"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_out"]),
        helper.make_node("ReduceSum", ["h_out", "axis1"], ["total"], keepdims=0),
        *([helper.make_node("Less", ["total", "zero"], ["below"]),
           helper.make_node("Squeeze", ["below"], ["cond_out"])] if early_exit else
          [helper.make_node("Identity", ["cond_in"], ["cond_out"])]),
    ]
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("total", TensorProto.FLOAT, [1])])
    rng = np.random.default_rng(2)
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "true", "h0"], ["h", "totals"], body=body,
                          name="steps")], "loop",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("totals", TensorProto.FLOAT, ["steps", 1])],
        [numpy_helper.from_array((rng.standard_normal((4, 4)) * 0.7).astype(np.float32), "w"),
         numpy_helper.from_array(np.array(True), "true"),
         numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
         numpy_helper.from_array(np.array([1], np.int64), "axis1")])
    return model_of(graph, 17)


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("steps", [1, 4])
def test_a_loop_with_a_constant_trip_count_unrolls(steps: int, sdk: str) -> None:
    model = _loop_model()
    queue = load_queue(model, input_values={"n": np.array([float(steps)])})
    h0 = np.random.default_rng(3).standard_normal((1, 4)).astype(np.float32)
    want = reference_outputs(model, {"h0": h0, "n": np.array(steps, np.int64)})
    got = list(PlanRunner(queue, resolve_plan(queue, "per-layer"), sdk=sdk).run([h0]).values())
    assert got[1].shape == (steps, 1)
    for ours, ref in zip(got, want):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_loops_that_do_not_unroll_are_refused() -> None:
    with pytest.raises(UnsupportedModelError, match=r"trip count or condition is computed "
                                                    r"at run time from input\(s\) \['n'\]"):
        load_queue(_loop_model())
    with pytest.raises(UnsupportedModelError, match="computes its own condition"):
        load_queue(_loop_model(early_exit=True), input_values={"n": np.array([3.0])})
    with pytest.raises(UnsupportedModelError, match="300 iterations"):
        load_queue(_loop_model(), input_values={"n": np.array([300.0])})
