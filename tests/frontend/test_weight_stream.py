"""Weights read straight from the ONNX file: same values as onnx.load, no copy in memory."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import float_model
from paleozoic.errors import ModelLoadError
from paleozoic.frontend import import_onnx, load_onnx
from paleozoic.frontend.weight_stream import STREAM_MIN_ELEMENTS, StreamedModel


def _conv_model(rng: np.random.Generator) -> onnx.ModelProto:
    weight = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)     # streamed
    bias = rng.standard_normal(16).astype(np.float32)                  # too small
    fc = rng.standard_normal((10, 16)).astype(np.float32)              # too small
    big_fc = rng.standard_normal((64, 8 * 8 * 8)).astype(np.float32)   # streamed
    shape = np.array([1, -1], dtype=np.int64)                          # not float
    # float_data instead of raw_data: stays in the proto.
    scale = helper.make_tensor("conv2.weight", TensorProto.FLOAT, [8, 16, 3, 3],
                               rng.standard_normal(1152).astype(np.float32).tolist())
    inits = [numpy_helper.from_array(weight, "conv.weight"), numpy_helper.from_array(bias, "conv.bias"),
             numpy_helper.from_array(big_fc, "fc.weight"), numpy_helper.from_array(shape, "shape"),
             numpy_helper.from_array(fc, "unused_small"), scale]
    nodes = [helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "conv2.weight"], ["m"], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["m", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "fc.weight"], ["y"], transB=1)]
    return float_model(nodes, {"x": [1, 8, 8, 8]}, {"y": [1, 64]}, inits)


def test_streamed_weights_equal_onnx_load_and_are_file_views(tmp_path: Path) -> None:
    model = _conv_model(np.random.default_rng(0))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    streamed = StreamedModel(path)
    assert sorted(streamed.weights) == ["conv.weight", "fc.weight"]
    reference = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    for name, array in streamed.weights.items():
        np.testing.assert_array_equal(array, reference[name])
        assert not array.flags.writeable and not array.flags.owndata
        base = array
        while isinstance(base, np.ndarray):
            base = base.base
        assert isinstance(base.obj if isinstance(base, memoryview) else base, mmap.mmap)
    kept = {t.name: t for t in streamed.proto.graph.initializer}
    # Streamed tensors keep name, type and dims but no data; the rest is untouched.
    assert list(kept["conv.weight"].dims) == [16, 8, 3, 3] and not kept["conv.weight"].raw_data
    assert kept["fc.weight"].data_type == TensorProto.FLOAT
    for name in ("conv.bias", "shape", "unused_small", "conv2.weight"):
        np.testing.assert_array_equal(numpy_helper.to_array(kept[name]), reference[name])
    # Everything but the initializers' data is as onnx.load parsed it.
    assert streamed.proto.graph.node == onnx.load(path).graph.node
    assert [t.name for t in streamed.proto.graph.initializer] == list(reference)


def test_import_from_file_and_from_proto_agree(tmp_path: Path) -> None:
    model = _conv_model(np.random.default_rng(1))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    from_file, from_proto = import_onnx(path), import_onnx(model)
    assert [layer.name for layer in from_file.layers] == [layer.name for layer in from_proto.layers]
    assert from_file.weights.keys() == from_proto.weights.keys()
    for key in from_file.weights:
        np.testing.assert_array_equal(from_file.weights[key], from_proto.weights[key])


def test_external_data_models_load(tmp_path: Path) -> None:
    model = _conv_model(np.random.default_rng(2))
    reference = import_onnx(model)
    path = tmp_path / "ext.onnx"  # onnx.save moves the model's data out, in place
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    queue = import_onnx(path)
    for key in reference.weights:
        np.testing.assert_array_equal(queue.weights[key], reference.weights[key])


def test_checker_still_sees_streamed_models(tmp_path: Path) -> None:
    model = _conv_model(np.random.default_rng(3))
    model.graph.node[1].input[1] = "no_such_tensor"
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    with pytest.raises(ModelLoadError, match="bad.onnx: fails the ONNX checker"):
        load_onnx(path)


def test_raw_data_of_the_wrong_size_is_not_streamed(tmp_path: Path) -> None:
    model = _conv_model(np.random.default_rng(4))
    weight = next(t for t in model.graph.initializer if t.name == "conv.weight")
    weight.raw_data = weight.raw_data[:-4]
    path = tmp_path / "short.onnx"
    onnx.save(model, path)
    # Left in the proto, where onnx's own reading reports the mismatch.
    assert "conv.weight" not in StreamedModel(path).weights
    with pytest.raises(Exception, match="conv.weight|size|reshape"):
        import_onnx(path)


def test_bound_matches_the_importer() -> None:
    from paleozoic.frontend import importer

    assert importer._LARGE_WEIGHT == STREAM_MIN_ELEMENTS
