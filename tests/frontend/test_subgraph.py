"""--outputs: a model whose tail has data-dependent sizes (a score threshold through NonZero
and Gather, as detectors' post-processing has) is compiled up to named tensors; verify cuts
onnxruntime's model at the same tensors; unknown names are refused by name; a one-piece
Split (torchvision's list(image)) is the tensor itself."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.cli import main
from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import build_session, compile_model, load_queue
from paleozoic.accuracy.verify import verify_session


def _detector() -> onnx.ModelProto:
    """image [1, 3, 8, 8] -> list(image) (Split into one, Squeeze, Unsqueeze) -> Conv
    (boxes) and Conv -> Sigmoid (scores) -> flattened; then the boxes whose score passes
    0.5 (Greater, NonZero, Gather): a [K, 4] output, K data-dependent."""
    rng = np.random.default_rng(0)
    y = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "wb"),
             numpy_helper.from_array(rng.normal(0, 0.3, (1, 3, 3, 3)).astype(np.float32), "ws"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([0], np.int64), "axis0"),
             numpy_helper.from_array(np.array([64, 4], np.int64), "flat_boxes"),
             numpy_helper.from_array(np.array([64], np.int64), "flat_scores"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [helper.make_node("Split", ["image", "one"], ["piece"], axis=0),
             helper.make_node("Squeeze", ["piece", "axis0"], ["chw"]),
             helper.make_node("Unsqueeze", ["chw", "axis0"], ["nchw"]),
             helper.make_node("Conv", ["nchw", "wb"], ["b"], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["b"], ["b_t"], perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["b_t", "flat_boxes"], ["boxes"]),
             helper.make_node("Conv", ["nchw", "ws"], ["s"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["s"], ["s_prob"]),
             helper.make_node("Reshape", ["s_prob", "flat_scores"], ["scores"]),
             helper.make_node("Greater", ["scores", "half"], ["keep"]),
             helper.make_node("NonZero", ["keep"], ["where"]),
             helper.make_node("Squeeze", ["where", "axis0"], ["kept"]),
             helper.make_node("Gather", ["boxes", "kept"], ["selected"], axis=0)]
    graph = helper.make_graph(nodes, "detector", [y("image", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [y("selected", TensorProto.FLOAT, ["K", 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_the_whole_detector_is_refused_for_its_data_dependent_tail() -> None:
    with pytest.raises(UnsupportedModelError, match="NonZero"):
        load_queue(_detector())


def test_compiled_up_to_named_tensors_and_verified_there(tmp_path) -> None:
    model = _detector()
    queue = load_queue(model, outputs=["boxes", "scores"])
    assert queue.onnx_output_names == ["boxes", "scores"]
    assert [queue.shape(o) for o in queue.outputs] == [(64, 4), (64,)]
    assert "Slice" not in [layer.kind for layer in queue.layers]  # the one-piece Split
    out = compile_model(model, tmp_path / "out", plan="fuse-all", outputs=["boxes", "scores"])
    build_session(out)
    report = verify_session(out, model, seed=1, float64=True)
    assert [c.name for c in report.checks] == ["boxes", "scores"]
    assert all(c.passed for c in report.checks)


def test_cli_outputs_and_an_unknown_name(tmp_path, capsys) -> None:
    path = tmp_path / "detector.onnx"
    onnx.save(_detector(), str(path))
    assert main(["inspect", str(path), "--outputs", "scores"]) == 0
    assert "scores" in capsys.readouterr().out
    code = main(["compile", str(path), "-o", str(tmp_path / "out"), "--outputs",
                 "boxes,not_there"])
    assert code == 3
    err = capsys.readouterr().err
    assert "--outputs 'not_there': no node computes it and it is no input" in err
    assert not (tmp_path / "out").exists()


def test_a_data_dependent_operator_is_refused_with_the_way_out() -> None:
    with pytest.raises(UnsupportedModelError, match=r"node '.*': NonZero \(its output size "
                                                    r"depends on the data.*--outputs"):
        load_queue(_detector())
