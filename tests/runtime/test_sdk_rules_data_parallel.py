"""Data parallelism (MLU100, the forwards' cnrtInvokeFuncParam_t): its rules as status codes,
the same numbers at every data parallelism, and a device time that splits the frames among
groups of cores sharing the chip's DRAM."""

from __future__ import annotations

import ctypes as C

import numpy as np
import pytest

import mock_sdk as m
from mock_sdk import INVALIDARG, INVALIDPARAM, SUCCESS

F32 = np.float32


def _conv(batch: int, channels: int = 16, size: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((channels, channels, 3, 3)).astype(F32)
    tin = m.tensor([batch, channels, size, size])
    tout = m.tensor([batch, channels, size, size])
    op = m.create("cnmlCreateConvOp", m.conv_param(pads=(1, 1, 1, 1)), tin, tout,
                  m.const(w, m.FLOAT32, m.FILTER), m.const(np.zeros(channels, F32), m.FLOAT32))
    return op, tin, tout


def _forward(op, tin, tout, x, extra) -> int:
    bin_, bout = m.Buffer.of(x), m.Buffer(x.nbytes)
    return m.call("cnmlComputeConvOpForward_V4", op, tin, bin_.ptr, tout, bout.ptr, m.queue(),
                  extra)


def test_data_parallelism_rules():
    x = np.ones((4, 16, 12, 12), F32)
    op, tin, tout = _conv(batch=4)
    m.check("cnmlCompileBaseOp", op, m.MLU100, 8)
    assert _forward(op, tin, tout, x, None) == SUCCESS
    assert _forward(op, tin, tout, x, m.invoke_param(4)) == SUCCESS      # 4 x 8 = 32 cores
    assert _forward(op, tin, tout, x, m.invoke_param(8)) == INVALIDARG   # 8 x 8 = 64 > 32
    assert _forward(op, tin, tout, x, m.invoke_param(3)) == INVALIDARG   # 4 frames, 3 groups
    assert _forward(op, tin, tout, x, m.invoke_param(0)) == INVALIDARG
    assert _forward(op, tin, tout, x, m.invoke_param(None)) == INVALIDPARAM
    assert _forward(op, tin, tout, x, m.invoke_param(2, end=0)) == INVALIDPARAM


def test_data_parallelism_keeps_the_numbers_and_prices_one_group_of_frames():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 16, 12, 12)) * 50).astype(F32)
    op, tin, tout = _conv(batch=4)
    outs, times = {}, {}
    for dp in (1, 2, 4):
        outs[dp], times[dp] = m.run_base(op, "cnmlComputeConvOpForward_V4", (tin, x),
                                         (tout, x.shape, F32), mp=2,
                                         extra=m.invoke_param(dp), compile_op=dp == 1)
        estimate = C.c_float()
        m.check("cnmlMockEstimateBaseOpUs_V3", op, -1, 2, m.invoke_param(dp), C.byref(estimate))
        assert times[dp] == pytest.approx(estimate.value, rel=1e-6)
    np.testing.assert_array_equal(outs[1], outs[2])
    np.testing.assert_array_equal(outs[1], outs[4])
    assert len(set(times.values())) == 3  # priced per data parallelism
    est = C.c_float()
    assert m.call("cnmlMockEstimateBaseOpUs_V3", op, -1, 16, m.invoke_param(4),
                  C.byref(est)) == INVALIDPARAM


def _estimate(op, mp: int, dp: int, affinity: int | None = None) -> float:
    us = C.c_float()
    m.check("cnmlMockEstimateBaseOpUs_V3", op, -1, mp, m.invoke_param(dp, affinity=affinity),
            C.byref(us))
    return us.value


def test_groups_share_dram_and_each_reads_the_whole_weights():
    # A fully connected layer at batch 8 is bound by its 64 MB filter: every group of
    # frames reads all of it through the one DRAM, so data parallelism costs time there...
    fc = m.const(np.zeros((4096, 4096), F32), m.FLOAT32, m.FILTER)
    mlp = m.create("cnmlCreateMlpOp", m.tensor([8, 4096]), m.tensor([8, 4096]), fc, None,
                   m.NO_SPARSE)
    weights_us = 4096 * 4096 * 4 / (102.4e3 * 0.8)  # bytes / (DRAM bytes per us)
    assert _estimate(mlp, 1, 1) == pytest.approx(10 + weights_us, rel=0.02)
    assert _estimate(mlp, 1, 8) == pytest.approx(10 + 8 * weights_us, rel=0.02)
    # ... while a compute-bound convolution splits its frames: 8 groups of one frame on one
    # core each take an eighth of the time of one core on all 8 frames (plus the launch).
    op, _, _ = _conv(batch=8, channels=256, size=28)
    one, eight = _estimate(op, 1, 1), _estimate(op, 1, 8)
    assert (eight - 10) == pytest.approx((one - 10) / 8, rel=0.02)


def test_affinity_pins_a_forward_to_its_cores_and_their_share_of_the_dram():
    x = np.ones((4, 16, 12, 12), F32)
    op, tin, tout = _conv(batch=4)
    m.check("cnmlCompileBaseOp", op, m.MLU100, 8)
    assert _forward(op, tin, tout, x, m.invoke_param(1, affinity=0xFF)) == SUCCESS
    assert _forward(op, tin, tout, x, m.invoke_param(1, affinity=0xFF00)) == SUCCESS
    assert _forward(op, tin, tout, x, m.invoke_param(1, affinity=0x7F)) == INVALIDARG  # 7 < 8
    assert _forward(op, tin, tout, x, m.invoke_param(2, affinity=0xFF)) == INVALIDARG  # 2 x 8
    assert _forward(op, tin, tout, x, m.invoke_param(1, affinity=0)) == INVALIDARG
    # A filter-bound fully connected layer on 8 of the 32 cores has a quarter of the DRAM
    # (the channels of its cores), so it reads its filter four times slower.
    fc = m.const(np.zeros((2048, 2048), F32), m.FLOAT32, m.FILTER)
    mlp = m.create("cnmlCreateMlpOp", m.tensor([1, 2048]), m.tensor([1, 2048]), fc, None,
                   m.NO_SPARSE)
    whole, pinned = _estimate(mlp, 8, 1), _estimate(mlp, 8, 1, affinity=0xFF)
    assert (pinned - 10.0 - 1.5) == pytest.approx(4 * (whole - 10.0 - 1.5), rel=0.02)
