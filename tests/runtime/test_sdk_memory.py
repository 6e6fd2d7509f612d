"""The mock SDK's memory rules: a fusion's intermediates share one scratch arena by
lifetime, FLOAT32 consts are read when their op compiles (CNML binds them by pointer), a
const handed over with free_aftercompile is freed by the compile that reads it, and device
memory ends at the device profile's dram_bytes."""

from __future__ import annotations

import ctypes as C
from pathlib import Path

import numpy as np
import pytest

import mock_sdk as m
from paleozoic import _runtime
from paleozoic.runner.sdk import sdk_available

F32 = np.float32
SHAPE = (1, 16, 32, 32)
VALUE_BYTES = int(np.prod(SHAPE)) * 4  # a multiple of 64: no alignment padding


def _chain(n: int) -> tuple[list, m.P, m.P]:
    """n ReLU/Sigmoid ops one after another: n - 1 intermediates, two alive at a time."""
    tensors = [m.tensor(SHAPE, m.FLOAT32) for _ in range(n + 1)]
    ops = [m.create("cnmlCreateActiveOp", 2 if i % 2 else 1, tensors[i], tensors[i + 1])
           for i in range(n)]
    return ops, tensors[0], tensors[-1]


def test_chain_intermediates_take_two_values_not_all(rng):
    x = rng.standard_normal(SHAPE).astype(F32)
    ops, tin, tout = _chain(8)
    scratch: list[int] = []
    (y,) = m.run_fused(ops, [(tin, x)], [(tout, SHAPE, F32)], scratch=scratch)
    expect = x.astype(np.float64)
    for i in range(8):
        expect = np.maximum(expect, 0) if i % 2 else 1 / (1 + np.exp(-expect))
    np.testing.assert_allclose(y, expect, rtol=1e-6, atol=1e-6)
    # Seven intermediates, each read only by the next op: a value and its successor.
    assert scratch == [2 * VALUE_BYTES]


def test_values_alive_together_never_share_bytes(rng):
    # a = relu(x) is read by the last op, so it stays alive across b, c and d.
    x = rng.standard_normal(SHAPE).astype(F32)
    t = {k: m.tensor(SHAPE, m.FLOAT32) for k in "xabcdo"}
    ops = [m.create("cnmlCreateActiveOp", 2, t["x"], t["a"]),
           m.create("cnmlCreateActiveOp", 1, t["a"], t["b"]),
           m.create("cnmlCreateActiveOp", 1, t["b"], t["c"]),
           m.create("cnmlCreateActiveOp", 1, t["c"], t["d"]),
           m.create("cnmlCreateAddOp", t["a"], t["d"], t["o"])]
    scratch: list[int] = []
    (y,) = m.run_fused(ops, [(t["x"], x)], [(t["o"], SHAPE, F32)], scratch=scratch)
    a = np.maximum(x.astype(np.float64), 0)
    d = a
    for _ in range(3):
        d = 1 / (1 + np.exp(-d))
    np.testing.assert_allclose(y, a + d, rtol=1e-6, atol=1e-6)
    # a beside a two-value chain b, c, d: three values, not four.
    assert scratch == [3 * VALUE_BYTES]


def test_float32_consts_are_read_when_the_op_compiles(rng):
    x = rng.standard_normal((1, 3, 4, 4)).astype(F32)
    alpha = np.array([1.0, 2.0, 3.0], F32)
    beta = np.zeros(3, F32)
    tin, tout = m.tensor(x.shape, m.FLOAT32), m.tensor(x.shape, m.FLOAT32)
    op = m.create("cnmlCreateScaleOp", tin, tout, m.const(alpha.copy(), m.FLOAT32),
                  m.const(beta, m.FLOAT32))
    bound = m._BOUND[-2]  # the helper's array the SDK points at

    def change_before_compile() -> None:
        bound[:] = [4.0, 5.0, 6.0]

    (y,) = m.run_fused([op], [(tin, x)], [(tout, x.shape, F32)],
                       before_compile=change_before_compile)
    np.testing.assert_array_equal(y, x * np.array([4, 5, 6], F32)[None, :, None, None])
    tin2, tout2 = m.tensor(x.shape, m.FLOAT32), m.tensor(x.shape, m.FLOAT32)
    op2 = m.create("cnmlCreateScaleOp", tin2, tout2, m.const(alpha.copy(), m.FLOAT32),
                   m.const(beta, m.FLOAT32))
    m.check("cnmlCompileBaseOp", op2, m.MLU100, 1)
    m._BOUND[-2][:] = -1.0  # after the compile: the op computes with what it read then
    bin_, bout = m.Buffer.of(x), m.Buffer(x.nbytes)
    m.check("cnmlComputeScaleOpForward_V4", op2, tin2, bin_.ptr, tout2, bout.ptr, m.queue(),
            None)
    np.testing.assert_array_equal(bout.read(x.shape, F32), x * alpha[None, :, None, None])


_libc = C.CDLL(None)
_libc.malloc.restype = C.c_void_p
_libc.malloc.argtypes = [C.c_size_t]


def _handed_over(array: np.ndarray) -> m.P:
    """A FLOAT32 CONST bound with free_aftercompile: the SDK takes the malloc'd buffer and
    frees it (the wrapper does this for every layer it compiles)."""
    array = np.ascontiguousarray(array, F32)
    t = m.tensor(array.shape, m.FLOAT32, m.CONST)
    buffer = _libc.malloc(array.nbytes)
    C.memmove(buffer, array.ctypes.data, array.nbytes)
    m.check("cnmlBindConstData_V2", t, C.c_void_p(buffer), True)
    return t


def test_consts_handed_over_serve_every_op_of_their_compile_then_are_spent(rng):
    x = rng.standard_normal((1, 3, 4, 4)).astype(F32)
    alpha = np.array([1.5, -2.0, 3.0], F32)
    beta = np.array([0.25, 0.0, -1.0], F32)
    a, b = _handed_over(alpha), _handed_over(beta)
    tin, mid, tout = (m.tensor(x.shape, m.FLOAT32) for _ in range(3))
    # Two ops of one fusion read the same consts: freed only once both are compiled.
    first = m.create("cnmlCreateScaleOp", tin, mid, a, b)
    second = m.create("cnmlCreateScaleOp", mid, tout, a, b)
    (y,) = m.run_fused([first, second], [(tin, x)], [(tout, x.shape, F32)])
    scale, shift = alpha[None, :, None, None], beta[None, :, None, None]
    np.testing.assert_allclose(y, (x * scale + shift) * scale + shift, rtol=1e-6)
    # After that compile the SDK has freed them: an op compiled later cannot read them.
    late = m.create("cnmlCreateScaleOp", m.tensor(x.shape, m.FLOAT32),
                    m.tensor(x.shape, m.FLOAT32), a, b)
    assert m.call("cnmlCompileBaseOp", late, m.MLU100, 1) == m.INVALIDARG


def test_a_base_op_compile_spends_what_was_handed_over(rng):
    x = rng.standard_normal((1, 3, 4, 4)).astype(F32)
    alpha = np.array([2.0, 3.0, 4.0], F32)
    a, b = _handed_over(alpha), _handed_over(np.zeros(3, F32))
    tin, tout = m.tensor(x.shape, m.FLOAT32), m.tensor(x.shape, m.FLOAT32)
    op = m.create("cnmlCreateScaleOp", tin, tout, a, b)
    m.check("cnmlCompileBaseOp", op, m.MLU100, 1)
    bin_, bout = m.Buffer.of(x), m.Buffer(x.nbytes)
    m.check("cnmlComputeScaleOpForward_V4", op, tin, bin_.ptr, tout, bout.ptr, m.queue(), None)
    np.testing.assert_array_equal(bout.read(x.shape, F32), x * alpha[None, :, None, None])
    again = m.create("cnmlCreateScaleOp", m.tensor(x.shape, m.FLOAT32),
                     m.tensor(x.shape, m.FLOAT32), a, b)
    assert m.call("cnmlCompileBaseOp", again, m.MLU100, 1) == m.INVALIDARG


def _residual_convs(sdk, n: int, x: np.ndarray, rng) -> tuple[np.ndarray, int]:
    """n 3x3 convolutions one after another, the first one's value added to the last's:
    (the output, the fusion's scratch bytes)."""
    c = x.shape[1]
    values = [sdk.tensor(x.shape, sdk.FLOAT32) for _ in range(n + 2)]
    ops = []
    for i in range(n):
        w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(F32)
        ops.append(sdk.create("cnmlCreateConvOp", sdk.conv_param(pads=(1, 1, 1, 1)),
                              values[i], values[i + 1], sdk.const(w, sdk.FLOAT32, sdk.FILTER),
                              sdk.const(np.zeros(c, F32), sdk.FLOAT32)))
    ops.append(sdk.create("cnmlCreateAddOp", values[1], values[n], values[n + 1]))
    scratch: list[int] = []
    (y,) = sdk.run_fused(ops, [(values[0], x)], [(values[n + 1], x.shape, F32)],
                         scratch=scratch)
    return y, scratch[0]


@pytest.mark.skipif(not sdk_available("onednn"), reason="the oneDNN SDK is not built")
def test_onednn_links_live_in_the_fusion_arena_by_lifetime():
    # Convolutions pass their values in oneDNN's blocked layout (links): those buffers are
    # planned with the fusion's scratch values, so a longer chain needs no more bytes, and
    # the first value, read again at the end, is never overwritten meanwhile.
    onednn = m.onednn_driver()
    x = np.random.default_rng(1).standard_normal((1, 16, 24, 24)).astype(F32)
    results = {}
    for n in (4, 8):
        y, scratch = _residual_convs(onednn, n, x, np.random.default_rng(n))
        expect, _ = _residual_convs(m, n, x, np.random.default_rng(n))
        np.testing.assert_allclose(y, expect, rtol=1e-4, atol=1e-4 * np.abs(expect).max())
        results[n] = scratch
    value = x.nbytes
    assert results[4] == results[8], results
    # Three values alive at once (the first one, read again at the end, and the two a
    # convolution reads and writes), each in one buffer: the blocked one the steps pass,
    # with no bytes for the dense copy that no step writes (before: 6 values, and before
    # that the blocked buffers were outside the arena, one per link).
    assert results[8] == 3 * value, results


def test_cnrt_malloc_fails_past_the_profiles_device_memory(tmp_path: Path):
    text = Path(_runtime.default_profile_path()).read_text()
    lines = [f"dram_bytes = {1 << 20}" if line.startswith("dram_bytes") else line
             for line in text.splitlines()]
    small = tmp_path / "small.profile"
    small.write_text("\n".join(lines) + "\n")
    _runtime.set_device_profile(str(small))
    try:
        assert _runtime.device_profile()["dram_bytes"] == 1 << 20
        ptr = m.P()
        assert m.call("cnrtMalloc", C.byref(ptr), C.c_size_t(2 << 20)) == m.CNRT_ERR_NOMEM
        assert m.call("cnrtMalloc", C.byref(ptr), C.c_size_t(1 << 16)) == 0
        m.check("cnrtFree", ptr)
    finally:
        _runtime.reset_device_profile()
