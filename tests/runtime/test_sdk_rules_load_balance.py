"""Load balance (MLU100). CNML's data-preprocess strategy: its rules as status codes, the same
bits wherever the conversion runs, and a device time that holds the conversion only when the
fusion op does it (MLU priority), priced as the casts a caller would fuse by hand. CNRT's
channel placement: per host thread, at MP 1 only, a forward on one channel's cores and share
of the DRAM."""

from __future__ import annotations

import ctypes as C
import threading
from pathlib import Path

import numpy as np
import pytest

import mock_sdk as m
from paleozoic import _runtime
from mock_sdk import INVALIDARG, INVALIDPARAM, SUCCESS

F32, F16 = np.float32, np.float16
BALANCE, CPU, MLU, NONE = 0, 1, 2, 3  # cnmlDataPreprocessStrategy_t
NCHW, NHWC = 0, 1
RELU = 2
SHAPE = (2, 8, 16, 16)


def _twin(dtype: int = m.FLOAT32, elements: int = int(np.prod(SHAPE))) -> m.P:
    twin = m.P()
    m.check("cnmlCreateCpuTensor", C.byref(twin), m.TENSOR, dtype, NCHW, elements, 1, 1, 1)
    return twin


def _strategy(tensor: m.P) -> int:
    got = C.c_int()
    status = m.call("cnmlMockGetDataPreprocessStrategy", tensor, C.byref(got))
    return got.value if status == SUCCESS else -status


def test_cpu_tensor_and_strategy_rules():
    twin = m.P()
    create = lambda *a: m.call("cnmlCreateCpuTensor", C.byref(twin), *a)  # noqa: E731
    assert m.call("cnmlCreateCpuTensor", None, m.TENSOR, m.FLOAT32, NCHW, 1, 1, 1, 1) == INVALIDPARAM
    assert create(m.TENSOR, m.INT8, NCHW, 1, 1, 1, 1) == INVALIDARG
    assert create(m.TENSOR, m.FLOAT32, NHWC, 1, 1, 1, 1) == INVALIDARG
    assert create(m.TENSOR, m.FLOAT32, NCHW, 1, 0, 1, 1) == INVALIDARG
    assert create(m.FILTER, m.FLOAT32, NCHW, 1, 1, 1, 1) == INVALIDARG
    t16 = m.tensor(SHAPE, m.FLOAT16)
    set_ = lambda t, w, s: m.call("cnmlSetDataPreprocessStrategy", t, w, s)  # noqa: E731
    assert _strategy(t16) == -INVALIDARG  # none set yet
    assert set_(None, _twin(), MLU) == INVALIDPARAM
    assert set_(t16, None, MLU) == INVALIDPARAM
    assert set_(t16, _twin(), 4) == INVALIDARG
    assert set_(t16, _twin(elements=7), MLU) == INVALIDARG          # another element count
    assert set_(t16, _twin(), NONE) == INVALIDARG                   # nothing converts, dtypes differ
    assert set_(t16, _twin(m.FLOAT16), NONE) == SUCCESS and _strategy(t16) == NONE
    filt = m.tensor((4, 4), m.FLOAT32, m.FILTER)
    assert set_(filt, _twin(elements=16), CPU) == INVALIDARG        # fusion I/O tensors only
    assert set_(t16, _twin(), MLU) == SUCCESS and _strategy(t16) == MLU
    assert m.call("cnmlDestroyCpuTensor", C.byref(twin)) == INVALIDPARAM  # never created


def test_base_op_refuses_a_tensor_with_a_strategy():
    t, o = m.tensor(SHAPE, m.FLOAT16), m.tensor(SHAPE, m.FLOAT16)
    op = m.create("cnmlCreateActiveOp", RELU, t, o)
    m.check("cnmlCompileBaseOp", op, m.MLU100, 1)
    m.check("cnmlSetDataPreprocessStrategy", t, _twin(), CPU)
    x = m.Buffer(int(np.prod(SHAPE)) * 2)
    assert m.call("cnmlComputeActiveOpForward_V4", op, t, x.ptr, o, x.ptr, m.queue(),
                  None) == INVALIDARG


def _relu16():
    t, o = m.tensor(SHAPE, m.FLOAT16), m.tensor(SHAPE, m.FLOAT16)
    return m.create("cnmlCreateActiveOp", RELU, t, o), t, o


def test_the_bits_are_the_same_wherever_the_conversion_runs_and_mlu_prices_the_casts():
    rng = np.random.default_rng(0)
    # Large magnitudes (past fp16's range too) and values fp16 rounds.
    x = (rng.standard_normal(SHAPE) * np.float32(3e4)).astype(F32)
    truth = np.maximum(x.astype(np.float64), 0)
    # By hand: the caller fuses the casts around the fp16 op.
    t32, back = m.tensor(SHAPE), m.tensor(SHAPE)
    op, t16, o16 = _relu16()
    down = m.create("cnmlCreateCastOp", m.CAST_F32_TO_F16, t32, t16)
    up = m.create("cnmlCreateCastOp", m.CAST_F16_TO_F32, o16, back)
    (by_hand,), hand_us = m.run_fused([down, op, up], [(t32, x)], [(back, SHAPE, F32)],
                                      mp=4, clock=True)
    # MLU priority: the buffers hold float32, the fusion op casts at its edge.
    op, t16, o16 = _relu16()
    m.check("cnmlSetDataPreprocessStrategy", t16, _twin(), MLU)
    m.check("cnmlSetDataPreprocessStrategy", o16, _twin(), MLU)
    (on_device,), mlu_us = m.run_fused([op], [(t16, x)], [(o16, SHAPE, F32)], mp=4, clock=True)
    # CPU priority: the host casts, the buffers hold float16.
    op, t16, o16 = _relu16()
    m.check("cnmlSetDataPreprocessStrategy", t16, _twin(), CPU)
    m.check("cnmlSetDataPreprocessStrategy", o16, _twin(), CPU)
    half = m.cast_host(x, m.CNRT_FLOAT32, F16, m.CNRT_FLOAT16)
    (y16,), cpu_us = m.run_fused([op], [(t16, half)], [(o16, SHAPE, F16)], mp=4, clock=True)
    on_host = m.cast_host(y16, m.CNRT_FLOAT16, F32, m.CNRT_FLOAT32)
    for got in (on_device, on_host):
        assert np.array_equal(got.view(np.uint32), by_hand.view(np.uint32))
    finite = np.abs(x) < 65504
    np.testing.assert_allclose(by_hand[finite], truth[finite], rtol=2 ** -11)
    assert np.isinf(by_hand[~finite & (x > 0)]).all()
    assert mlu_us == pytest.approx(hand_us, rel=1e-6)
    assert cpu_us < mlu_us


def test_balance_resolves_to_the_side_the_device_model_prices_lower(tmp_path):
    def priced(elements: int, on_device: bool) -> float:
        host, device = C.c_double(), C.c_double()
        m.check("cnmlMockEstimatePreprocessUs", C.c_size_t(elements), m.FLOAT32, m.FLOAT16,
                int(on_device), 32, C.byref(host), C.byref(device))
        return host.value + device.value

    elements = int(np.prod(SHAPE))
    t16 = m.tensor(SHAPE, m.FLOAT16)
    m.check("cnmlSetDataPreprocessStrategy", t16, _twin(), BALANCE)
    want = MLU if priced(elements, True) < priced(elements, False) else CPU
    assert _strategy(t16) == want
    # A host that converts as fast as the link copies turns the choice around.
    text = Path(_runtime.default_profile_path()).read_text()
    fast = tmp_path / "fast_host.profile"
    fast.write_text(text.replace("host_convert_gbps = 4", "host_convert_gbps = 4000"))
    _runtime.set_device_profile(str(fast))
    try:
        t16 = m.tensor(SHAPE, m.FLOAT16)
        m.check("cnmlSetDataPreprocessStrategy", t16, _twin(), BALANCE)
        assert want == MLU and _strategy(t16) == CPU
    finally:
        _runtime.reset_device_profile()
    # Equal dtypes: nothing to convert, the sides price the same copy.
    host, device = C.c_double(), C.c_double()
    m.check("cnmlMockEstimatePreprocessUs", C.c_size_t(elements), m.FLOAT32, m.FLOAT32, 1, 8,
            C.byref(host), C.byref(device))
    assert device.value == 0 and host.value == pytest.approx(elements * 4 / 12e3)


def test_a_strategy_changed_after_the_fusion_io_is_refused_at_forward():
    op, t16, o16 = _relu16()
    x = np.ones(SHAPE, F16)

    def change() -> None:
        m.check("cnmlSetDataPreprocessStrategy", t16, _twin(), MLU)

    with pytest.raises(m.SdkError, match="cnmlComputeFusionOpForward_V4"):
        m.run_fused([op], [(t16, x)], [(o16, SHAPE, F16)], before_compile=change)


CHANNEL_NONE, CNRT_SUCCESS = -1, 0
BIG = (16, 64, 56, 56)


def _relu32(mp: int):
    # Memory-bound: its time is its DRAM traffic's.
    t, o = m.tensor(BIG), m.tensor(BIG)
    op = m.create("cnmlCreateActiveOp", RELU, t, o)
    m.check("cnmlCompileBaseOp", op, m.MLU100, mp)
    return op, t, o


def _timed(op, t, o, extra=None) -> tuple[np.ndarray, float]:
    x = np.random.default_rng(3).standard_normal(BIG).astype(F32) * F32(100)
    return m.run_base(op, "cnmlComputeActiveOpForward_V4", (t, x), (o, x.shape, F32),
                      extra=extra, compile_op=False)


def _status(op, t, o, extra) -> int:
    buf = m.Buffer(int(np.prod(BIG)) * 4)
    return m.call("cnmlComputeActiveOpForward_V4", op, t, buf.ptr, o, buf.ptr, m.queue(), extra)


def test_channel_placement_is_per_thread_and_takes_effect_at_mp_1():
    assert m.call("cnrtSetCurrentChannel", 4) != CNRT_SUCCESS
    one, two = _relu32(1), _relu32(2)
    y1, free1 = _timed(*one)
    _, free2 = _timed(*two)
    assert _status(*one, m.invoke_param(16)) == SUCCESS
    m.check("cnrtSetCurrentChannel", 2)
    try:
        y1c, placed1 = _timed(*one)
        _, placed2 = _timed(*two)
        other: list[float] = []  # another host thread is not placed
        worker = threading.Thread(target=lambda: other.append(_timed(*one)[1]))
        worker.start()
        worker.join()
        # Its groups of frames run on the channel's 8 cores.
        assert _status(*one, m.invoke_param(8)) == SUCCESS
        assert _status(*one, m.invoke_param(16)) == INVALIDARG
    finally:
        m.check("cnrtSetCurrentChannel", CHANNEL_NONE)
    assert np.array_equal(y1, y1c)
    assert placed2 == free2 and other == [free1]
    # A DRAM-bound op on a quarter of the bandwidth (the launch aside).
    launch = _runtime.device_profile()["launch_us"]
    assert placed1 - launch == pytest.approx(4 * (free1 - launch), rel=1e-3)
