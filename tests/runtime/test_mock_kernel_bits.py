"""The mock's fast kernels against an exact emulation of the arithmetic they are pinned to,
bit for bit (not a tolerance): the depthwise convolution (a float sum from +0 over the
window's valid taps in (ky, kx) order, each step one FMA where the build contracts
`acc += w * x` (an FMA target) or a product and a sum, then the bias) and the clipped ReLUs
(-0 and nan kept as std::max / std::min keep them). Every stride, dilation, pad and
window-edge path of the depthwise kernel is reached: rows and columns whose window is cut
off, interiors narrower than a vector, strided phases."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic import _runtime as rt


def _round32(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The float32 nearest to s + e (float64s, |e| at most half an ulp of s, from TwoSum)."""
    r = s.astype(np.float32)
    a = np.where(r.astype(np.float64) > s, np.nextafter(r, np.float32(-np.inf)), r)
    b = np.nextafter(a, np.float32(np.inf))
    # Only when s lies halfway between two floats can e change the rounding.
    mid = (a.astype(np.float64) + b.astype(np.float64)) / 2 == s
    return np.where(mid & (e > 0), b, np.where(mid & (e < 0), a, r))


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Correctly rounded float32 a * b + c (the product is exact in float64)."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64)
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)  # TwoSum: s + e == p + c exactly
    return _round32(s, e)


def depthwise_emulated(x, w, b, stride, pads, dilation, fused):
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    top, bottom, left, right = pads
    ho = (h + top + bottom - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + left + right - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    acc = np.zeros((n, c, ho, wo), np.float32)
    iy0 = np.arange(ho) * stride[0] - top
    ix0 = np.arange(wo) * stride[1] - left
    for ky in range(kh):
        for kx in range(kw):
            iy, ix = iy0 + ky * dilation[0], ix0 + kx * dilation[1]
            vy, vx = (iy >= 0) & (iy < h), (ix >= 0) & (ix < wd)
            valid = vy[:, None] & vx[None, :]
            xs = x[:, :, np.clip(iy, 0, h - 1)][:, :, :, np.clip(ix, 0, wd - 1)]
            wv = w[:, 0, ky, kx][None, :, None, None]
            step = fma32(wv, xs, acc) if fused else acc + wv * xs
            acc = np.where(valid, step, acc)  # a skipped tap leaves the sum as it was
    return acc + b[None, :, None, None]


def run_depthwise(x, w, b, stride, pads, dilation, mp):
    c = x.shape[1]
    s = rt.Session()
    t = s.input("x", list(x.shape))
    layer = s.conv("dw", t, out_channels=c, kernel=tuple(w.shape[2:]), stride=stride,
                   pads=pads, dilation=dilation, groups=c)
    layer.config(w, b)
    s.mark_output(layer.output)
    s.compile_block("b", fuse=False, mp=mp, layers=[layer])
    s.set_input(t, x)
    s.run()
    return np.array(s.get(layer.output))


def _contracts() -> bool:
    """Whether this build's kernels compute acc += w * x as one FMA (on FMA targets)."""
    x = np.array([-1.0, 1 + 2.0 ** -12], np.float32).reshape(1, 1, 1, 2)
    w = np.array([1.0, 1 + 2.0 ** -12], np.float32).reshape(1, 1, 1, 2)
    # Two taps on one output, -1 + (1 + 2^-12)^2: an FMA keeps the product's 2^-24.
    x2 = np.concatenate([x, x], axis=1)
    w2 = np.concatenate([w, w], axis=0)
    got = run_depthwise(x2, w2, np.zeros(2, np.float32), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    fused = depthwise_emulated(x2, w2, np.zeros(2, np.float32), (1, 1), (0, 0, 0, 0), (1, 1),
                               True)
    plain = depthwise_emulated(x2, w2, np.zeros(2, np.float32), (1, 1), (0, 0, 0, 0), (1, 1),
                               False)
    assert not np.array_equal(fused, plain)
    assert np.array_equal(got, fused) or np.array_equal(got, plain)
    return bool(np.array_equal(got, fused))


DEPTHWISE = {
    # id: ((n, c, h, w), kernel, stride, pads (t, b, l, r), dilation)
    "3x3_s1_wide": ((1, 5, 9, 70), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "3x3_s2": ((2, 6, 23, 37), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    "5x5_s2_odd": ((1, 4, 15, 17), (5, 5), (2, 2), (2, 2, 2, 2), (1, 1)),
    "5x5_s1_14": ((1, 3, 14, 14), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    "7x7_s1_56": ((1, 2, 56, 56), (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),
    "7x7_on_7x7": ((1, 9, 7, 7), (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),
    "dilated_strided": ((1, 3, 20, 29), (3, 2), (3, 2), (0, 1, 2, 0), (2, 3)),
    "stride_1x3": ((1, 2, 9, 40), (1, 7), (1, 3), (0, 0, 3, 3), (1, 1)),
    "stride_2x4": ((1, 3, 11, 37), (3, 3), (2, 4), (1, 0, 1, 2), (1, 1)),
    "pads_past_kernel": ((1, 4, 6, 6), (3, 3), (1, 1), (4, 4, 4, 4), (1, 1)),
    "one_row": ((1, 3, 1, 50), (1, 3), (1, 1), (0, 0, 1, 1), (1, 2)),
    "narrow": ((1, 3, 5, 3), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
}


@pytest.mark.parametrize("mp", [1, 2])
@pytest.mark.parametrize("case", DEPTHWISE.values(), ids=DEPTHWISE.keys())
def test_depthwise_is_the_pinned_sum_bit_for_bit(case, mp):
    shape, kernel, stride, pads, dilation = case
    rng = np.random.default_rng(3)
    # Magnitudes spread over 2^-20..2^20 so that rounding differences would show.
    x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-20, 21, shape)).astype(np.float32)
    w = rng.standard_normal((shape[1], 1, *kernel)).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    got = run_depthwise(x, w, b, stride, pads, dilation, mp)
    want = depthwise_emulated(x, w, b, stride, pads, dilation, _contracts())
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("function,low,high", [("relu", 0.0, None), ("relu6", 0.0, 6.0),
                                               ("relu1", 0.0, 1.0)])
def test_clipped_relus_keep_signed_zero_and_nan(function, low, high):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 1000)) * 4).astype(np.float32)
    x[0, :6] = [-0.0, 0.0, np.nan, -np.inf, np.inf, 1e-42]
    s = rt.Session()
    t = s.input("x", list(x.shape))
    layer = s.active("a", t, function=function)
    s.mark_output(layer.output)
    s.compile_block("b", fuse=False, mp=2, layers=[layer])
    s.set_input(t, x)
    s.run()
    got = np.array(s.get(layer.output))
    # std::max(x, 0) is (x < 0 ? 0 : x) and std::min(y, hi) is (hi < y ? hi : y).
    want = np.where(x < low, np.float32(low), x)
    if high is not None:
        want = np.where(np.float32(high) < want, np.float32(high), want)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
