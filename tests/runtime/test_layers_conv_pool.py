"""Conv, pooling, global average pooling and LRN against onnxruntime (and numpy for LRN)."""

import numpy as np
import pytest

from helpers import np_lrn, onnx_pads

RTOL, ATOL = 1e-4, 1e-5


CONV_CASES = {
    # id: (input shape, out_channels, kernel, stride, pads (t, b, l, r), dilation, groups)
    "3x3_same": ((1, 3, 8, 8), 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "no_pad_batch2": ((2, 4, 7, 9), 5, (3, 2), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "asym_pad_stride2": ((1, 3, 9, 10), 6, (3, 3), (2, 2), (0, 1, 1, 0), (1, 1), 1),
    "stride_hw": ((1, 2, 11, 8), 4, (5, 3), (3, 2), (2, 1, 0, 2), (1, 1), 1),
    "dilation2": ((1, 3, 10, 10), 4, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),
    "dilation_asym": ((1, 2, 12, 9), 3, (3, 2), (2, 1), (1, 0, 0, 1), (2, 3), 1),
    "groups2": ((1, 4, 6, 6), 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "depthwise": ((1, 8, 7, 7), 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8),
    "depthwise_mult2": ((1, 4, 5, 5), 8, (3, 3), (1, 1), (0, 1, 0, 1), (1, 1), 4),
    "pointwise": ((2, 16, 4, 4), 12, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
}


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("case", CONV_CASES.values(), ids=CONV_CASES.keys())
def test_conv_matches_onnxruntime(case, with_bias, rng, run_layer, ort_node):
    shape, co, kernel, stride, pads, dilation, groups = case
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((co, shape[1] // groups, *kernel), dtype=np.float32)
    b = rng.standard_normal(co, dtype=np.float32) if with_bias else None

    def build(s, t):
        c = s.conv("conv", t, out_channels=co, kernel=kernel, stride=stride, pads=pads,
                   dilation=dilation, groups=groups)
        c.config(w, b)
        return c

    got = run_layer(build, x)
    want = ort_node("Conv", x, [w] + ([b] if with_bias else []), kernel_shape=list(kernel),
                    strides=list(stride), pads=onnx_pads(pads), dilations=list(dilation),
                    group=groups)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4)


POOL_CASES = {
    # id: (input shape, kernel, stride, pads, ceil_mode, the count_include_pad values to test)
    "k2s2": ((1, 3, 8, 8), (2, 2), (2, 2), (0, 0, 0, 0), False, (False,)),
    "k3s2_overlap": ((1, 2, 9, 9), (3, 3), (2, 2), (0, 0, 0, 0), False, (False,)),
    "k3s2_pad1": ((2, 3, 8, 8), (3, 3), (2, 2), (1, 1, 1, 1), False, (False, True)),
    "ceil": ((1, 2, 8, 8), (3, 3), (2, 2), (0, 0, 0, 0), True, (False,)),
    "ceil_pad": ((1, 2, 7, 10), (3, 3), (2, 2), (1, 1, 1, 1), True, (False, True)),
    "ceil_last_window_dropped": ((1, 1, 5, 5), (2, 2), (2, 2), (1, 1, 1, 1), True, (False,)),
    "asym_pad": ((1, 3, 7, 6), (3, 2), (1, 2), (0, 1, 1, 0), False, (False, True)),
    "window_gt_stride": ((1, 2, 10, 10), (4, 4), (1, 3), (0, 0, 0, 0), False, (False,)),
    "rect_kernel": ((1, 2, 9, 7), (1, 3), (1, 1), (0, 0, 1, 1), False, (True,)),
}


POOL_PARAMS = [pytest.param((*case[:-1], include), mode,
                            id=f"{name}{'_incl' if include else ''}-{mode}")
               for name, case in POOL_CASES.items() for include in case[-1]
               for mode in ("max", "avg")
               if mode == "avg" or not include]   # count_include_pad is for average only


@pytest.mark.parametrize("case,mode", POOL_PARAMS)
def test_pool_matches_onnxruntime(case, mode, rng, run_layer, ort_node):
    shape, kernel, stride, pads, ceil_mode, include_pad = case
    x = rng.standard_normal(shape, dtype=np.float32)
    got = run_layer(lambda s, t: s.pool("pool", t, mode=mode, kernel=kernel, stride=stride,
                                        pads=pads, ceil_mode=ceil_mode,
                                        count_include_pad=include_pad), x)
    attrs = dict(kernel_shape=list(kernel), strides=list(stride), pads=onnx_pads(pads),
                 ceil_mode=int(ceil_mode))
    if mode == "avg":
        want = ort_node("AveragePool", x, count_include_pad=int(include_pad), **attrs)
    else:
        want = ort_node("MaxPool", x, **attrs)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(1, 8, 7, 7), (2, 3, 4, 6), (1, 5, 1, 1)])
def test_global_avg_pool_matches_onnxruntime(shape, rng, run_layer, ort_node):
    x = rng.standard_normal(shape, dtype=np.float32)
    got = run_layer(lambda s, t: s.global_avg_pool("gap", t), x)
    np.testing.assert_allclose(got, ort_node("GlobalAveragePool", x), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("size,alpha,beta,bias", [
    (5, 1e-4, 0.75, 1.0),     # AlexNet
    (3, 2e-3, 0.5, 2.0),
    (4, 1e-2, 0.75, 1.0),     # even: window reaches one channel further forward
    (2, 5e-2, 0.9, 1.5),
    (1, 0.1, 0.6, 0.8),
    (9, 1e-2, 0.75, 1.0),     # window wider than the channel count
])
def test_lrn(size, alpha, beta, bias, rng, run_layer, ort_node):
    x = rng.standard_normal((2, 7, 5, 4), dtype=np.float32) * 3
    got = run_layer(lambda s, t: s.lrn("lrn", t, size, alpha, beta, bias), x)
    want = np_lrn(x, size, alpha, beta, bias)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4)
    if size % 2:   # onnxruntime implements odd sizes only; it checks the numpy reference
        np.testing.assert_allclose(ort_node("LRN", x, size=size, alpha=alpha, beta=beta,
                                            bias=bias), want, rtol=RTOL, atol=1e-4)
