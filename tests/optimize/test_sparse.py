"""The sparse-mode knob: which layers pay on the device model, `tune --knobs sparsity`, and
the plan compiled into a session that runs it (setSparse, cnmlSparseMode_t)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from helpers import onnxruntime_outputs, small_cnn_model
from paleozoic.cli import main
from paleozoic.frontend.prune import prune_pairs
from paleozoic.ir import Plan
from paleozoic.optimize import fuse_all
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.sparse import paying_sparse, sparse_candidates, with_sparse
from paleozoic.pipeline import (build_session, compile_model, load_queue, resolve_plan,
                                run_session)
from paleozoic.runner.sdk import sdk_available
from paleozoic.accuracy.inputs import random_inputs

pytest.importorskip("paleozoic.optimize.device_cost")


def _pruned_cnn() -> onnx.ModelProto:
    """small_cnn with conv2's and the classifier's weights pruned in pairs (80%)."""
    model = small_cnn_model()
    for init in model.graph.initializer:
        if init.name in ("w2", "fc_w"):
            pruned = prune_pairs(numpy_helper.to_array(init), 0.8, 0)
            init.CopyFrom(numpy_helper.from_array(pruned, init.name))
    return model


@pytest.fixture
def pruned(tmp_path: Path) -> Path:
    path = tmp_path / "pruned.onnx"
    onnx.save(_pruned_cnn(), str(path))
    return path


def test_candidates_are_the_pruned_layers_with_a_sparse_mode(pruned: Path) -> None:
    queue = load_queue(pruned)
    found = sparse_candidates(queue)
    kinds = {layer.name: layer.kind for layer in queue.layers}
    assert sorted(kinds[name] for name in found) == ["Conv", "FullyConnected"]
    assert all(0.7 < pairs <= 0.8 for pairs in found.values())
    assert sparse_candidates(load_queue(small_cnn_model())) == {}


def test_sparse_layers_cost_less_on_the_device_model(pruned: Path) -> None:
    queue = load_queue(pruned)
    chosen = paying_sparse(queue)
    assert sorted(chosen) == sorted(sparse_candidates(queue))
    dense, sparse = DeviceModelOracle(queue), DeviceModelOracle(queue, sparse=chosen)
    plan = fuse_all(queue)
    assert sparse.plan_cost(plan) < dense.plan_cost(plan)
    for i, layer in enumerate(queue.layers):
        if layer.name not in chosen:
            assert sparse.block_cost(i, i + 1, 1) == dense.block_cost(i, i + 1, 1)


def test_tune_with_the_knob_writes_sparse_layers_and_the_session_runs_them(
        pruned: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_path = tmp_path / "plan.json"
    assert main(["tune", str(pruned), "--knobs", "sparsity", "-o", str(plan_path)]) == 0
    assert "sparse mode: 2 of 2 layer(s)" in capsys.readouterr().out
    plan = Plan.load(plan_path)
    sparse = [name for block in plan.blocks for name in block.sparse]
    assert len(sparse) == 2
    assert main(["tune", str(pruned), "-o", str(tmp_path / "dense.json")]) == 0
    dense_plan = Plan.load(tmp_path / "dense.json")
    assert not any(block.sparse for block in dense_plan.blocks)
    assert plan.notes["cost_us"] < dense_plan.notes["cost_us"]

    # The emitted session puts those layers in sparse mode and computes the same numbers.
    model = onnx.load(str(pruned))
    feeds = random_inputs(model, 0)
    outputs = {}
    for name, chosen in (("sparse", plan), ("dense", with_sparse(plan, []))):
        out = compile_model(model, tmp_path / name, plan=chosen)
        source = (out / "session.cpp").read_text()
        assert (".setSparse(true);" in source) == (name == "sparse")
        build_session(out)
        outputs[name] = run_session(out, list(feeds.values())).outputs
    for ours, dense in zip(outputs["sparse"], outputs["dense"]):
        np.testing.assert_array_equal(ours, dense)
    ref = onnxruntime_outputs(model, feeds)[0]
    np.testing.assert_allclose(outputs["sparse"][0], ref.reshape(outputs["sparse"][0].shape),
                               rtol=1e-4, atol=1e-6)
    sparse_source = (tmp_path / "sparse" / "session.cpp").read_text()
    assert sparse_source.count(".setSparse(true);  // the SDK skips its filter's zero "
                               "pairs: ") == 2


def test_the_raw_form_creates_the_ops_sparse(pruned: Path, tmp_path: Path) -> None:
    queue = load_queue(pruned)
    plan = with_sparse(fuse_all(queue), paying_sparse(queue))
    out = compile_model(onnx.load(str(pruned)), tmp_path / "raw", plan=plan, emit="raw")
    source = (out / "session.cpp").read_text()
    assert "cnmlCreateConvOpParam(" in source and source.count("CNML_Sparse") == 2
    assert json.loads((out / "plan.json").read_text())["blocks"][0]["sparse"] == plan.blocks[0].sparse


def test_knobs_refuses_an_unknown_one(pruned: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["tune", str(pruned), "--knobs", "sparsity,warp", "-o", str(tmp_path / "p.json")])


@pytest.mark.skipif(not sdk_available("onednn"), reason="the oneDNN SDK is not built")
def test_sparse_plans_run_on_onednn(pruned: Path, tmp_path: Path) -> None:
    # Fused and alone, the classifier runs the SDK's pair kernel (a fusion leaves its
    # post-ops apart), with onnxruntime's numbers.
    queue = load_queue(pruned)
    sparse = paying_sparse(queue)
    model = onnx.load(str(pruned))
    feeds = random_inputs(model, 1)
    ref = onnxruntime_outputs(model, feeds)[0]
    for plan in ("fuse-all", "per-layer"):
        chosen = with_sparse(resolve_plan(queue, plan), sparse)
        out = compile_model(model, tmp_path / plan, plan=chosen)
        build_session(out, sdk="onednn")
        result = run_session(out, list(feeds.values()))
        np.testing.assert_allclose(result.outputs[0], ref.reshape(result.outputs[0].shape),
                                   rtol=1e-4, atol=1e-6)
