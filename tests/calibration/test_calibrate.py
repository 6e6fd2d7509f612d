"""`paleozoic calibrate` end to end on small_cnn: the ranges are those of the fp32 model's
tensors on the data given (checked against onnxruntime's intermediate values), weights get
per-channel ranges, the file records method, data and model, and bad input is refused with
the file named and no output written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from paleozoic.calibration import CalibrationError, calibrate, load_calibration
from paleozoic.calibration.data import CalibrationDataError
from paleozoic.cli import main as cli_main
from paleozoic.pipeline import load_queue


@pytest.fixture()
def data_dir(tmp_path: Path, small_cnn: onnx.ModelProto) -> Path:
    shape = [d.dim_value for d in small_cnn.graph.input[0].type.tensor_type.shape.dim]
    folder = tmp_path / "data"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        np.save(folder / f"batch{i}.npy", (rng.standard_normal(shape) * 3).astype(np.float32))
    return folder


def test_activation_ranges_are_the_models(small_cnn, data_dir) -> None:
    import onnxruntime as ort

    queue = load_queue(small_cnn)
    record = calibrate(queue, [data_dir], method="absmax")
    # The graph output's range equals onnxruntime's over the same batches.
    session = ort.InferenceSession(small_cnn.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    outs = [session.run(None, {name: np.load(p)})[0] for p in sorted(data_dir.iterdir())]
    entry = record["activations"][queue.outputs[0]]
    assert entry["max"] == pytest.approx(max(o.max() for o in outs), rel=1e-5)
    assert entry["min"] == pytest.approx(min(o.min() for o in outs), rel=1e-5, abs=1e-7)
    assert set(record["activations"]) == {i.name for i in queue.inputs} | {l.output for l in queue.layers}
    data_input = record["activations"][queue.inputs[0].name]
    assert data_input["absmax"] == pytest.approx(
        max(np.abs(np.load(p)).max() for p in data_dir.iterdir()))
    # Per-channel weight ranges of each layer with a filter.
    conv = next(l for l in queue.layers if l.kind == "Conv")
    w = queue.weights[conv.weights["weight"]]
    got = record["weights"][conv.name]["weight"]
    np.testing.assert_allclose(got["absmax"], np.abs(w).reshape(w.shape[0], -1).max(axis=1))
    assert len(got["position"]) == len(got["scale"]) == w.shape[0]
    assert record["method"] == "absmax" and len(record["data"]) == 3


@pytest.mark.parametrize("method", ["percentile", "entropy"])
def test_clipping_methods_stay_within_absmax(small_cnn, data_dir, method) -> None:
    record = calibrate(load_queue(small_cnn), [data_dir], method=method)
    for entry in record["activations"].values():
        assert 0.0 <= entry["threshold"] <= entry["absmax"] * (1 + 1e-6)


def test_cli_writes_a_file_that_loads_and_refuses_another_model(
        small_cnn_path, data_dir, tmp_path, capsys) -> None:
    out = tmp_path / "calib.json"
    assert cli_main(["calibrate", str(small_cnn_path), "--data", str(data_dir), "-o",
                     str(out), "--method", "entropy"]) == 0
    assert "wrote" in capsys.readouterr().out
    queue = load_queue(str(small_cnn_path))
    record = load_calibration(out, queue)
    assert record["method"] == "entropy" and record["model"] == "small_cnn.onnx"
    # Another model (one weight changed) is refused by name.
    model = onnx.load(str(small_cnn_path))
    init = model.graph.initializer[0]
    array = onnx.numpy_helper.to_array(init).copy()
    array.flat[0] += 1.0
    init.CopyFrom(onnx.numpy_helper.from_array(array, init.name))
    with pytest.raises(CalibrationError, match=r"calib.json: made for model .* not this one"):
        load_calibration(out, load_queue(model))
    # A hand edit that breaks a range is refused naming the tensor.
    edited = json.loads(out.read_text())
    edited["activations"][queue.outputs[0]]["threshold"] = -1
    out.write_text(json.dumps(edited))
    with pytest.raises(CalibrationError, match=queue.outputs[0]):
        load_calibration(out, queue)


def test_bad_data_is_refused_naming_the_file(small_cnn_path, tmp_path, capsys) -> None:
    bad = tmp_path / "wrong.npy"
    np.save(bad, np.zeros((1, 2, 3), np.float32))
    out = tmp_path / "calib.json"
    code = cli_main(["calibrate", str(small_cnn_path), "--data", str(bad), "-o", str(out)])
    assert code != 0 and not out.exists()
    err = capsys.readouterr().err
    assert "wrong.npy" in err and "has shape (1, 2, 3)" in err
    with pytest.raises(CalibrationDataError, match="no such file or folder"):
        calibrate(load_queue(str(small_cnn_path)), [tmp_path / "missing"])


def test_deconv_filters_are_ranged_per_output_channel() -> None:
    from paleozoic.calibration.calibrate import _weight_ranges
    from paleozoic_testing.blocks import BLOCKS

    queue = load_queue(BLOCKS["detection_head"]())
    deconv = next(l for l in queue.layers if l.kind == "Deconv")
    w = queue.weights[deconv.weights["weight"]]  # [ci, co / groups, kh, kw]
    got = _weight_ranges(queue)[deconv.name]["weight"]
    assert got["axis"] == 1
    np.testing.assert_allclose(got["absmax"], np.abs(w).max(axis=(0, 2, 3)))


def test_token_ids_calibrate_a_transformer_as_integers(tmp_path) -> None:
    """A model with int64 token ids and mask is calibrated from .npz files of integers
    (they run as integers, as `verify` feeds them); floats for an integer input are refused
    naming the input."""
    from paleozoic_testing.bert import BERT_INPUTS, bert_model
    from paleozoic.accuracy.inputs import random_inputs

    model = bert_model(seed=0, batch=1, seq=8, vocab=37)
    queue = load_queue(model)
    for i in range(3):
        feeds = random_inputs(model, i, {n: (1, 8) for n in BERT_INPUTS})
        np.savez(tmp_path / f"{i}.npz", **feeds)
    record = calibrate(queue, [tmp_path])
    ids = record["activations"]["input_ids"]
    assert 0 <= ids["min"] and ids["max"] < 37 and ids["max"] == int(ids["max"])
    assert len(record["activations"]) > 20
    np.savez(tmp_path / "3.npz",
             **{n: v.astype(np.float32) for n, v in feeds.items()})
    with pytest.raises(CalibrationDataError, match="3.npz: input 'input_ids' is int64"):
        calibrate(queue, [tmp_path])


def test_npz_arrays_may_use_the_model_files_own_input_names(tmp_path) -> None:
    # The queue makes "gpu_0/data_0" an identifier ("data"); a user keys the array by the
    # name the model file (and Netron) shows, and either works.
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["gpu_0/data_0"], ["y"], name="relu")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("gpu_0/data_0", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    queue = load_queue(model)
    assert queue.inputs[0].name != "gpu_0/data_0"
    x = np.arange(4, dtype=np.float32).reshape(1, 4) - 1.5
    for key in ("gpu_0/data_0", queue.inputs[0].name):
        np.savez(tmp_path / "batch.npz", **{key: x})
        record = calibrate(queue, [tmp_path / "batch.npz"])
        assert record["activations"][queue.inputs[0].name]["absmax"] == pytest.approx(1.5)
    np.savez(tmp_path / "batch.npz", other=x)
    with pytest.raises(CalibrationDataError, match="ONNX 'gpu_0/data_0'"):
        calibrate(queue, [tmp_path / "batch.npz"])
