"""The SDK's sparse mode (MLU100's cnmlSparseMode_t): its rules as status codes, the same
numbers as the dense op on both SDKs, and a device time that skips the filter's zero pairs."""

from __future__ import annotations

import ctypes as C

import numpy as np
import pytest

import mock_sdk as m
from mock_sdk import INVALIDARG, INVALIDPARAM, SUCCESS
from paleozoic import _runtime
from paleozoic.frontend.prune import prune_pairs
from paleozoic.runner.sdk import sdk_available

F32 = np.float32


SDKS = [pytest.param("mock", id="mock"),
        pytest.param("onednn", id="onednn", marks=pytest.mark.skipif(
            not sdk_available("onednn"), reason="the oneDNN SDK is not built"))]


def _driver(sdk: str):
    return m if sdk == "mock" else m.onednn_driver()


def _conv(sdk, w: np.ndarray, x_shape, sparse: bool, pads=(1, 1, 1, 1)):
    tin = sdk.tensor(x_shape, sdk.FLOAT32)
    n, _, h, wd = x_shape
    tout = sdk.tensor([n, w.shape[0], h, wd], sdk.FLOAT32)
    op = sdk.create("cnmlCreateConvOp", sdk.conv_param(pads=pads, sparse=sparse), tin, tout,
                    sdk.const(w, sdk.FLOAT32, sdk.FILTER),
                    sdk.const(np.zeros(w.shape[0], F32), sdk.FLOAT32))
    return op, tin, tout


def _mlp(sdk, w: np.ndarray, batch: int, sparse: bool):
    tin, tout = sdk.tensor([batch, w.shape[1]], sdk.FLOAT32), sdk.tensor([batch, w.shape[0]],
                                                                         sdk.FLOAT32)
    op = sdk.create("cnmlCreateMlpOp", tin, tout, sdk.const(w, sdk.FLOAT32, sdk.FILTER),
                    sdk.const(np.zeros(w.shape[0], F32), sdk.FLOAT32),
                    sdk.SPARSE if sparse else sdk.NO_SPARSE)
    return op, tin, tout


def test_sparse_mode_rules():
    p = m.P()
    # MLU100's param: one pad per axis, both sides' total, split evenly.
    assert m.call("cnmlCreateConvOpParam", C.byref(p), 1, 1, 1, 1, 3, 2, m.SPARSE) == INVALIDPARAM
    assert m.call("cnmlCreateConvOpParam", C.byref(p), 1, 1, 1, 1, 2, 2, 2) == INVALIDPARAM
    assert m.call("cnmlCreateConvOpParam", C.byref(p), 1, 1, 1, 1, 2, 2, m.SPARSE) == SUCCESS
    # No sparse group convolution.
    tin, tout = m.tensor([1, 4, 5, 5]), m.tensor([1, 4, 5, 5])
    w = m.const(np.ones((4, 2, 3, 3), F32), m.FLOAT32, m.FILTER)
    assert m.call("cnmlCreateConvGroupOp", C.byref(m.P()), p, tin, tout, w, None, 2) == INVALIDARG
    # The dense param still serves a group convolution.
    assert m.call("cnmlCreateConvGroupOp", C.byref(m.P()), m.conv_param(pads=(1, 1, 1, 1)),
                  tin, tout, w, None, 2) == SUCCESS
    fc = m.const(np.ones((3, 8), F32), m.FLOAT32, m.FILTER)
    assert m.call("cnmlCreateMlpOp", C.byref(m.P()), m.tensor([2, 8]), m.tensor([2, 3]), fc,
                  None, 2) == INVALIDPARAM


@pytest.mark.parametrize("sdk_name", SDKS)
def test_sparse_ops_compute_the_dense_numbers(sdk_name):
    # The zero pairs are skipped, not approximated: on the mock, the same bits as the dense
    # op; on oneDNN a sparse fully connected layer runs the SDK's pair kernel, as accurate.
    sdk = _driver(sdk_name)
    rng = np.random.default_rng(3)
    w = prune_pairs(rng.standard_normal((32, 16, 3, 3)).astype(F32), 0.8, 0)
    x = (rng.standard_normal((1, 16, 12, 12)) * 100).astype(F32)
    outs = []
    for sparse in (False, True):
        op, tin, tout = _conv(sdk, w, x.shape, sparse)
        y, _ = sdk.run_base(op, "cnmlComputeConvOpForward_V4", (tin, x), (tout, (1, 32, 12, 12),
                                                                          F32))
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    window = np.lib.stride_tricks.sliding_window_view(
        np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
    exact = np.einsum("nchwij,ocij->nohw", window, w.astype(np.float64))
    np.testing.assert_allclose(outs[1], exact, rtol=1e-5, atol=1e-5 * np.abs(exact).max())
    wf = prune_pairs(rng.standard_normal((40, 64)).astype(F32), 0.9, 0)
    for batch in (1, 3):
        xf = (rng.standard_normal((batch, 64)) * 100).astype(F32)
        fc = []
        for sparse in (False, True):
            op, tin, tout = _mlp(sdk, wf, batch, sparse)
            y, _ = sdk.run_base(op, "cnmlComputeMlpOpForward_V4", (tin, xf),
                                (tout, (batch, 40), F32))
            fc.append(y)
        exact_fc = xf.astype(np.float64) @ wf.astype(np.float64).T
        for y in fc:
            np.testing.assert_allclose(y, exact_fc, rtol=1e-5, atol=1e-5 * np.abs(exact_fc).max())
        if sdk_name == "mock":
            np.testing.assert_array_equal(fc[0], fc[1])
        else:
            # The SDK's pair kernel where it beats oneDNN's (a small filter: at most 0.2 kept
            # pair columns per batch row), oneDNN's dense kernel otherwise.
            kernel = sdk.implementation(op)
            assert ("sparse inner product" in kernel) == (batch == 1), kernel


def test_device_time_skips_the_zero_pairs():
    profile = _runtime.device_profile()
    efficiency = profile["sparse_skip_efficiency"]
    rng = np.random.default_rng(4)
    dense_w = rng.standard_normal((64, 64, 3, 3)).astype(F32)
    pruned = prune_pairs(dense_w, 0.8, 0)
    shape = (1, 64, 28, 28)

    def us(w, sparse, mp=1):
        op, _, _ = _conv(m, w, shape, sparse)
        return m.estimate_base(op, 0, mp)

    launch = profile["launch_us"]
    # A compute-bound convolution: the skipped pairs' multiply-adds go, at the efficiency.
    dense, sparse = us(pruned, False), us(pruned, True)
    assert sparse < dense
    assert (sparse - launch) / (dense - launch) == pytest.approx(1 - efficiency * 0.8, rel=0.02)
    # Without zero pairs the sparse mode only adds its index.
    assert us(dense_w, True) >= us(dense_w, False)
    # A fully connected layer at batch 1 reads its filter once: its time is the bytes, and
    # the zero pairs' bytes are not read (an index of 1 bit per pair is).
    wf = rng.standard_normal((1024, 4096)).astype(F32)
    times = {}
    for name, w in (("dense", wf), ("pruned", prune_pairs(wf, 0.8, 0))):
        for sparse in (False, True):
            op, _, _ = _mlp(m, w, 1, sparse)
            times[name, sparse] = m.estimate_base(op, 0, 32) - launch
    bits = profile["sparse_index_bits"]
    expect = 0.2 + bits / 8 / (2 * 4)  # kept pairs' bytes and the index, per dense byte
    assert times["pruned", True] / times["pruned", False] == pytest.approx(expect, rel=0.05)
    assert times["dense", True] > times["dense", False]


@pytest.mark.skipif(not sdk_available("onednn"), reason="the oneDNN SDK is not built")
def test_onednn_sparse_1x1_convolution_runs_the_sdk_kernel_alone():
    # Compiled alone, a 1x1 convolution in sparse mode runs the SDK's pair kernel, as
    # accurate as the dense one against float64; fused, oneDNN's (which passes blocked
    # layouts between the fusion's convolutions).
    sdk = m.onednn_driver()
    rng = np.random.default_rng(5)
    w = prune_pairs(rng.standard_normal((33, 24, 1, 1)).astype(F32), 0.9, 0)  # odd: a lone row
    x = (rng.standard_normal((2, 24, 12, 12)) * 10).astype(F32)  # a plane of 128+ values
    bias = rng.standard_normal(33).astype(F32)
    exact = np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0].astype(np.float64))
    exact += bias[None, :, None, None]
    shape = (2, 33, 12, 12)
    for fused in (False, True):
        tin, tout = sdk.tensor(x.shape), sdk.tensor(shape)
        op = sdk.create("cnmlCreateConvOp", sdk.conv_param(sparse=True), tin, tout,
                        sdk.const(w, sdk.FLOAT32, sdk.FILTER), sdk.const(bias, sdk.FLOAT32))
        if fused:
            (y,) = sdk.run_fused([op], [(tin, x)], [(tout, shape, F32)])
        else:
            y, _ = sdk.run_base(op, "cnmlComputeConvOpForward_V4", (tin, x), (tout, shape, F32))
        np.testing.assert_allclose(y, exact, rtol=1e-5, atol=1e-5 * np.abs(exact).max())
        assert ("sparse 1x1 convolution" in sdk.implementation(op)) != fused


@pytest.mark.skipif(not sdk_available("onednn"), reason="the oneDNN SDK is not built")
def test_onednn_sparse_1x1_convolution_on_a_small_plane_stays_dense():
    # 7x7 planes at 80% zero pairs measured slower on the pair kernel: oneDNN's runs them.
    sdk = m.onednn_driver()
    w = prune_pairs(np.random.default_rng(6).standard_normal((16, 8, 1, 1)).astype(F32), 0.8, 0)
    tin, tout = sdk.tensor([1, 8, 7, 7]), sdk.tensor([1, 16, 7, 7])
    op = sdk.create("cnmlCreateConvOp", sdk.conv_param(sparse=True), tin, tout,
                    sdk.const(w, sdk.FLOAT32, sdk.FILTER), None)
    x = np.random.default_rng(7).standard_normal((1, 8, 7, 7)).astype(F32)
    sdk.run_base(op, "cnmlComputeConvOpForward_V4", (tin, x), (tout, (1, 16, 7, 7), F32))
    assert "sparse" not in sdk.implementation(op)
