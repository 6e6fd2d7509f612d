"""ONNX Clip with bounds the SDK's activations lack, and Max/Min of an activation and a
number, as the SDK's Clip op: equal to onnxruntime on both SDKs and plans (the result is
one of its inputs or a bound, so exactly), and the refusals that name what is missing."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import sdk_available
from paleozoic.accuracy.verify import reference_outputs


def _model(extra_nodes=(), extra_inputs=()) -> onnx.ModelProto:
    shape = [2, 3, 4, 5]
    consts = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (
        ("eps", 1e-12), ("big", np.inf), ("half", 0.5), ("m2", -2.0), ("one", 1.0),
        ("two", 2.0))]
    nodes = [
        helper.make_node("Clip", ["x", "eps", "big"], ["cos"]),   # cosine attention's norm
        helper.make_node("Max", ["x", "half"], ["mx"]),
        helper.make_node("Min", ["m2", "x"], ["mn"]),
        helper.make_node("Clip", ["x", "two", "one"], ["inverted"]),  # lower above upper
        helper.make_node("Clip", ["x", "m2", "half"], ["both"]),
        *extra_nodes]
    outputs = ["cos", "mx", "mn", "inverted", "both"]
    graph = helper.make_graph(
        nodes, "clips", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                         *extra_inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o in outputs], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_clip_bounds_and_max_min_against_onnxruntime(plan, sdk):
    model = _model()
    queue = load_queue(model)
    assert [layer.op.op_type for layer in queue.layers] == ["Clip"] * 5
    x = (np.random.default_rng(0).standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)
    x.reshape(-1)[:5] = [np.inf, -np.inf, -0.0, 1e-13, np.nan]
    refs = reference_outputs(model, {"x": x})
    outputs = PlanRunner(queue, resolve_plan(queue, plan), sdk=sdk).run([x])
    for got, want in zip(outputs.values(), refs):
        np.testing.assert_array_equal(got, want)


def test_max_of_two_tensors_is_refused_naming_the_node():
    model = _model([helper.make_node("Max", ["x", "y"], ["xy"], name="max_xy")],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 5])])
    model.graph.output.append(helper.make_tensor_value_info("xy", TensorProto.FLOAT,
                                                            [2, 3, 4, 5]))
    with pytest.raises(UnsupportedModelError, match="max_xy.*single number"):
        load_queue(model)


def test_emitted_clip_session_matches_onnxruntime(tmp_path):
    from paleozoic.pipeline import build_session, compile_model, run_session

    model = _model()
    x = (np.random.default_rng(1).standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)
    out = compile_model(model, tmp_path / "out", plan="fuse-all")
    source = (out / "session.cpp").read_text()
    assert ("/*lower=*/1e-12f, /*upper=*/std::numeric_limits<float>::infinity()}"
            in source), source
    build_session(out)
    for got, want in zip(run_session(out, [x]).outputs, reference_outputs(model, {"x": x})):
        np.testing.assert_array_equal(got, want)
