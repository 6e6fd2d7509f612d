"""paleozoic.backend: onnx's Backend interface over emitted C++ sessions.

test_node_case runs onnx's node test cases of every operator Paleozoic lists as supported
(ONNX_OPS) through the backend and checks them as onnx's runner does. A case is
skipped only when Paleozoic refuses it with UnsupportedModelError (the reason is the skip
message); wrong numbers and crashes fail. To keep CI short, the cases are compiled into
a few merged sessions (one per opset, run_many): about ten cmake + g++ builds instead of
one per case; a case whose merged result is wrong is re-run alone before it fails.
"""

from __future__ import annotations

import os
import unittest
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import onnxruntime_outputs
from onnx import TensorProto, helper, numpy_helper

from paleozoic import backend
from paleozoic_testing import backend_suite as suite
from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.support import ONNX_OPS
from paleozoic.accuracy.inputs import random_inputs

NODE_CASES = suite.suite_cases_from_node(suite.supported_node_test_cases())

# Paleozoic bugs these cases expose (benchmarks/results/onnx_backend_report.md). Strict: once a
# bug is fixed its cases pass, and their entries here must go.
_NO_LAYERS = ("a graph that computes nothing (its output is its input: Identity, inference "
              "Dropout, one-input Sum, Clip without bounds, zero-size Split) is refused "
              "with PlanMismatchError 'plan has no blocks' instead of UnsupportedModelError "
              "or a session that copies")
_TRAINING_DROPOUT = ("Dropout with training_mode=True (an input) is taken as the identity, "
                     "not refused; alone it also has no layers: " + _NO_LAYERS)
_REDUCE_ALL = ("frontend crash: ReduceMax/ReduceMean without axes (all axes) hits "
               "ints(None) in frontend.convert.walker: TypeError")
_RANK1 = ("frontend crash: HardSigmoid on a 1-D tensor hits shape[1] in "
          "frontend.convert.walker.channel_vector: IndexError")
KNOWN_BUGS: dict[str, str] = {}


def _node_params() -> list:
    return [pytest.param(case, id=case.name, marks=pytest.mark.xfail(
        strict=True, reason=KNOWN_BUGS[case.name])) if case.name in KNOWN_BUGS
        else pytest.param(case, id=case.name) for case in NODE_CASES]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """$PALEOZOIC_BACKEND_CACHE if set (sessions are keyed by content), else a fresh one."""
    return os.environ.get(backend.CACHE_ENV) or str(tmp_path_factory.mktemp("backend"))


@pytest.fixture(scope="module")
def node_results(cache_dir: str) -> dict[str, suite.CaseResult]:
    results = suite.run_suite(NODE_CASES, batch_size=32, threads=2, cache_dir=cache_dir)
    return {r.name: r for r in results}


def _first_reason(detail: str) -> str:
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    return " ".join(lines[:3])


def test_every_supported_operator_has_node_cases() -> None:
    tested = {case.op for case in NODE_CASES}
    assert tested == set(ONNX_OPS), \
        f"no onnx node cases for {set(ONNX_OPS) - tested}"


@pytest.mark.parametrize("case", _node_params())
def test_node_case(node_results: dict[str, suite.CaseResult],
                   case: suite.SuiteCase) -> None:
    result = node_results[case.name]
    if result.status == suite.UNSUPPORTED:
        pytest.skip(f"Paleozoic refuses it ({case.op}): {_first_reason(result.detail)}")
    assert result.status == suite.PASSED, \
        f"{case.name} ({case.op}) failed at {result.stage}: {result.detail}"


# ---- the backend interface ---------------------------------------------------------------
def test_run_model_with_initializers_matches_onnxruntime(
        small_cnn: onnx.ModelProto, cache_dir: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may be written into the working directory
    feeds = random_inputs(small_cnn, seed=3)
    rep = backend.prepare(small_cnn, "CPU", cache_dir=cache_dir)
    outputs = rep.run(list(feeds.values()))
    (ref,) = onnxruntime_outputs(small_cnn, feeds)
    assert outputs.prob.dtype == np.float32 and outputs.prob.shape == ref.shape == (1, 10)
    np.testing.assert_allclose(outputs["prob"], ref, rtol=1e-3, atol=1e-5)
    session = rep.last_session
    assert session is not None and (session / "session.cpp").is_file()
    built = (session / "build" / "session").stat().st_mtime_ns
    again = backend.run_model(small_cnn, feeds, cache_dir=cache_dir)  # by name, cached
    np.testing.assert_array_equal(again[0], outputs[0])
    assert (session / "build" / "session").stat().st_mtime_ns == built
    assert list(tmp_path.iterdir()) == []


def _conv_with_weight_input() -> onnx.ModelProto:
    """Conv + Relu whose weight and bias are graph inputs, as in onnx's node tests."""
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])], "conv_weight_input",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 2, 3, 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 5, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_weight_inputs_are_frozen_per_value(cache_dir: str) -> None:
    model = _conv_with_weight_input()
    rep = backend.prepare(model, cache_dir=cache_dir)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    sessions = []
    for _ in range(2):  # other weights: another session, both right
        w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
        b = rng.standard_normal(3).astype(np.float32)
        (y,) = rep.run([x, w, b])
        (ref,) = onnxruntime_outputs(model, {"x": x, "w": w, "b": b})
        np.testing.assert_allclose(y, ref, rtol=1e-3, atol=1e-5)
        assert rep.split == backend.Split(frozenset({"w", "b"}))
        sessions.append(rep.last_session)
    assert sessions[0] != sessions[1]
    manifest = (sessions[1] / "session.json").read_text()
    assert '"onnx_name": "x"' in manifest and '"onnx_name": "w"' not in manifest


def test_integer_input_no_constant_slot_reads_stays_a_run_time_input(cache_dir: str) -> None:
    """Pow's exponent given as an int64 input with values that differ: frozen it is a
    constant exponent tensor the frontend refuses; kept at run time (the third split) it is
    a host cast and a Binary pow."""
    graph = helper.make_graph(
        [helper.make_node("Pow", ["x", "e"], ["y"], name="p")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("e", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    rep = backend.prepare(model, cache_dir=cache_dir)
    x = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.25]], np.float32)
    e = np.array([3, 2, -1], np.int64)
    (y,) = rep.run([x, e])
    np.testing.assert_allclose(y, x.astype(np.float64) ** e, rtol=1e-6)
    assert rep.split == backend.Split(frozenset())


def test_unsupported_operator_is_refused_at_prepare(cache_dir: str) -> None:
    graph = helper.make_graph(
        [helper.make_node("Acos", ["x"], ["a"], name="acos1"),
         helper.make_node("Relu", ["a"], ["y"])], "acos_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert not backend.is_compatible(model)
    with pytest.raises(UnsupportedModelError, match=r"node 'acos1': Acos"):
        backend.prepare(model, cache_dir=cache_dir)


def test_refusal_at_run_happens_before_building(tmp_path: Path) -> None:
    """ConstantOfShape of an input passes the static checks; only its value (frozen at run
    time) shows the output is a constant, which the frontend refuses before compiling."""
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"],
                          value=numpy_helper.from_array(np.ones(1, np.float32)))],
        "constant_of_shape",
        [helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    rep = backend.prepare(model, cache_dir=tmp_path)
    with pytest.raises(UnsupportedModelError, match="constant_of_shape"):
        rep.run([np.array([2, 3, 4], np.int64)])
    assert rep.split == backend.Split(frozenset({"shape"})) or rep.split is None
    sessions = tmp_path / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir())


def test_inputs_are_checked(small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    rep = backend.prepare(small_cnn, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="2 input.s. given, the model takes 1"):
        rep.run([np.zeros((1, 3, 16, 16), np.float32)] * 2)
    with pytest.raises(ValueError, match="has shape"):
        rep.run([np.zeros((1, 3, 8, 8), np.float32)])


def test_devices() -> None:
    assert backend.supports_device("CPU")
    assert not backend.supports_device("CUDA")
    with pytest.raises(ValueError, match="CUDA"):
        backend.prepare(_conv_with_weight_input(), "CUDA")


def test_run_node(cache_dir: str) -> None:
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(1, 2, 3, 4)
    (y,) = backend.run_node(helper.make_node("Relu", ["x"], ["y"]), [x],
                            cache_dir=cache_dir)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_merged_models_compute_what_each_computes() -> None:
    """run_many's merged model, checked with onnxruntime (no build)."""
    models, feeds = [], {}
    for i, case in enumerate(c for c in NODE_CASES if c.name in (
            "test_concat_1d_axis_0", "test_concat_2d_axis_0", "test_concat_3d_axis_1")):
        models.append(case.model)
        for info, value in zip(case.model.graph.input, case.data_sets[0][0]):
            feeds[f"m{i}_{info.name}"] = value
    assert len(models) == 3 and len({tuple(m.opset_import) == tuple(models[0].opset_import)
                                     for m in models}) == 1
    merged = suite.merge_models(models)
    onnx.checker.check_model(merged)
    outputs = onnxruntime_outputs(merged, feeds)
    expected = [out for m in models for out in next(
        c for c in NODE_CASES if c.model is m).data_sets[0][1]]
    for got, want in zip(outputs, expected):
        np.testing.assert_array_equal(got, want)


def test_onnx_runner_drives_the_backend(cache_dir: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """onnx's own BackendTest runner, on two cases."""
    from onnx.backend.test import BackendTest

    monkeypatch.setenv(backend.CACHE_ENV, cache_dir)
    wanted = ("test_relu_cpu", "test_conv_with_strides_padding_cpu")
    tests = BackendTest(backend.PaleozoicBackend, __name__).tests
    suite = unittest.TestSuite(tests(name) for name in wanted)
    with open(os.devnull, "w") as quiet:
        result = unittest.TextTestRunner(stream=quiet).run(suite)
    problems = [f"{t}: {text}" for t, text in result.failures + result.errors]
    assert result.testsRun == 2 and not problems and not result.skipped, problems
