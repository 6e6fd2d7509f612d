"""Host layers (pz::HostCastLayer, pz::HostArgMaxLayer) against numpy, integer tensors'
range checks, the refusal to fuse a host layer, and the device time of a host layer: its
copies over the host link as the mock's device model prices them."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic import _runtime as rt


def _run_alone(session, layer) -> None:
    session.compile_block(f"b_{layer.name}", False, 1, [layer])


def test_cast_of_uint8_and_int64_to_float() -> None:
    rng = np.random.default_rng(0)
    s = rt.Session()
    image = s.input("image", [2, 3, 4, 5], dtype="uint8")
    mask = s.input("mask", [2, 7], dtype="int64")
    pixels = s.host_cast("pixels", image, to="float32", shape=[2, 3, 4, 5])
    # An int64 reshape on the way (Unsqueeze of a mask), then the cast to float.
    unsq = s.host_cast("unsq", mask, to="int64", shape=[2, 1, 1, 7])
    floats = s.host_cast("floats", unsq.output, to="float32", shape=[2, 1, 1, 7])
    for layer in (pixels, unsq, floats):
        _run_alone(s, layer)
    for t in (pixels.output, floats.output):
        s.mark_output(t)
    x = rng.integers(0, 256, size=(2, 3, 4, 5)).astype(np.uint8)
    m = rng.integers(-2**40, 2**40, size=(2, 7)).astype(np.int64)
    s.set_input(image, x)
    s.set_input(mask, m)
    s.run()
    assert pixels.output.dtype == "float32" and unsq.output.dtype == "int64"
    np.testing.assert_array_equal(s.get(pixels.output), x.astype(np.float32))
    np.testing.assert_array_equal(s.get(unsq.output), m.reshape(2, 1, 1, 7))
    np.testing.assert_array_equal(s.get(floats.output), m.astype(np.float32).reshape(2, 1, 1, 7))


def test_cast_of_float_to_int_truncates_and_int32_range_is_checked() -> None:
    s = rt.Session()
    x = s.input("x", [6])
    ids = s.input("ids", [3], dtype="int64")
    trunc = s.host_cast("trunc", x, to="int64", shape=[6])
    narrow = s.host_cast("narrow", ids, to="int32", shape=[3])
    for layer in (trunc, narrow):
        _run_alone(s, layer)
    values = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 1e6], np.float32)
    s.set_input(x, values)
    s.set_input(ids, np.array([0, 5, 2**31 - 1]))
    s.run()
    np.testing.assert_array_equal(s.get(trunc.output), np.trunc(values).astype(np.int64))
    np.testing.assert_array_equal(s.get(narrow.output), [0, 5, 2**31 - 1])
    s.set_input(ids, np.array([0, 2**31, 1]))
    with pytest.raises(rt.Error, match=r"narrow: .*value 2147483648 at index 1 does not fit int32"):
        s.run()


@pytest.mark.parametrize("shape, axis, keepdims", [
    ((4, 10), 1, False), ((4, 10), 0, True), ((2, 3, 5, 7), 2, True), ((2, 3, 5, 7), 3, False),
    ((1000,), 0, False),
])
def test_argmax_matches_numpy(shape, axis, keepdims) -> None:
    rng = np.random.default_rng(1)
    s = rt.Session()
    x = s.input("x", list(shape))
    am = s.host_argmax("am", x, axis=axis, keepdims=keepdims)
    s.mark_output(am.output)
    _run_alone(s, am)
    # Repeated values (ties: the first index wins) and large magnitudes.
    value = (rng.integers(-3, 4, size=shape) * 1e30).astype(np.float32)
    s.set_input(x, value)
    s.run()
    got = s.get(am.output)
    want = np.argmax(value, axis=axis)
    if keepdims:
        want = np.expand_dims(want, axis)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    assert tuple(am.output.shape) == (want.shape or (1,))


def test_argmax_last_index_and_nan() -> None:
    s = rt.Session()
    x = s.input("x", [3, 4])
    first = s.host_argmax("first", x, axis=1, keepdims=False)
    last = s.host_argmax("last", x, axis=1, keepdims=False, select_last_index=True)
    for layer in (first, last):
        _run_alone(s, layer)
    value = np.array([[1, 3, 3, 0], [np.nan, 5, np.nan, 1], [2, 2, 2, 2]], np.float32)
    s.set_input(x, value)
    s.run()
    np.testing.assert_array_equal(s.get(first.output), np.argmax(value, axis=1))
    np.testing.assert_array_equal(s.get(last.output), [2, 2, 3])


def test_integer_inputs_are_range_checked_and_typed() -> None:
    s = rt.Session()
    image = s.input("image", [4], dtype="uint8")
    with pytest.raises(rt.Error, match="value 256 at index 2 does not fit uint8"):
        s.set_input(image, np.array([0, 255, 256, 1]))
    with pytest.raises(rt.Error, match="unknown element type 'int16'; use float32, int64, int32 or uint8"):
        s.input("bad", [2], dtype="int16")
    # A float layer cannot read the host tensor's (absent) device buffer.
    relu = s.active("relu", image, function="relu")
    s.set_input(image, np.array([0, 1, 2, 3]))
    with pytest.raises(rt.Error, match="holds uint8 values, which stay on the host"):
        s.compile_block("b", False, 1, [relu])
        s.run()


def test_host_layer_is_never_fused() -> None:
    s = rt.Session()
    x = s.input("x", [2, 8])
    relu = s.active("relu", x, function="relu")
    am = s.host_argmax("am", relu.output, axis=1, keepdims=False)
    with pytest.raises(rt.Error, match="am: a host layer computes on the CPU and cannot join "
                                       "the fusion op of block both"):
        s.compile_block("both", True, 4, [relu, am])


def test_device_time_is_the_copies_over_the_host_link() -> None:
    """A host layer's time is launch + its bytes to and from the device at host_link_gbps:
    a float [64, 1000] input (256000 bytes) to the host; int64 indices stay there."""
    rt.reset_device_profile()
    profile = rt.device_profile()
    s = rt.Session()
    x = s.input("x", [64, 1000])
    am = s.host_argmax("am", x, axis=1, keepdims=False)
    ids = s.input("ids", [64, 1000], dtype="int64")
    cast = s.host_cast("cast", ids, to="float32", shape=[64, 1000])
    us_argmax = s.estimate_block([am], 1, False)
    us_cast = s.estimate_block([cast], 1, False)
    launch, link = profile["launch_us"], profile["host_link_gbps"] * 1e3
    assert profile["host_link_gbps"] == 12.0
    assert us_argmax == pytest.approx(launch + 64 * 1000 * 4 / link, rel=1e-5)
    assert us_cast == pytest.approx(launch + 64 * 1000 * 4 / link, rel=1e-5)
    small = s.host_argmax("small", s.input("y", [1, 10]), axis=1, keepdims=False)
    assert s.estimate_block([small], 1, False) < us_argmax


def test_select_matches_numpy_where_with_broadcast() -> None:
    rng = np.random.default_rng(5)
    s = rt.Session()
    mask = s.input("mask", [2, 1, 1, 6], dtype="int64")
    x = s.input("x", [2, 3, 4, 6])
    additive = s.host_select("additive", mask, test="nonzero", shape=[2, 3, 4, 6], then=0.0,
                             otherwise=float("-inf"))
    guard = s.host_select("guard", x, test="isnan", shape=[2, 3, 4, 6], then=0.0, otherwise="x")
    for layer in (additive, guard):
        s.mark_output(layer.output)
        _run_alone(s, layer)
    m = rng.integers(0, 2, size=(2, 1, 1, 6))
    v = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    v[0, 1, 2, 3] = v[1, 0, 0, 0] = np.nan
    s.set_input(mask, m)
    s.set_input(x, v)
    s.run()
    np.testing.assert_array_equal(s.get(additive.output),
                                  np.broadcast_to(np.where(m != 0, 0.0, -np.inf), v.shape))
    np.testing.assert_array_equal(s.get(guard.output), np.where(np.isnan(v), 0.0, v))
    with pytest.raises(rt.Error, match=r"bad: input \[2, 1, 1, 6\] does not broadcast to"):
        s.host_select("bad", mask, test="nonzero", shape=[2, 3, 4, 5], then=1.0, otherwise=0.0)


def _topk_reference(value: np.ndarray, axis: int, k: int, largest: bool):
    """ONNX TopK by a stable sort: equal values keep ascending indices, NaN above all."""
    key = np.where(np.isnan(value), np.inf, value).astype(np.float64)
    nan = np.isnan(value)
    if largest:
        # Descending by value (NaN first), ascending by index among equals: sort the
        # negated key, NaN made the smallest.
        key = np.where(nan, -np.inf, -key)
    else:
        key = np.where(nan, np.inf, key)
    order = np.argsort(key, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(value, indices, axis=axis), indices


@pytest.mark.parametrize("shape, axis, k, largest", [
    ((3, 10), 1, 4, True), ((3, 10), 0, 2, False), ((2, 5, 7), 1, 5, True),
    ((2, 3, 4, 9), 3, 1, False), ((1, 1000), 1, 1000, True),
])
def test_topk_matches_a_stable_sort(shape, axis, k, largest) -> None:
    rng = np.random.default_rng(2)
    s = rt.Session()
    x = s.input("x", list(shape))
    values = s.host_topk("tv", x, axis=axis, k=k, output="values", largest=largest)
    indices = s.host_topk("ti", x, axis=axis, k=k, output="indices", largest=largest)
    for layer in (values, indices):
        s.mark_output(layer.output)
        _run_alone(s, layer)
    # Many ties (the lower index first) and large magnitudes.
    value = (rng.integers(-4, 5, size=shape) * 3e37).astype(np.float32)
    s.set_input(x, value)
    s.run()
    want_values, want_indices = _topk_reference(value, axis, k, largest)
    got = s.get(indices.output)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.reshape(want_indices.shape), want_indices)
    np.testing.assert_array_equal(s.get(values.output).reshape(want_values.shape), want_values)


def test_topk_nan_ranks_above_numbers_and_k_is_checked() -> None:
    s = rt.Session()
    x = s.input("x", [2, 4])
    top = s.host_topk("top", x, axis=1, k=2, output="indices")
    low = s.host_topk("low", x, axis=-1, k=2, output="indices", largest=False)
    for layer in (top, low):
        _run_alone(s, layer)
    value = np.array([[1, np.nan, 3, -1], [np.nan, 2, np.nan, 2]], np.float32)
    s.set_input(x, value)
    s.run()
    np.testing.assert_array_equal(s.get(top.output), [[1, 2], [0, 2]])
    np.testing.assert_array_equal(s.get(low.output), [[3, 0], [1, 3]])
    with pytest.raises(Exception, match=r"big: k 5 must be within 1\.\.4"):
        s.host_topk("big", x, axis=1, k=5, output="values")
