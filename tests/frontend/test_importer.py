"""Frontend: ONNX -> LayerQueue mapping, shapes, and the errors for bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from paleozoic.errors import ModelLoadError, UnsupportedModelError
from paleozoic.frontend import import_onnx
from paleozoic.ops import KINDS


def test_small_cnn_layers_and_shapes(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    kinds = [layer.kind for layer in queue.layers]
    # Conv bias arrives as an add (a Scale until the passes fold it); BN -> BN + Scale;
    # Gemm -> FullyConnected (+ bias Scale); flatten -> Reshape.
    assert kinds == ["Conv", "Scale", "BatchNorm", "Scale", "Active", "Pool", "Conv", "Add",
                     "GlobalAvgPool", "Reshape", "FullyConnected", "Scale", "Softmax"]
    assert queue.shape(queue.outputs[0]) == (1, 10)
    assert queue.inputs[0].shape == (1, 3, 16, 16)
    for layer in queue.layers:
        spec = KINDS[layer.kind]
        ins = [queue.shape(name) for name in layer.inputs]
        assert spec.output_shape(layer.op.attrs, ins) == queue.shape(layer.output)


def test_batchnorm_substitution_values(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    bn = next(layer for layer in queue.layers if layer.kind == "BatchNorm")
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in small_cnn.graph.initializer}
    np.testing.assert_allclose(queue.weights[bn.weights["inv_std"]],
                               1 / np.sqrt(inits["var"] + 1e-5), rtol=1e-6)
    np.testing.assert_array_equal(queue.weights[bn.weights["mean"]], inits["mean"])


def _model_with(nodes: list, inits: list | None = None, shape: list | None = None
                ) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   shape or [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape or [1, 3, 8, 8])],
        inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_unsupported_operators_are_listed_together() -> None:
    model = _model_with([
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("Elu", ["a"], ["b"], name="weird_elu"),
        helper.make_node("Selu", ["b"], ["y"], name="weird_selu"),
    ])
    with pytest.raises(UnsupportedModelError) as err:
        import_onnx(model)
    text = str(err.value)
    assert "'weird_elu': Elu" in text and "'weird_selu': Selu" in text
    assert "supported:" in text and "Conv" in text


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no such file"):
        import_onnx(tmp_path / "nope.onnx")


def test_not_onnx_and_truncated(tmp_path: Path, small_cnn: onnx.ModelProto) -> None:
    text = tmp_path / "notes.onnx"
    text.write_text("this is not a protobuf at all\n" * 20)
    with pytest.raises(ModelLoadError, match="notes.onnx"):
        import_onnx(text)
    data = small_cnn.SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match="cut.onnx"):
        import_onnx(cut)


def test_checker_failure_names_the_problem() -> None:
    model = _model_with([helper.make_node("Relu", ["missing_input"], ["y"], name="r")])
    with pytest.raises(ModelLoadError, match="ONNX checker"):
        import_onnx(model)


def test_symbolic_input_dimension_is_refused() -> None:
    model = _model_with([helper.make_node("Relu", ["x"], ["y"], name="r")],
                        shape=["batch", 3, 8, 8])
    with pytest.raises(UnsupportedModelError, match="'x' has symbolic dimensions"):
        import_onnx(model)


def test_exporter_names_reach_tvm_and_name_the_layers() -> None:
    """PyTorch's TorchScript exporter names folded weights "onnx::Conv_193" and inputs
    "input.1"; TVM rewrites such names. Layers take their names from the node instead."""
    rng = np.random.default_rng(0)
    weight = onnx.numpy_helper.from_array(
        rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "onnx::Conv_193")
    bias = onnx.numpy_helper.from_array(rng.standard_normal(4).astype(np.float32),
                                        "onnx::Conv_194")
    nodes = [helper.make_node("Conv", ["input.1", "onnx::Conv_193", "onnx::Conv_194"], ["c"],
                              name="/layer1/layer1.0/conv1/Conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="/layer1/layer1.0/relu/Relu")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [weight, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    queue = import_onnx(model)
    # Netron's node names, as C++ identifiers; the Conv's bias add is its second layer.
    assert [layer.name for layer in queue.layers] == [
        "layer1_layer1_0_conv1_Conv", "layer1_layer1_0_conv1_Conv_bias",
        "layer1_layer1_0_relu_Relu"]
    assert queue.onnx_input_names == ["input.1"]


def test_clip_bounds_as_one_element_constants() -> None:
    """PyTorch's TorchScript exporter writes ReLU6's bounds as shape-(1,) Constant nodes."""
    nodes = [helper.make_node("Constant", [], ["lo"], value=helper.make_tensor(
                 "lo", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("Constant", [], ["hi"], value=helper.make_tensor(
                 "hi", TensorProto.FLOAT, [1], [6.0])),
             helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="relu6")]
    queue = import_onnx(_model_with(nodes))
    assert [(layer.kind, layer.op.attrs) for layer in queue.layers] == [
        ("Active", {"function": "relu6"})]


def _resize_model(scale: float, size: int = 5, **attrs: object) -> onnx.ModelProto:
    out = int(size * scale)
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="linear",
                          **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, out, out])],
        [helper.make_tensor("scales", TensorProto.FLOAT, [4], [1.0, 1.0, scale, scale])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def test_resize_scales_must_give_whole_sizes() -> None:
    assert [layer.kind for layer in import_onnx(_resize_model(2.0)).layers] == ["Interp"]
    with pytest.raises(UnsupportedModelError,
                       match=r"'up' \(Resize\): scales .* give non-integer sizes.*sizes"):
        import_onnx(_resize_model(1.5))


def test_resize_antialias_and_deconv_output_shape_are_refused() -> None:
    with pytest.raises(UnsupportedModelError, match=r"'up' \(Resize\): antialias=1"):
        import_onnx(_resize_model(0.5, size=8, antialias=1))
    w = onnx.numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", strides=[2, 2],
                          output_shape=[9, 9])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 9, 9])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.raises(UnsupportedModelError, match=r"'deconv' \(ConvTranspose\): output_shape"):
        import_onnx(model)


def test_tensors_of_more_than_six_axes_are_refused() -> None:
    """The SDK's tensors have at most six axes: a 7-D input, or a layer that would make a
    7-D tensor, is refused naming it (not a failure when the session runs)."""
    from onnx import TensorProto, helper

    def model(shape, nodes, out_shape):
        graph = helper.make_graph(nodes, "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                 out_shape)],
                                  [helper.make_tensor("axes", TensorProto.INT64, [1], [0])])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m

    with pytest.raises(UnsupportedModelError, match=r"input 'x' has 7 axes"):
        import_onnx(model([1] * 7, [helper.make_node("Relu", ["x"], ["y"])], [1] * 7))
    with pytest.raises(UnsupportedModelError, match=r"7-D tensor .*at most 6 axes"):
        import_onnx(model([2] * 6, [helper.make_node("Relu", ["x"], ["r"]),
                                    helper.make_node("Unsqueeze", ["r", "axes"], ["y"])],
                          [1] + [2] * 6))
