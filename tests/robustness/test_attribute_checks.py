"""Unsupported attribute values are refused before TVM, naming the node, the attribute and
its value (exit code 3, nothing written); the neighbouring values that are accepted are
checked against onnxruntime so the line between the two is not a guess."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.cli import main
from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import load_queue, resolve_plan
from robust_util import one_node_model, ort_outputs, run_queue

RNG = np.random.default_rng(0)


def weight(name: str, *shape: int, dtype: type = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(dtype), name)


def conv(x_shape=(1, 4, 9, 9), w_shape=(6, 4, 3, 3), **attrs) -> onnx.ModelProto:
    return one_node_model("Conv", list(x_shape), [weight("w", *w_shape)], ["w"], **attrs)


def pool(op: str, x_shape=(1, 3, 10, 10), opset: int = 13, **attrs) -> onnx.ModelProto:
    attrs.setdefault("kernel_shape", [3, 3])
    return one_node_model(op, list(x_shape), opset=opset, **attrs)


def bn(opset: int = 15, outputs: int = 1, **attrs) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(RNG.uniform(0.5, 1.5, 4).astype(np.float32), n)
             for n in ("g", "b", "m", "v")]
    return one_node_model("BatchNormalization", [1, 4, 5, 5], inits, ["g", "b", "m", "v"],
                          opset=opset, outputs=outputs, **attrs)


REFUSED = {
    "conv_same_upper": (conv(auto_pad="SAME_UPPER"), "auto_pad=SAME_UPPER"),
    "conv_same_lower": (conv(auto_pad="SAME_LOWER", strides=[2, 2]), "auto_pad=SAME_LOWER"),
    "conv_1d_same_upper": (conv((1, 4, 9), (6, 4, 3), auto_pad="SAME_UPPER"),
                           "auto_pad=SAME_UPPER"),
    "conv_3d": (conv((1, 4, 5, 5, 5), (6, 4, 3, 3, 3)), "3-D convolution"),
    "conv_kernel_shape_mismatch": (conv(kernel_shape=[2, 2]), "kernel_shape=[2, 2]"),
    "conv_negative_pads": (conv(pads=[-1, 0, 0, 0]), "pads=[-1, 0, 0, 0]"),
    "conv_float64_weight": (
        one_node_model("Conv", [1, 4, 9, 9], [weight("w", 6, 4, 3, 3, dtype=np.float64)],
                       ["w"]), "'w' is float64"),
    "conv_float16_bias": (
        one_node_model("Conv", [1, 4, 9, 9],
                       [weight("w", 6, 4, 3, 3), weight("b", 6, dtype=np.float16)],
                       ["w", "b"]), "'b' is float16"),
    "gemm_float64_bias": (
        one_node_model("Gemm", [1, 6], [weight("w", 5, 6), weight("c", 5, dtype=np.float64)],
                       ["w", "c"], transB=1), "'c' is float64"),
    "add_float16_constant": (
        one_node_model("Add", [1, 3, 4, 4],
                       [numpy_helper.from_array(np.ones((1, 3, 1, 1), np.float16), "k")],
                       ["k"]), "'k' is float16"),
    "maxpool_same_lower": (pool("MaxPool", strides=[3, 3], auto_pad="SAME_LOWER"),
                           "auto_pad=SAME_LOWER"),
    "maxpool_dilation": (pool("MaxPool", dilations=[2, 2]), "dilations=[2, 2]"),
    "avgpool_dilation": (pool("AveragePool", opset=19, dilations=[1, 2]), "dilations=[1, 2]"),
    "maxpool_1d_dilation": (pool("MaxPool", (1, 3, 10), kernel_shape=[2], dilations=[2]),
                            "dilations=[2]"),
    "maxpool_3d": (pool("MaxPool", (1, 3, 6, 6, 6), kernel_shape=[1, 2, 2]),
                   "kernel_shape=[1, 2, 2] is 3-D"),
    "avgpool_3d": (pool("AveragePool", (1, 3, 6, 6, 6), kernel_shape=[2, 2, 2]), "3-D"),
    "pool_negative_pads": (pool("AveragePool", pads=[0, 0, -1, 0]), "pads=[0, 0, -1, 0]"),
    "bn_training_mode": (bn(training_mode=1), "training_mode=1"),
    "bn_spatial_0": (bn(opset=7, spatial=0), "spatial=0"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unsupported_attribute_is_refused_naming_the_node(case: str) -> None:
    model, expected = REFUSED[case]
    with pytest.raises(UnsupportedModelError) as info:
        load_queue(model)
    message = str(info.value)
    assert "node 'n0'" in message and expected in message, message


def test_all_problems_are_listed_at_once() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv_same", auto_pad="SAME_UPPER"),
        helper.make_node("MaxPool", ["c"], ["p"], name="pool_dilated", kernel_shape=[2, 2],
                         dilations=[2, 2]),
        helper.make_node("BatchNormalization", ["p", "g", "b", "m", "v"], ["y"],
                         name="bn_train", training_mode=1),
    ]
    inits = [weight("w", 4, 3, 3, 3)] + [
        numpy_helper.from_array(np.ones(4, np.float32), n) for n in ("g", "b", "m", "v")]
    graph = helper.make_graph(
        nodes, "three_problems",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    with pytest.raises(UnsupportedModelError) as info:
        load_queue(model)
    message = str(info.value)
    assert "3 unsupported attribute value(s)" in message
    for node in ("conv_same", "pool_dilated", "bn_train"):
        assert f"node {node!r}" in message


def test_cli_exit_code_3_and_nothing_written(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = REFUSED["conv_same_upper"]
    path = tmp_path / "same.onnx"
    onnx.save(model, str(path))
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out)]) == 3
    assert "auto_pad=SAME_UPPER" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.onnx"]


# Values on the accepted side of each rule: compiled, run through the runtime and compared.
ACCEPTED = {
    "conv_valid": conv(auto_pad="VALID", strides=[2, 2]),
    "conv_dilation_asym_pads": conv(dilations=[2, 1], pads=[0, 1, 2, 0]),
    "conv_kernel_shape_matches": conv(kernel_shape=[3, 3]),
    "maxpool_same_upper": pool("MaxPool", strides=[3, 3], auto_pad="SAME_UPPER"),
    "maxpool_valid": pool("MaxPool", strides=[2, 2], auto_pad="VALID"),
    "maxpool_ceil_pads": pool("MaxPool", strides=[2, 2], ceil_mode=1, pads=[1, 1, 1, 1]),
    "maxpool_storage_order": pool("MaxPool", kernel_shape=[2, 2], storage_order=1),
    "avgpool_same_lower": pool("AveragePool", strides=[3, 3], auto_pad="SAME_LOWER"),
    "avgpool_same_upper": pool("AveragePool", strides=[2, 2], auto_pad="SAME_UPPER"),
    "avgpool_count_include_pad_ceil": pool("AveragePool", strides=[2, 2], pads=[1, 1, 1, 1],
                                           count_include_pad=1, ceil_mode=1),
    # 1-D over [N, C, L]: the 2-D layers with a height of 1.
    "conv_1d_valid": conv((1, 4, 9), (6, 4, 3), auto_pad="VALID", strides=[2]),
    "conv_1d_dilation_asym_pads": conv((1, 4, 9), (6, 4, 3), dilations=[2], pads=[0, 3]),
    "conv_1d_kernel_shape_matches": conv((1, 4, 9), (6, 4, 3), kernel_shape=[3]),
    "maxpool_1d_same_upper": pool("MaxPool", (1, 3, 10), kernel_shape=[3], strides=[3],
                                  auto_pad="SAME_UPPER"),
    "maxpool_1d_ceil_pads": pool("MaxPool", (1, 3, 10), kernel_shape=[3], strides=[2],
                                 ceil_mode=1, pads=[1, 1]),
    "avgpool_1d_same_lower": pool("AveragePool", (1, 3, 10), kernel_shape=[3], strides=[3],
                                  auto_pad="SAME_LOWER"),
    "avgpool_1d_count_include_pad_ceil": pool("AveragePool", (1, 3, 10), kernel_shape=[3],
                                              strides=[2], pads=[1, 1], count_include_pad=1,
                                              ceil_mode=1),
    "gemm_trans_a": one_node_model("Gemm", [6, 1], [weight("w", 5, 6), weight("c", 5)],
                                   ["w", "c"], transA=1, transB=1),
    "gemm_alpha_beta": one_node_model("Gemm", [2, 6], [weight("w", 6, 5), weight("c", 5)],
                                      ["w", "c"], alpha=0.5, beta=2.0),
    "softmax_axis0": one_node_model("Softmax", [2, 5], axis=0),
    "softmax_opset11_4d": one_node_model("Softmax", [1, 3, 2, 2], opset=11, axis=1),
    "bn_inference": bn(),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_attribute_values_match_onnxruntime(case: str) -> None:
    model = ACCEPTED[case]
    x = RNG.standard_normal(
        [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    ).astype(np.float32)
    (ref,) = ort_outputs(model, {"x": x})
    queue = load_queue(model)
    (ours,) = run_queue(queue, resolve_plan(queue, "per-layer"), [x])
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)


def test_float_tensor_with_an_integer_constant_is_refused() -> None:
    """Integer constants pass the checks (index arithmetic on the host), but one beside a
    float tensor is an ill-typed model, refused by name rather than computed as floats."""
    model = one_node_model("Add", [1, 3, 4, 4],
                           [numpy_helper.from_array(np.ones((1, 3, 1, 1), np.int32), "k")],
                           ["k"])
    with pytest.raises(UnsupportedModelError, match="same datatype|one type"):
        load_queue(model)
