"""fp16 in the mock SDK (numerics.h): binary16 storage, host and on-device casts bit-exact
against numpy, and every op kind in fp16 mode equal bit for bit to "decode the fp16 inputs,
run the same op in fp32 on the mock, round once to fp16", and close to float64 truth."""

from __future__ import annotations

import numpy as np
import pytest

import mock_sdk as m

F16, F32 = np.float16, np.float32
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered")


def special_floats(rng: np.random.Generator) -> np.ndarray:
    """Ties, overflow, subnormals, signed zeros, infinities and ordinary values."""
    h = np.arange(0, 0x7C00, 7, dtype=np.uint16).view(F16).astype(np.float64)
    nxt = np.nextafter(h.astype(F16), F16(np.inf)).astype(np.float64)
    ties = ((h + nxt) / 2).astype(F32)                     # exact midpoints
    around = np.concatenate([np.nextafter(ties, F32(np.inf)), np.nextafter(ties, F32(-np.inf))])
    edges = np.array([65504, 65519.996, 65520, 65536, 1e6, 3e38, 2.0**-24, 2.0**-25,
                      2.0**-25 * 1.0000001, 2.0**-26, 1.5 * 2.0**-24, 2.0**-14, 6.1e-5,
                      0.0, -0.0, np.inf, -np.inf, 1e-30], dtype=F32)
    normal = (rng.standard_normal(20000) * np.float32(10.0) ** rng.integers(-8, 6, 20000)).astype(F32)
    x = np.concatenate([ties, around, edges, normal])
    return np.concatenate([x, -x]).astype(F32)


def test_host_cast_fp32_to_fp16_and_back_bit_exact(rng):
    x = special_floats(rng)
    h = m.cast_host(x, m.CNRT_FLOAT32, np.uint16, m.CNRT_FLOAT16)
    assert np.array_equal(h, x.astype(F16).view(np.uint16))
    all_halves = np.arange(0, 1 << 16, dtype=np.uint16)
    back = m.cast_host(all_halves, m.CNRT_FLOAT16, F32, m.CNRT_FLOAT32)
    ref = all_halves.view(F16).astype(F32)
    finite = ~np.isnan(ref)
    assert np.array_equal(back[finite].view(np.uint32), ref[finite].view(np.uint32))
    assert np.isnan(back[~finite]).all()
    nan = m.cast_host(np.array([np.nan, -np.nan], F32), m.CNRT_FLOAT32, F16, m.CNRT_FLOAT16)
    assert np.isnan(nan).all()


def test_cast_ops_bit_exact_both_ways(rng):
    x = special_floats(rng)[None, :]
    t32, t16, back = m.tensor(x.shape), m.tensor(x.shape, m.FLOAT16), m.tensor(x.shape)
    down = m.create("cnmlCreateCastOp", m.CAST_F32_TO_F16, t32, t16)
    up = m.create("cnmlCreateCastOp", m.CAST_F16_TO_F32, t16, back)
    # Fused: cast down and up again; the fp16 intermediate stays on chip.
    h, y = m.run_fused([down, up], [(t32, x)], [(t16, x.shape, F16), (back, x.shape, F32)])
    assert np.array_equal(h.view(np.uint16), x.astype(F16).view(np.uint16))
    ref = x.astype(F16).astype(F32)
    assert np.array_equal(y.view(np.uint32), ref.view(np.uint32))
    # Base op forward.
    t32b, t16b = m.tensor(x.shape), m.tensor(x.shape, m.FLOAT16)
    op = m.create("cnmlCreateCastOp", m.CAST_F32_TO_F16, t32b, t16b)
    out, us = m.run_base(op, "cnmlComputeCastOpForward_V4", (t32b, x), (t16b, x.shape, F16))
    assert np.array_equal(out.view(np.uint16), x.astype(F16).view(np.uint16)) and us > 0


def test_tensor_sizes_and_bind_follow_dtype():
    t = m.tensor([2, 3, 4], m.FLOAT16)
    size = m.C.c_size_t()
    m.check("cnmlGetTensorSize_V2", t, m.C.byref(size))
    assert size.value == 2 * 24
    f = m.tensor([4, 6], m.INT8, m.FILTER)
    m.check("cnmlGetTensorSize_V2", f, m.C.byref(size))
    assert size.value == 24


# ---- every op kind in fp16 mode ------------------------------------------------------------
# Each case: (name, builder(dtype, const_dtype) -> (ops, inputs (tensor, f32 array), outputs
# (tensor, shape)), the worst relative-to-scale error against float64 truth).


def _data(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


def _np(dtype):
    return F16 if dtype == m.FLOAT16 else F32


def _const(array, dtype, ttype=m.CONST):
    return m.const(array.astype(_np(dtype)), dtype, ttype)


def case_conv(rng, dt, group=1, stride=(1, 1), dil=(1, 1), pads=(1, 1,1, 1)):
    x, w, b = _data(rng, 2, 8, 9, 9), _data(rng, 8, 8 // group, 3, 3, scale=0.3), _data(rng, 8)
    ho = (9 + pads[0] + pads[1] - dil[0] * 2 - 1) // stride[0] + 1
    wo = (9 + pads[2] + pads[3] - dil[1] * 2 - 1) // stride[1] + 1
    tin, tout = m.tensor(x.shape, dt), m.tensor([2, 8, ho, wo], dt)
    p = m.conv_param(stride, dil, pads)
    tf, tb = _const(w, dt, m.FILTER), _const(b, dt)
    if group == 1:
        op = m.create("cnmlCreateConvOp", p, tin, tout, tf, tb)
    else:
        op = m.create("cnmlCreateConvGroupOp", p, tin, tout, tf, tb, group)
    return [op], [(tin, x)], [(tout, (2, 8, ho, wo))]


def case_mlp(rng, dt):
    x, w, b = _data(rng, 3, 40), _data(rng, 7, 40, scale=0.2), _data(rng, 7)
    tin, tout = m.tensor(x.shape, dt), m.tensor([3, 7], dt)
    op = m.create("cnmlCreateMlpOp", tin, tout, _const(w, dt, m.FILTER), _const(b, dt), m.NO_SPARSE)
    return [op], [(tin, x)], [(tout, (3, 7))]


def case_pool(rng, dt, mode):
    x = _data(rng, 1, 4, 8, 8, scale=5)
    p = m.P()
    m.check("cnmlCreatePoolOpParam_V3", m.C.byref(p), 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, mode, 1,
            True, m.f32(0.0))
    tin, tout = m.tensor(x.shape, dt), m.tensor([1, 4, 4, 4], dt)
    return [m.create("cnmlCreatePoolOp", p, tin, tout)], [(tin, x)], [(tout, (1, 4, 4, 4))]


def case_active(rng, dt, fn):
    x = _data(rng, 2, 3, 5, 5, scale=3)
    tin, tout = m.tensor(x.shape, dt), m.tensor(x.shape, dt)
    return [m.create("cnmlCreateActiveOp", fn, tin, tout)], [(tin, x)], [(tout, x.shape)]


def case_affine(rng, dt, bn):
    x, a, b = _data(rng, 2, 3, 4, 4, scale=4), _data(rng, 3), _data(rng, 3)
    tin, tout = m.tensor(x.shape, dt), m.tensor(x.shape, dt)
    fn = "cnmlCreateBatchNormOp" if bn else "cnmlCreateScaleOp"
    op = m.create(fn, tin, tout, _const(a, dt), _const(b, dt))
    return [op], [(tin, x)], [(tout, x.shape)]


def case_binary(rng, dt, fn, b_shape=None):
    x = _data(rng, 2, 3, 4, 4, scale=100)
    y = _data(rng, *(b_shape or x.shape), scale=100)
    if fn == "cnmlCreateRealDivOp":
        y = np.where(np.abs(y) < 1, 1 + np.abs(y), y).astype(F32)
    t1, t2, to = m.tensor(x.shape, dt), m.tensor(y.shape, dt), m.tensor(x.shape, dt)
    return [m.create(fn, t1, t2, to)], [(t1, x), (t2, y)], [(to, x.shape)]


def case_softmax(rng, dt):
    x = _data(rng, 3, 10, scale=4)
    tin, tout = m.tensor(x.shape, dt), m.tensor(x.shape, dt)
    return [m.create("cnmlCreateSoftmaxOp", 1, tin, tout)], [(tin, x)], [(tout, x.shape)]


def case_concat(rng, dt):
    a, b = _data(rng, 1, 2, 3, 3), _data(rng, 1, 3, 3, 3)
    ta, tb, to = m.tensor(a.shape, dt), m.tensor(b.shape, dt), m.tensor([1, 5, 3, 3], dt)
    op = m.create("cnmlCreateNdConcatOp", 1, m.handles([ta, tb]), 2, m.handles([to]), 1)
    return [op], [(ta, a), (tb, b)], [(to, (1, 5, 3, 3))]


def case_concat_constant(rng, dt):
    """A CNML_CONST operand between two activations (a class token is one before them)."""
    a, c, b = _data(rng, 2, 2, 5), _data(rng, 2, 1, 5, scale=30), _data(rng, 2, 3, 5)
    ta, tb, to = m.tensor(a.shape, dt), m.tensor(b.shape, dt), m.tensor([2, 6, 5], dt)
    op = m.create("cnmlCreateNdConcatOp", 1, m.handles([ta, _const(c, dt), tb]), 3,
                  m.handles([to]), 1)
    return [op], [(ta, a), (tb, b)], [(to, (2, 6, 5))]


def test_concat_with_a_constant_operand(rng):
    """fp32: the constant lands in its place; a concat of constants only is no op."""
    a, c, b = _data(rng, 2, 2, 5), _data(rng, 2, 1, 5), _data(rng, 2, 3, 5)
    ta, tb, to = m.tensor(a.shape), m.tensor(b.shape), m.tensor([2, 6, 5])
    op = m.create("cnmlCreateNdConcatOp", 1, m.handles([ta, m.const(c, m.FLOAT32), tb]), 3,
                  m.handles([to]), 1)
    (got,) = m.run_fused([op], [(ta, a), (tb, b)], [(to, (2, 6, 5), F32)])
    assert np.array_equal(got, np.concatenate([a, c, b], axis=1))
    out = m.tensor([2, 2, 5])
    op = m.P()
    status = m.call("cnmlCreateNdConcatOp", m.C.byref(op), 1,
                    m.handles([m.const(c, m.FLOAT32), m.const(c, m.FLOAT32)]), 2,
                    m.handles([out]), 1)
    assert status == m.UNSUPPORT
    unbound = m.tensor([2, 1, 5], m.FLOAT32, m.FILTER)  # a FILTER is no concat operand
    status = m.call("cnmlCreateNdConcatOp", m.C.byref(op), 1, m.handles([ta, unbound]), 2,
                    m.handles([m.tensor([2, 3, 5])]), 1)
    assert status == m.INVALIDPARAM


def case_lrn(rng, dt):
    x = _data(rng, 1, 6, 4, 4, scale=3)
    p = m.P()
    m.check("cnmlCreateLrnOpParam", m.C.byref(p), 2, 5, m.C.c_double(1e-2), m.C.c_double(0.75),
            m.C.c_double(1.0))
    tin, tout = m.tensor(x.shape, dt), m.tensor(x.shape, dt)
    return [m.create("cnmlCreateLrnOp", p, tin, tout)], [(tin, x)], [(tout, x.shape)]


def case_reshape_transpose(rng, dt):
    x = _data(rng, 2, 3, 4, 5, scale=1000)
    p = m.P()
    m.check("cnmlCreateNdReshapeOpParam", m.C.byref(p), m.ints([2, 60]), 2)
    tin, tr = m.tensor(x.shape, dt), m.tensor([2, 60], dt)
    reshape = m.create("cnmlCreateReshapeOp", p, tin, tr)
    q = m.P()
    m.check("cnmlCreateNdTransposeOpParam", m.C.byref(q), m.ints([1, 0]), 2)
    tt = m.tensor([60, 2], dt)
    transpose = m.create("cnmlCreateNdTransposeProOp", tr, tt, q)
    return [reshape, transpose], [(tin, x)], [(tt, (60, 2))]


def case_slice_prelu(rng, dt):
    x = _data(rng, 1, 4, 6, 6, scale=3)
    p = m.P()
    m.check("cnmlCreateNdStridedSliceOpParam", m.C.byref(p), 4, m.ints([0, 1, 0, 1]),
            m.ints([1, 4, 6, 6]), m.ints([1, 1, 2, 2]))
    tin, ts = m.tensor(x.shape, dt), m.tensor([1, 3, 3, 3], dt)
    sl = m.create("cnmlCreateNdStridedSliceOp", p, tin, ts)
    tp = m.tensor([1, 3, 3, 3], dt)
    prelu = m.create("cnmlCreatePreluOp", ts, tp, _const(_data(rng, 3), dt))
    return [sl, prelu], [(tin, x)], [(tp, (1, 3, 3, 3))]


def case_deconv(rng, dt):
    x, w, b = _data(rng, 1, 4, 5, 5), _data(rng, 4, 3, 3, 3, scale=0.3), _data(rng, 3)
    p = m.P()
    m.check("cnmlCreateDeconvOpParam", m.C.byref(p), 2, 2, 1, 1, 1, 1)
    tin, tout = m.tensor(x.shape, dt), m.tensor([1, 3, 9, 9], dt)
    op = m.create("cnmlCreateDeconvOp", p, tin, tout, _const(w, dt, m.FILTER), _const(b, dt))
    return [op], [(tin, x)], [(tout, (1, 3, 9, 9))]


def case_resize(rng, dt, bilinear):
    x = _data(rng, 1, 2, 4, 4, scale=7)
    p = m.P()
    if bilinear:
        m.check("cnmlCreateInterpOpParam", m.C.byref(p), 7, 6, False)
    else:
        m.check("cnmlCreateNearestNeighborOpParam", m.C.byref(p), 7, 6)
    tin, tout = m.tensor(x.shape, dt), m.tensor([1, 2, 6, 7], dt)
    fn = "cnmlCreateInterpOp" if bilinear else "cnmlCreateNearestNeighborOp"
    return [m.create(fn, tin, tout, p)], [(tin, x)], [(tout, (1, 2, 6, 7))]


CASES = {
    "conv": (case_conv, {}),
    "conv_strided_dilated": (case_conv, {"stride": (2, 1), "dil": (2, 2), "pads": (2, 1, 0, 2)}),
    "conv_group": (case_conv, {"group": 2}),
    "conv_depthwise": (case_conv, {"group": 8}),
    "mlp": (case_mlp, {}),
    "pool_max": (case_pool, {"mode": 1}),
    "pool_avg": (case_pool, {"mode": 0}),
    "relu": (case_active, {"fn": 2}),
    "sigmoid": (case_active, {"fn": 1}),
    "tanh": (case_active, {"fn": 3}),
    "batchnorm": (case_affine, {"bn": True}),
    "scale": (case_affine, {"bn": False}),
    "add": (case_binary, {"fn": "cnmlCreateAddOp"}),
    "sub": (case_binary, {"fn": "cnmlCreateSubOp"}),
    "mult": (case_binary, {"fn": "cnmlCreateMultOp"}),
    "realdiv": (case_binary, {"fn": "cnmlCreateRealDivOp"}),
    "broadcast_mult": (case_binary, {"fn": "cnmlCreateBroadcastMultOp", "b_shape": (1, 3, 1, 1)}),
    "softmax": (case_softmax, {}),
    "concat": (case_concat, {}),
    "concat_constant": (case_concat_constant, {}),
    "lrn": (case_lrn, {}),
    "reshape_transpose": (case_reshape_transpose, {}),
    "slice_prelu": (case_slice_prelu, {}),
    "deconv": (case_deconv, {}),
    "nearest": (case_resize, {"bilinear": False}),
    "bilinear": (case_resize, {"bilinear": True}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fp16_mode_is_fp32_kernel_rounded_once(name):
    build, kw = CASES[name]
    # fp16 session: inputs rounded to fp16 (and consts: the same seed gives the same data).
    ops16, ins16, outs16 = build(np.random.default_rng(7), m.FLOAT16, **kw)
    feeds16 = [(t, a.astype(F16)) for t, a in ins16]
    got = m.run_fused(ops16, feeds16, [(t, s, F16) for t, s in outs16])
    # The reference: the same op in fp32 on the fp16-decoded inputs and consts.
    ops32, ins32, outs32 = _fp32_twin(build, kw)
    feeds32 = [(t, a.astype(F16).astype(F32)) for t, a in ins32]
    ref32 = m.run_fused(ops32, feeds32, [(t, s, F32) for t, s in outs32])
    for g, r in zip(got, ref32):
        assert np.array_equal(g.view(np.uint16), r.astype(F16).view(np.uint16)), name
    # Against float64 truth (fp32 ops on the same rounded inputs): the fp16 result is within
    # one half-ulp of fp16 plus the fp32 kernel's own error.
    for g, r in zip(got, ref32):
        r64 = r.astype(np.float64)
        bound = np.abs(r64) * 2.0**-11 + 2.0**-24 + 1e-5 * np.abs(r64).max()
        assert (np.abs(g.astype(np.float64) - r64) <= bound).all(), name


def _fp32_twin(build, kw):
    """The case built in fp32 with consts that are the fp16 case's consts decoded."""
    real_const = m.const

    def rounded_const(array, dtype, ttype=m.CONST):
        return real_const(np.asarray(array).astype(F16).astype(F32), m.FLOAT32, ttype)

    m.const = rounded_const
    try:
        return build(np.random.default_rng(7), m.FLOAT32, **kw)
    finally:
        m.const = real_const


def test_fp16_block_with_casts_at_its_boundary(rng):
    """fp32 in, cast, conv + relu in fp16, cast back: what the wrapper builds."""
    x, w = _data(rng, 1, 4, 6, 6, scale=3), _data(rng, 4, 4, 3, 3, scale=0.5)
    t_in, t_h = m.tensor(x.shape), m.tensor(x.shape, m.FLOAT16)
    t_c, t_r, t_out = (m.tensor([1, 4, 6, 6], m.FLOAT16), m.tensor([1, 4, 6, 6], m.FLOAT16),
                       m.tensor([1, 4, 6, 6]))
    ops = [m.create("cnmlCreateCastOp", m.CAST_F32_TO_F16, t_in, t_h),
           m.create("cnmlCreateConvOp", m.conv_param(pads=(1, 1, 1, 1)), t_h, t_c,
                    m.const(w.astype(F16), m.FLOAT16, m.FILTER), None),
           m.create("cnmlCreateActiveOp", 2, t_c, t_r),
           m.create("cnmlCreateCastOp", m.CAST_F16_TO_F32, t_r, t_out)]
    (y,) = m.run_fused(ops, [(t_in, x)], [(t_out, (1, 4, 6, 6), F32)])
    t32_in, t32_out = m.tensor(x.shape), m.tensor([1, 4, 6, 6])
    conv32 = m.create("cnmlCreateConvOp", m.conv_param(pads=(1, 1, 1, 1)), t32_in, t32_out,
                      m.const(w.astype(F16).astype(F32), m.FLOAT32, m.FILTER), None)
    (c32,) = m.run_fused([conv32], [(t32_in, x.astype(F16).astype(F32))],
                         [(t32_out, (1, 4, 6, 6), F32)])
    ref = np.maximum(c32.astype(F16), 0).astype(F32)
    assert np.array_equal(y, ref)
