"""1-D convolution, transposed convolution and pooling over [N, C, L] become the 2-D layer
kinds with a height of 1 between reshapes that only add or drop that axis; instance and
group normalisation become LayerNorm over the trailing axes and a per-channel Scale. The
layers' attributes are checked here, their numbers in the runtime against onnxruntime and
the float64 truth; 3-D forms stay refused by node name."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import onnxruntime_outputs, runtime_outputs
from onnx import TensorProto, helper, numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import load_queue
from paleozoic.accuracy.truth import Float64Reference


def _model(nodes: list[onnx.NodeProto], x_shape: list[int], inits: dict[str, np.ndarray],
           opset: int = 17, shapes: dict[str, list[int]] | None = None,
           out_shape: list[int] | None = None) -> onnx.ModelProto:
    """`shapes`: int64 initializers (Reshape targets); `out_shape`: the output's shape when
    onnx's shape inference cannot tell it."""
    graph = helper.make_graph(
        nodes, "oned", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()] +
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (shapes or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if out_shape is None:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        model.graph.output[0].CopyFrom(inferred.graph.output[0])
    return model


def _check_numbers(model: onnx.ModelProto, x: np.ndarray, plan: str = "fuse-all",
                   onnxruntime_cancels: bool = False) -> None:
    """Within a few fp32 roundings of float64, and of onnxruntime unless it cancels (its
    instance normalisation takes E[x^2] - E[x]^2 in fp32: then 10x further from float64)."""
    queue = load_queue(model)
    ours = runtime_outputs(queue, [x], plan)
    (ref,) = onnxruntime_outputs(model, {"x": x})
    (truth,) = Float64Reference(model).run({"x": x})
    assert ours.shape == ref.shape
    scale = float(np.abs(truth).max())
    assert np.abs(ours - truth).max() <= 1e-6 * scale
    if onnxruntime_cancels:
        assert np.abs(ref - truth).max() > 10 * np.abs(ours - truth).max()
    else:
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5 * scale)


def _kinds(model: onnx.ModelProto) -> list[str]:
    return [layer.kind for layer in load_queue(model).layers]


RNG = np.random.default_rng(0)
W = {"w": RNG.standard_normal((6, 2, 5)), "b": RNG.standard_normal(6)}


def test_conv1d_is_a_2d_conv_of_height_1() -> None:
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="c1", strides=[2],
                                     pads=[1, 3], dilations=[2], group=2)], [1, 4, 31], W)
    queue = load_queue(model)
    assert [layer.kind for layer in queue.layers] == ["Reshape", "Conv", "Reshape"]
    conv = queue.layers[1]
    assert conv.name == "c1" and queue.shape("x") == (1, 4, 31)
    assert conv.op.attrs == {"out_channels": 6, "kernel": [1, 5], "stride": [1, 2],
                             "pads": [0, 0, 1, 3], "dilation": [1, 2], "groups": 2}
    assert queue.weights[conv.weights["weight"]].shape == (6, 2, 1, 5)
    # The bias TVM adds after the convolution folded into it, across the reshape.
    np.testing.assert_array_equal(queue.weights[conv.weights["bias"]], W["b"].astype(np.float32))
    assert queue.shape(queue.outputs[0]) == (1, 6, 14)
    _check_numbers(model, RNG.standard_normal((1, 4, 31)).astype(np.float32))


def test_consecutive_1d_layers_share_no_reshapes() -> None:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="c1", pads=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[3], strides=[2],
                              pads=[1, 1], ceil_mode=1),
             helper.make_node("AveragePool", ["m"], ["y"], kernel_shape=[3], pads=[1, 1],
                              count_include_pad=1)]
    model = _model(nodes, [1, 2, 20], {"w": RNG.standard_normal((6, 2, 5)),
                                       "b": RNG.standard_normal(6)})
    queue = load_queue(model)
    assert [layer.kind for layer in queue.layers] == \
        ["Reshape", "Conv", "Active", "Pool", "Pool", "Reshape"]
    maxpool, avgpool = queue.layers[3].op.attrs, queue.layers[4].op.attrs
    assert maxpool["kernel"] == [1, 3] and maxpool["stride"] == [1, 2]
    assert maxpool["pads"] == [0, 0, 1, 1] and maxpool["ceil_mode"]
    assert avgpool["count_include_pad"] and avgpool["mode"] == "avg"
    _check_numbers(model, RNG.standard_normal((1, 2, 20)).astype(np.float32), "per-layer")


def test_conv_transpose_1d_keeps_output_padding() -> None:
    model = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[3],
                                     pads=[1, 2], output_padding=[1])], [1, 4, 9],
                   {"w": RNG.standard_normal((4, 3, 4)), "b": RNG.standard_normal(3)})
    deconv = load_queue(model).layers[1]
    assert deconv.kind == "Deconv" and deconv.op.attrs["output_padding"] == [0, 1]
    assert deconv.op.attrs["pads"] == [0, 0, 1, 2] and deconv.op.attrs["kernel"] == [1, 4]
    _check_numbers(model, RNG.standard_normal((1, 4, 9)).astype(np.float32))


@pytest.mark.parametrize("op,kind", [("GlobalAveragePool", "GlobalAvgPool"),
                                     ("GlobalMaxPool", "Pool")])
def test_global_pooling_over_length_is_the_sdk_pool(op: str, kind: str) -> None:
    model = _model([helper.make_node(op, ["x"], ["y"])], [2, 5, 13], {})
    assert _kinds(model) == ["Reshape", kind, "Reshape"]
    _check_numbers(model, (50.0 + RNG.standard_normal((2, 5, 13))).astype(np.float32))


def test_instance_normalization_is_layer_norm_and_scale() -> None:
    c = 6
    model = _model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"],
                                     name="inorm", epsilon=1e-3)], [2, c, 5, 7],
                   {"s": RNG.uniform(0.5, 2, c), "b": RNG.standard_normal(c)})
    queue = load_queue(model)
    assert [layer.kind for layer in queue.layers] == ["LayerNorm", "Scale"]
    norm = queue.layers[0]
    assert norm.name == "inorm" and norm.op.attrs["axis"] == 2
    assert norm.op.attrs["epsilon"] == pytest.approx(1e-3)
    # A large mean over a unit spread: no E[x^2] - E[x]^2 cancellation.
    _check_numbers(model, (1e3 + RNG.standard_normal((2, c, 5, 7))).astype(np.float32),
                   onnxruntime_cancels=True)


def _torch_group_norm(c: int, groups: int, length: int) -> onnx.ModelProto:
    """torch.nn.GroupNorm as the TorchScript exporter writes it (opset 17)."""
    nodes = [helper.make_node("Reshape", ["x", "shape_g"], ["g"]),
             helper.make_node("InstanceNormalization", ["g", "ones", "zeros"], ["n"],
                              name="gn", epsilon=1e-5),
             helper.make_node("Reshape", ["n", "shape_x"], ["back"]),
             helper.make_node("Mul", ["back", "weight"], ["scaled"]),
             helper.make_node("Add", ["scaled", "bias"], ["y"])]
    return _model(nodes, [1, c, length], {
        "ones": np.ones(groups), "zeros": np.zeros(groups),
        "weight": RNG.uniform(0.5, 1.5, (c, 1)), "bias": RNG.standard_normal((c, 1))},
        shapes={"shape_g": [1, groups, -1], "shape_x": [1, c, length]})


def test_torch_group_norm_export() -> None:
    model = _torch_group_norm(8, 4, 30)
    queue = load_queue(model)
    # The unit scale and zero bias of the InstanceNormalization make no layer.
    assert [layer.kind for layer in queue.layers] == ["Reshape", "LayerNorm", "Reshape",
                                                      "Scale"]
    assert queue.shape(queue.layers[1].output) == (1, 4, 60)
    _check_numbers(model, (1e3 + RNG.standard_normal((1, 8, 30))).astype(np.float32),
                   onnxruntime_cancels=True)


def test_group_normalization_21() -> None:
    c, groups = 8, 2
    model = _model([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                                     name="gn", num_groups=groups, epsilon=1e-5)],
                   [2, c, 3, 5], {"s": RNG.uniform(0.5, 2, c), "b": RNG.standard_normal(c)},
                   opset=21, out_shape=[2, c, 3, 5])
    queue = load_queue(model)
    assert [layer.kind for layer in queue.layers] == ["Reshape", "LayerNorm", "Reshape",
                                                      "Scale"]
    assert queue.layers[1].name == "gn" and queue.shape(queue.layers[1].output) == (2, 2, 60)
    x = (1e3 + RNG.standard_normal((2, c, 3, 5))).astype(np.float32)
    queue_out = runtime_outputs(queue, [x], "fuse-all")
    (truth,) = Float64Reference(model).run({"x": x})
    # onnxruntime (1.32) computes E[x^2] - E[x]^2 in fp32 here: not a yardstick.
    assert np.abs(queue_out - truth).max() <= 1e-6 * np.abs(truth).max()


@pytest.mark.parametrize("node,inits,message", [
    (helper.make_node("Conv", ["x", "w"], ["y"], name="conv3d"),
     {"w": np.ones((2, 3, 1, 1, 1))}, r"node 'conv3d' \(Conv\): a 3-D convolution"),
    (helper.make_node("MaxPool", ["x"], ["y"], name="pool3d", kernel_shape=[1, 2, 2]), {},
     r"node 'pool3d' \(MaxPool\): kernel_shape=\[1, 2, 2\] is 3-D"),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up3d"),
     {"w": np.ones((3, 2, 1, 2, 2))}, r"node 'up3d' \(ConvTranspose\).*conv3d_transpose"),
])
def test_3d_forms_are_refused_by_node(node: onnx.NodeProto, inits: dict, message: str) -> None:
    model = _model([node], [1, 3, 2, 4, 4], inits)
    with pytest.raises(UnsupportedModelError, match=message):
        load_queue(model)
