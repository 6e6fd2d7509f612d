"""Codegen: deterministic output, strict templates, readable structure, weights file."""

from __future__ import annotations

from pathlib import Path

import jinja2
import numpy as np
import onnx
import pytest

from paleozoic import _runtime as rt
from paleozoic.codegen import session_files, write_weights
from paleozoic.codegen.environment import make_environment
from paleozoic.ir import Model
from paleozoic.optimize import fuse_all, per_layer
from paleozoic.pipeline import compile_model, load_queue


def test_same_model_and_plan_give_identical_bytes(tmp_path: Path,
                                                  small_cnn_path: Path) -> None:
    a = compile_model(small_cnn_path, tmp_path / "a", plan="fuse-all")
    b = compile_model(small_cnn_path, tmp_path / "b", plan="fuse-all")
    names = sorted(p.name for p in a.iterdir())
    assert names == ["CMakeLists.txt", "plan.json", "session.cpp", "session.json",
                     "weights.bin"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_emitted_structure(small_cnn: onnx.ModelProto) -> None:
    queue = load_queue(small_cnn)
    files, weights = session_files(Model.build(queue, per_layer(queue)), "t")
    text = files["session.cpp"]
    for section in ("0. Global configuration", "1. I/O allocation",
                    "2. Layer construction", "3. Compilation", "4. Execution"):
        assert section in text
    # One knob constant per block, one construction statement per layer.
    assert text.count("constexpr pz::BlockKnobs") == len(queue.layers)
    for layer in queue.layers:
        assert text.count(f' {layer.name}{{"{layer.name}"') == 1
    assert "new " not in text and "delete " not in text
    assert len(weights) == sum(len(layer.weights) for layer in queue.layers)


def test_fuse_switches_follow_the_plan(small_cnn: onnx.ModelProto) -> None:
    queue = load_queue(small_cnn)
    plan = fuse_all(queue, mp=12)
    files, _ = session_files(Model.build(queue, plan), "t")
    assert ("constexpr pz::BlockKnobs kBlock0{true, 12, pz::Precision::kFp32};"
            in files["session.cpp"])


def test_precision_is_a_knob_with_per_layer_overrides(small_cnn: onnx.ModelProto) -> None:
    from paleozoic.ir.plan import Precision
    queue = load_queue(small_cnn)
    plan = fuse_all(queue, mp=4)
    plan.blocks[0].precision = Precision.FP16
    last = queue.layers[-1].name
    plan.blocks[0].layer_precision = {last: Precision.FP32}
    text = session_files(Model.build(queue, plan), "t")[0]["session.cpp"]
    assert "constexpr pz::BlockKnobs kBlock0{true, 4, pz::Precision::kFp16};" in text
    assert f"blocks.back().setLayerPrecision({last}, pz::Precision::kFp32);" in text
    # No calibration: no quantisation lines and no quantisation tensors.
    assert "setQuantization" not in text


def test_strict_environment_rejects_undefined_names() -> None:
    env = make_environment()
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ nothing_here }}").render()


def test_weights_file_round_trip_through_the_cpp_reader(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    tensors = [("conv.weight", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
               ("conv.bias", rng.standard_normal(4).astype(np.float32)),
               ("odd", rng.standard_normal((7,)).astype(np.float32))]
    path = tmp_path / "weights.bin"
    model_id = write_weights(path, tensors)
    reader = rt.WeightFile(str(path), model_id)
    assert reader.tensor_count == 3
    for name, value in tensors:
        np.testing.assert_array_equal(reader.get(name, list(value.shape)), value)
    with pytest.raises(rt.Error, match="another model"):
        rt.WeightFile(str(path), "0" * 32)
