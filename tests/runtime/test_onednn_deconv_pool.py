"""ConvTranspose and average pooling that counts padding on the oneDNN SDK: oneDNN's
deconvolution (crops as its paddings, output padding taken off the bottom/right crop) and
pooling_avg_include_padding where their semantics are the mock's, the mock's kernels
where not (output padding past the crop, ceil mode adding cells past the pads). Numbers
against onnxruntime and a float64 evaluation, on inputs with a 1e3 offset."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.pipeline import load_queue
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference, ReferenceUnavailable
from paleozoic.runner.sdk import sdk_available

pytestmark = pytest.mark.skipif(not sdk_available("onednn"),
                                reason="the oneDNN SDK is not built")


def _model(node: helper.NodeProto, x_shape, y_shape, weights=()):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(w, n) for n, w in weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, x_shape, on_onednn: bool) -> None:
    x = (1000.0 + np.random.default_rng(0).standard_normal(x_shape) * 10).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    try:
        truth = Float64Reference(model).run({"x": x})[0]
    except ReferenceUnavailable:  # onnx's evaluator has no grouped ConvTranspose
        truth = None
    scale = float(np.abs(ref).max())
    queue = load_queue(model)
    for plan in (fuse_all(queue, mp=2), per_layer(queue, mp=2)):
        runner = PlanRunner(queue, plan, sdk="onednn")
        y = next(iter(runner.run([x]).values()))
        kernels = [k for _, k in runner.session.implementations()]
        assert any(k.startswith("mock kernel") for k in kernels) != on_onednn, kernels
        if truth is None:
            assert float(np.abs(y - ref).max()) / scale < 1e-6
            continue
        ours = float(np.abs(y - truth).max()) / scale
        theirs = float(np.abs(ref - truth).max()) / scale
        assert ours <= 2 * theirs + 2.0 ** -22, (ours, theirs)


# (kernel, stride, pads, output_padding, dilation, group, oneDNN?)
DECONVS = [
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 1, True),   # the usual 2x upsampler
    ((4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), 2, True),   # grouped
    ((3, 3), (1, 1), (2, 2, 2, 2), (0, 0), (2, 2), 1, True),   # dilated
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), (1, 1), 1, False),  # output padding past the crop
]


@pytest.mark.parametrize("kernel,stride,pads,output_padding,dilation,group,mapped", DECONVS)
def test_deconvolution(kernel, stride, pads, output_padding, dilation, group, mapped):
    ci, co, h, w = 4, 6, 5, 6
    wgt = (np.random.default_rng(1).standard_normal((ci, co // group, *kernel)) * 0.3
           ).astype(np.float32)
    ho = (h - 1) * stride[0] + dilation[0] * (kernel[0] - 1) + 1 - pads[0] - pads[2] \
        + output_padding[0]
    wo = (w - 1) * stride[1] + dilation[1] * (kernel[1] - 1) + 1 - pads[1] - pads[3] \
        + output_padding[1]
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv",
                            kernel_shape=list(kernel), strides=list(stride), pads=list(pads),
                            output_padding=list(output_padding), dilations=list(dilation),
                            group=group)
    _check(_model(node, [1, ci, h, w], [1, co, ho, wo], [("w", wgt)]), (1, ci, h, w), mapped)


# (kernel, stride, pads, ceil_mode, oneDNN?)
POOLS = [
    ((3, 3), (1, 1), (1, 1, 1, 1), 0, True),   # Inception-v3's
    ((3, 3), (2, 2), (1, 1, 0, 0), 0, True),
    ((2, 2), (2, 2), (0, 0, 0, 0), 1, False),  # ceil mode adds a cell past the pads
]


@pytest.mark.parametrize("kernel,stride,pads,ceil_mode,mapped", POOLS)
def test_average_pool_counting_padding(kernel, stride, pads, ceil_mode, mapped):
    h, w = 7, 7
    rnd = np.ceil if ceil_mode else np.floor
    ho = int(rnd((h + pads[0] + pads[2] - kernel[0]) / stride[0])) + 1
    wo = int(rnd((w + pads[1] + pads[3] - kernel[1]) / stride[1])) + 1
    node = helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=list(kernel),
                            strides=list(stride), pads=list(pads), ceil_mode=ceil_mode,
                            count_include_pad=1)
    _check(_model(node, [1, 8, h, w], [1, 8, ho, wo]), (1, 8, h, w), mapped)
