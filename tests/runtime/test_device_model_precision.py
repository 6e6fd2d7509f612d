"""The device model prices by precision (device_model.h): fp16 beats fp32 and int8 beats fp16
on a compute-bound conv, a memory-bound op moves half the bytes in fp16, the simulated time
of a compiled op equals the estimate, and Python's per-layer precisions (cost_table,
estimate_block, explain_block) price an fp32-built layer as if built in another precision."""

from __future__ import annotations

import numpy as np
import pytest

import mock_sdk as m
from paleozoic import _runtime as rt

AS_BUILT, FP32, FP16, INT8 = -1, 0, 1, 2


@pytest.fixture(autouse=True)
def builtin_profile():
    rt.reset_device_profile()
    yield
    rt.reset_device_profile()


def big_conv(dtype, int8=False):
    """A compute-bound conv: 256 -> 256 channels, 3x3, 28x28."""
    tin, tout = m.tensor([1, 256, 28, 28], dtype), m.tensor([1, 256, 28, 28], dtype)
    w = np.zeros((256, 256, 3, 3))
    tf = m.const(w, m.INT8 if int8 else dtype, m.FILTER)
    op = m.create("cnmlCreateConvOp", m.conv_param(pads=(1, 1, 1, 1)), tin, tout, tf, None)
    if int8:
        m.check("cnmlSetQuantizedPosition", tf, 0)
        m.check("cnmlSetQuantizedScale", tf, m.f32(1))
        m.check("cnmlSetOperationComputingDataType", op, tin, m.INT8, m.quant_param(0, 1.0))
    return op, tin, tout


def test_compute_bound_conv_speeds_up_with_precision():
    times = {}
    for name, dtype, int8 in [("fp32", m.FLOAT32, False), ("fp16", m.FLOAT16, False),
                              ("int8", m.FLOAT16, True)]:
        op, tin, tout = big_conv(dtype, int8)
        est = m.estimate_base(op, AS_BUILT, 4)
        x = np.zeros((1, 256, 28, 28), np.float32 if dtype == m.FLOAT32 else np.float16)
        _, us = m.run_base(op, "cnmlComputeConvOpForward_V4", (tin, x),
                           (tout, x.shape, x.dtype), mp=4)
        assert us == pytest.approx(est, rel=1e-6)  # what runs is what is estimated
        times[name] = us
    assert times["fp16"] < times["fp32"] and times["int8"] < times["fp16"]
    profile = rt.device_profile()
    launch = profile["launch_us"] + profile["sync_us_per_log2_core"] * 2
    # Compute-bound: the compute part scales with the peak rates (fp32_rate, 64 vs 128).
    assert (times["fp32"] - launch) / (times["fp16"] - launch) == pytest.approx(
        1 / profile["fp32_rate"], rel=1e-3)
    assert (times["fp16"] - launch) / (times["int8"] - launch) == pytest.approx(
        profile["peak_int8_tops"] / profile["peak_fp16_tflops"], rel=1e-3)
    # The fp32-built op priced as fp16 / int8 equals the op built so.
    op32, *_ = big_conv(m.FLOAT32)
    assert m.estimate_base(op32, FP16, 4) == pytest.approx(times["fp16"], rel=1e-6)
    assert m.estimate_base(op32, INT8, 4) == pytest.approx(times["int8"], rel=1e-6)
    assert m.estimate_base(op32, FP32, 4) == pytest.approx(times["fp32"], rel=1e-6)


def test_memory_bound_op_halves_bytes_in_fp16():
    def relu(dtype):
        t, o = m.tensor([1, 64, 112, 112], dtype), m.tensor([1, 64, 112, 112], dtype)
        return m.create("cnmlCreateActiveOp", 2, t, o), o

    r32, o32 = relu(m.FLOAT32)
    r16, o16 = relu(m.FLOAT16)
    e32, e16 = m.explain([r32], [o32], 8), m.explain([r16], [o16], 8)
    dram32, dram16 = e32[5], e16[5]
    assert dram16 == pytest.approx(dram32 / 2, rel=1e-12)
    assert e16[0] < e32[0]
    # The override prices the fp32 op as the fp16 one.
    assert m.explain([r32], [o32], 8, [FP16])[5] == pytest.approx(dram16, rel=1e-12)
    # int8 on an op without an int8 mode is fp16.
    assert np.allclose(m.explain([r32], [o32], 8, [INT8]), e16)


def test_int8_filter_bytes_and_cast_pricing():
    op16, _, out16 = big_conv(m.FLOAT16)
    op8, _, out8 = big_conv(m.FLOAT16, int8=True)
    profile = rt.device_profile()
    bw = profile["dram_gbps"] * 1e3 * profile["dram_efficiency"]
    # Same fp16 activations, the filter at 1 byte instead of 2.
    d16, d8 = m.explain([op16], [out16], 4)[5], m.explain([op8], [out8], 4)[5]
    assert (d16 - d8) * bw == pytest.approx(256 * 256 * 9, rel=1e-9)
    # A cast is element-wise data movement: 4 + 2 bytes per element.
    a, b = m.tensor([1, 32, 64, 64]), m.tensor([1, 32, 64, 64], m.FLOAT16)
    cast = m.create("cnmlCreateCastOp", m.CAST_F32_TO_F16, a, b)
    e = m.explain([cast], [b], 1)
    assert e[5] * bw == pytest.approx(32 * 64 * 64 * 6, rel=1e-9)
    assert e[3] < e[5]  # memory-bound
    assert np.allclose(m.explain([cast], [b], 1, [FP32]), e)  # overrides skip casts


def test_python_precisions_reach_the_model():
    s = rt.Session()
    x = s.input("x", [1, 64, 56, 56])
    conv = s.conv("c", x, 64, [3, 3], pads=[1, 1, 1, 1])
    relu = s.active("r", conv.output, "relu")
    s.mark_output(relu.output)
    layers = [conv, relu]
    mps = [1, 4, 16]
    base = s.cost_table(layers, mps)
    assert np.array_equal(base, s.cost_table(layers, mps, precisions=None))
    assert np.array_equal(base, s.cost_table(layers, mps, precisions=["fp32", None]))
    t16 = s.cost_table(layers, mps, precisions=["fp16", "fp16"])
    t8 = s.cost_table(layers, mps, precisions=["int8", "fp16"])
    assert (t16[0, 1] < base[0, 1]).all() and (t8[0, 1] < t16[0, 1]).all()
    assert (t8[0, 2] < t16[0, 2]).all() and (t16[0, 2] < base[0, 2]).all()
    for k, mp in enumerate(mps):
        assert s.estimate_block(layers, mp, precisions=["int8", "fp16"]) == pytest.approx(
            t8[0, 2, k], rel=1e-6)
        assert s.estimate_block([conv], mp, fuse=False, precisions=["fp16"]) == pytest.approx(
            t16[0, 1, k], rel=1e-6)
    explained = s.explain_block(layers, 4, precisions=["fp16", "fp16"])
    assert explained["total_us"] == pytest.approx(t16[0, 2, 1], rel=1e-6)
    with pytest.raises(rt.Error, match="precisions"):
        s.cost_table(layers, mps, precisions=["fp16"])
    with pytest.raises(rt.Error, match="bf16"):
        s.cost_table(layers, mps, precisions=["bf16", None])
