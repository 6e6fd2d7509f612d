"""int8 compute in the mock SDK (numerics.h assumptions 3-6): Conv (plain, grouped, depthwise,
strided, padded, dilated; per-tensor and per-channel filter params) and Mlp equal a numpy
emulation with int64 accumulation bit for bit, including a reduction long enough (K > 1100)
with large |q| products that an fp32 accumulation would round; the host INT8 casts use the
same formula."""

from __future__ import annotations

import numpy as np
import pytest

import mock_sdk as m

F16, F32 = np.float16, np.float32
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered")


def quantize(x, position, scale):
    """numerics.h 3: q = clamp(rint(x * s * 2^-p), -127, 127), the product in double."""
    t = np.rint(np.asarray(x, np.float64) * np.float64(F32(scale)) * 2.0 ** -position)
    return np.clip(np.nan_to_num(t, nan=0.0), -127, 127).astype(np.int64)


def rescale_factors(px, sx, pw, sw):
    """numerics.h 5: f_c = float(2^(px + pw_c) / (sx * sw_c)), in double then fp32."""
    pw, sw = np.asarray(pw, np.int64), np.asarray(sw, F32).astype(np.float64)
    return (2.0 ** (px + pw) / (np.float64(F32(sx)) * sw)).astype(F32)


def conv_int64(xq, wq, group, stride, dil, pads):
    n, ci, h, w = xq.shape
    co, cig, kh, kw = wq.shape
    pt, pb, pl, pr = pads
    xp = np.pad(xq, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    ho = (h + pt + pb - dil[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (w + pl + pr - dil[1] * (kw - 1) - 1) // stride[1] + 1
    cog = co // group
    acc = np.zeros((n, co, ho, wo), np.int64)
    for g in range(group):
        xs = xp[:, g * cig:(g + 1) * cig]
        ws = wq[g * cog:(g + 1) * cog].astype(np.int64)
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * dil[0]:ky * dil[0] + stride[0] * (ho - 1) + 1:stride[0],
                           kx * dil[1]:kx * dil[1] + stride[1] * (wo - 1) + 1:stride[1]]
                acc[:, g * cog:(g + 1) * cog] += np.einsum("nchw,oc->nohw", patch,
                                                           ws[:, :, ky, kx])
    return acc


def epilogue(acc, f, bias16, channel_axis=1):
    """y = float(acc) * f_c + bias_c in fp32 (no FMA), rounded once to fp16."""
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    y = acc.astype(F32) * f.reshape(shape)
    y = y + bias16.astype(F32).reshape(shape)
    return y.astype(F16)


def set_filter_quant(tf, co, pos, scale, per_channel):
    if per_channel:
        m.check("cnmlSetQuantizedPositionByChannel", tf, m.ints(pos), co)
        m.check("cnmlSetQuantizedScaleByChannel", tf, m.floats(scale), co)
    else:
        m.check("cnmlSetQuantizedPosition", tf, int(pos))
        m.check("cnmlSetQuantizedScale", tf, m.f32(scale))


CONVS = {
    "plain": dict(ci=8, co=16, k=3, group=1, stride=(1, 1), dil=(1, 1), pads=(1, 1, 1, 1)),
    "grouped": dict(ci=8, co=12, k=3, group=4, stride=(1, 1), dil=(1, 1), pads=(0, 1, 1, 0)),
    "depthwise": dict(ci=8, co=8, k=3, group=8, stride=(2, 2), dil=(1, 1), pads=(1, 1, 1, 1)),
    "strided": dict(ci=6, co=10, k=5, group=1, stride=(2, 3), dil=(1, 1), pads=(2, 2, 1, 3)),
    "dilated": dict(ci=5, co=7, k=3, group=1, stride=(1, 1), dil=(2, 3), pads=(2, 2, 3, 3)),
    "pointwise": dict(ci=16, co=40, k=1, group=1, stride=(1, 1), dil=(1, 1), pads=(0, 0, 0, 0)),
    "wide": dict(ci=3, co=33, k=3, group=1, stride=(1, 1), dil=(1, 1), pads=(1, 1, 1, 1),
                 h=40),
    "long_k": dict(ci=160, co=9, k=3, group=1, stride=(1, 1), dil=(1, 1), pads=(1, 1, 1, 1),
                   h=6),
}


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("name", list(CONVS))
def test_int8_conv_bit_exact(name, per_channel):
    c = CONVS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    n, h = 2, c.get("h", 11)
    ci, co, k, group = c["ci"], c["co"], c["k"], c["group"]
    # Standard normal with some large values (they clamp at +-127).
    x = (rng.standard_normal((n, ci, h, h)) * 4).astype(F16)
    x.flat[::37] = F16(300.0)
    x.flat[5::41] = F16(-1000.0)
    wq = rng.integers(-127, 128, (co, ci // group, k, k)).astype(np.int8)
    wq.flat[::3] = 127  # large |q| products
    bias = (rng.standard_normal(co) * 10).astype(F16)
    px, sx = -3, 1.7
    if per_channel:
        pw = rng.integers(-8, 2, co)
        sw = rng.uniform(0.5, 2.0, co).astype(F32)
    else:
        pw, sw = -5, 1.3
    stride, dil, pads = c["stride"], c["dil"], c["pads"]
    ho = (h + pads[0] + pads[1] - dil[0] * (k - 1) - 1) // stride[0] + 1
    wo = (h + pads[2] + pads[3] - dil[1] * (k - 1) - 1) // stride[1] + 1
    tin, tout = m.tensor(x.shape, m.FLOAT16), m.tensor([n, co, ho, wo], m.FLOAT16)
    tf, tb = m.const(wq, m.INT8, m.FILTER), m.const(bias, m.FLOAT16)
    set_filter_quant(tf, co, pw, sw, per_channel)
    param = m.conv_param(stride, dil, pads)
    if group == 1:
        op = m.create("cnmlCreateConvOp", param, tin, tout, tf, tb)
    else:
        op = m.create("cnmlCreateConvGroupOp", param, tin, tout, tf, tb, group)
    q = m.quant_param(px, sx)
    m.check("cnmlSetOperationComputingDataType", op, tin, m.INT8, q)
    m.check("cnmlDestroyQuantizedParam", m.C.byref(q))  # the op keeps a copy
    y, _ = m.run_base(op, "cnmlComputeConvOpForward_V4", (tin, x), (tout, (n, co, ho, wo), F16),
                      mp=2)
    acc = conv_int64(quantize(x, px, sx), wq, group, stride, dil, pads)
    f = rescale_factors(px, sx, pw, sw) * np.ones(co, F32)
    ref = epilogue(acc, f, bias)
    assert np.array_equal(y.view(np.uint16), ref.view(np.uint16))


@pytest.mark.parametrize("batch", [1, 3, 7])
def test_int8_mlp_bit_exact_long_reduction(batch):
    """K = 3000: |acc| reaches ~4.8e7 > 2^24, where fp32 sums of the products would round."""
    rng = np.random.default_rng(batch)
    k, co = 3000, 37
    x = (rng.standard_normal((batch, k)) * 200).astype(F16)  # most q saturate at +-127
    wq = rng.choice(np.array([-127, -126, 125, 127], np.int8), (co, k))
    wq[:co // 2] = np.where(x[0] >= 0, 127, -127)  # products of one sign: large sums
    bias = rng.standard_normal(co).astype(F16)
    px, sx, pw = 0, 1.0, rng.integers(-4, 1, co)
    sw = rng.uniform(0.7, 1.3, co).astype(F32)
    tin, tout = m.tensor(x.shape, m.FLOAT16), m.tensor([batch, co], m.FLOAT16)
    tf, tb = m.const(wq, m.INT8, m.FILTER), m.const(bias, m.FLOAT16)
    set_filter_quant(tf, co, pw, sw, True)
    op = m.create("cnmlCreateMlpOp", tin, tout, tf, tb, m.NO_SPARSE)
    m.check("cnmlSetOperationComputingDataType", op, tin, m.INT8, m.quant_param(px, sx))
    (y,) = m.run_fused([op], [(tin, x)], [(tout, (batch, co), F16)])
    acc = quantize(x, px, sx) @ wq.astype(np.int64).T
    assert np.abs(acc).max() > 2**24
    ref = epilogue(acc, rescale_factors(px, sx, pw, sw), bias)
    assert np.array_equal(y.view(np.uint16), ref.view(np.uint16))
    # An fp32 accumulation would not have been exact here.
    xq, wf = quantize(x, px, sx).astype(F32), wq.astype(F32)
    fp32_sum = np.zeros((batch, co), F32)
    for i in range(k):
        fp32_sum += xq[:, i:i + 1] * wf[:, i]
    assert (fp32_sum.astype(np.int64) != acc).any()


def test_int8_conv_fused_with_fp16_ops_and_against_float64():
    """conv (int8) + relu (fp16) fused; the result is near the float64 conv of the
    dequantised operands (the error is the fp16 rounding alone)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 16, 8, 8)).astype(F16)
    wq = rng.integers(-127, 128, (8, 16, 3, 3)).astype(np.int8)
    px, sx, pw, sw = -4, 1.0, -6, 1.0
    tin, tc, tr = (m.tensor([1, 16, 8, 8], m.FLOAT16), m.tensor([1, 8, 8, 8], m.FLOAT16),
                   m.tensor([1, 8, 8, 8], m.FLOAT16))
    tf = m.const(wq, m.INT8, m.FILTER)
    set_filter_quant(tf, 8, pw, sw, False)
    conv = m.create("cnmlCreateConvOp", m.conv_param(pads=(1, 1, 1, 1)), tin, tc, tf, None)
    m.check("cnmlSetOperationComputingDataType", conv, tin, m.INT8, m.quant_param(px, sx))
    relu = m.create("cnmlCreateActiveOp", 2, tc, tr)
    (y,) = m.run_fused([conv, relu], [(tin, x)], [(tr, (1, 8, 8, 8), F16)])
    xq = quantize(x, px, sx)
    acc = conv_int64(xq, wq, 1, (1, 1), (1, 1), (1, 1, 1, 1))
    truth = np.maximum(acc * 2.0 ** (px + pw), 0)  # float64, exact
    assert (np.abs(y.astype(np.float64) - truth) <= np.abs(truth) * 2.0**-11 + 2.0**-24).all()


def test_host_int8_casts_use_the_same_formula():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(5000) * 30, np.arange(-300, 300) / 4.0,
                        [np.inf, -np.inf, 1e30, -1e30, 0.0]]).astype(F32)
    for pos, scale in [(0, 1.0), (-3, 1.7), (4, 0.3), (-32, 2.5), (32, 1e9)]:
        p = m.cnrt_param(pos, scale)
        q = m.cast_host(x, m.CNRT_FLOAT32, np.int8, m.CNRT_INT8, p)
        assert np.array_equal(q.astype(np.int64), quantize(x, pos, scale)), (pos, scale)
        back = m.cast_host(q, m.CNRT_INT8, F32, m.CNRT_FLOAT32, p)
        ref = (q.astype(np.float64) * 2.0**pos / np.float64(F32(scale))).astype(F32)
        assert np.array_equal(back, ref)
        m.check("cnrtDestroyQuantizedParam", p)
    # Ties round half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2.
    p = m.cnrt_param(0, 1.0)
    q = m.cast_host(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, 127.5], F32), m.CNRT_FLOAT32,
                    np.int8, m.CNRT_INT8, p)
    assert q.tolist() == [0, 2, 2, 0, -2, 126, 127]
