"""The Python API (paleozoic.api, reached as paleozoic.compile and the rest): the main job
from a script gives what the command line gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import paleozoic
from paleozoic.cli import main
from paleozoic.errors import ModelLoadError, PaleozoicError, SessionRunError
from paleozoic.ir import Plan
from paleozoic.optimize.oracle import plan_cost


def test_compile_build_run_verify(tmp_path: Path, small_cnn_path: Path) -> None:
    out = paleozoic.compile(small_cnn_path, tmp_path / "session", plan="fuse-all")
    assert (out / "session.cpp").is_file()
    assert paleozoic.build(out).name == "session"
    model = onnx.load(str(small_cnn_path))
    name = model.graph.input[0].name
    shape = json.loads((out / "session.json").read_text())["inputs"][0]["shape"]
    # Standard normal times 30: magnitudes past [0, 1) that a sign or scale slip would show.
    image = (np.random.default_rng(5).standard_normal(shape) * 30).astype(np.float32)

    outputs = paleozoic.run(out, {name: image})

    expected = ort.InferenceSession(str(small_cnn_path)).run(None, {name: image})
    assert list(outputs) == [o.name for o in model.graph.output]
    for got, want in zip(outputs.values(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
    assert paleozoic.run(out, [image])[model.graph.output[0].name].tobytes() == \
        outputs[model.graph.output[0].name].tobytes()
    report = paleozoic.verify(out, seed=3)
    assert report.passed and report.checks


def test_run_names_the_input_it_cannot_match(tmp_path: Path, small_cnn_path: Path) -> None:
    out = paleozoic.compile(small_cnn_path, tmp_path / "session")
    manifest = json.loads((out / "session.json").read_text())
    name, shape = manifest["inputs"][0]["onnx_name"], manifest["inputs"][0]["shape"]
    with pytest.raises(SessionRunError, match="no input is named 'imgae'"):
        paleozoic.run(out, {"imgae": np.zeros(shape, np.float32)})
    with pytest.raises(SessionRunError, match=f"input '{name}' has shape"):
        paleozoic.run(out, {name: np.zeros((1, 1), np.float32)})
    with pytest.raises(ModelLoadError, match="no session.json"):
        paleozoic.run(tmp_path, [])


def test_tune_gives_the_command_lines_plan(tmp_path: Path, small_cnn_path: Path) -> None:
    tuned = paleozoic.tune(small_cnn_path, optimizer="dp", precisions=("fp32", "fp16"))
    assert main(["tune", str(small_cnn_path), "--optimizer", "dp", "--precisions",
                 "fp32,fp16", "-o", str(tmp_path / "plan.json")]) == 0
    assert tuned.plan.to_json() == (tmp_path / "plan.json").read_text()
    saved = tuned.plan.save(tmp_path / "saved.json")
    assert saved.read_text() == (tmp_path / "plan.json").read_text()
    assert Plan.load(saved).to_json() == tuned.plan.to_json()
    # The DP's plan is the cheapest of its space: no cheaper than fuse-all or per-layer.
    for builtin in ("fuse-all", "per-layer"):
        other = paleozoic.tune(small_cnn_path, optimizer=builtin)
        assert plan_cost(tuned.plan, tuned.queue, tuned.cost) <= \
            plan_cost(other.plan, other.queue, other.cost)
    assert len(tuned.table()) > len(tuned.plan.blocks)


def test_tune_refuses_what_the_cli_refuses(small_cnn_path: Path, tmp_path: Path) -> None:
    with pytest.raises(PaleozoicError, match="precisions are fp32"):
        paleozoic.tune(small_cnn_path, precisions=("fp64",))
    with pytest.raises(PaleozoicError, match="precisions are fp32, fp16, int8"):
        paleozoic.compile(small_cnn_path, tmp_path / "out", precision="fp64")
    assert not (tmp_path / "out").exists()
    with pytest.raises(PaleozoicError, match="unknown knob"):
        paleozoic.tune(small_cnn_path, knobs={"turbo"})


def test_the_api_is_the_packages() -> None:
    import paleozoic.api as api

    assert all(getattr(paleozoic, name) is getattr(api, name) for name in paleozoic.API)
    with pytest.raises(AttributeError, match="no attribute 'compiler'"):
        getattr(paleozoic, "compiler")
