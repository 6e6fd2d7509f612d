"""Per-channel, element-wise, classifier and layout layers against numpy references."""

import numpy as np
import pytest

RTOL, ATOL = 1e-4, 1e-5


def test_batch_norm(rng, run_layer):
    x = rng.standard_normal((2, 6, 5, 4), dtype=np.float32)
    mean = rng.standard_normal(6, dtype=np.float32)
    var = rng.uniform(0.5, 2.0, 6).astype(np.float32)  # already 1 / sqrt(variance + eps)

    def build(s, t):
        bn = s.batch_norm("bn", t)
        bn.config(mean, var)
        return bn

    want = (x - mean[None, :, None, None]) * var[None, :, None, None]
    np.testing.assert_allclose(run_layer(build, x), want, rtol=RTOL, atol=ATOL)


def test_scale(rng, run_layer):
    x = rng.standard_normal((2, 5, 3, 7), dtype=np.float32)
    alpha = rng.standard_normal(5, dtype=np.float32)
    beta = rng.standard_normal(5, dtype=np.float32)

    def build(s, t):
        sc = s.scale("scale", t)
        sc.config(alpha, beta)
        return sc

    want = x * alpha[None, :, None, None] + beta[None, :, None, None]
    np.testing.assert_allclose(run_layer(build, x), want, rtol=RTOL, atol=ATOL)


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "relu6": lambda x: np.clip(x, 0, 6),
    "relu1": lambda x: np.clip(x, 0, 1),
}


@pytest.mark.parametrize("fn", ACTIVATIONS)
def test_active(fn, rng, run_layer):
    x = rng.standard_normal((2, 3, 4, 5), dtype=np.float32) * 5
    got = run_layer(lambda s, t: s.active("act", t, fn), x)
    np.testing.assert_allclose(got, ACTIVATIONS[fn](x), rtol=RTOL, atol=ATOL)


def test_add(rng, run_layer):
    a = rng.standard_normal((2, 3, 4, 5), dtype=np.float32)
    b = rng.standard_normal((2, 3, 4, 5), dtype=np.float32)
    np.testing.assert_allclose(run_layer(lambda s, x, y: s.add("add", x, y), a, b), a + b,
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(2, 8, 3, 3), (3, 20)], ids=["from_4d", "from_2d"])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
def test_fully_connected(shape, with_bias, rng, run_layer):
    x = rng.standard_normal(shape, dtype=np.float32)
    k = int(np.prod(shape[1:]))
    w = rng.standard_normal((10, k), dtype=np.float32)
    b = rng.standard_normal(10, dtype=np.float32) if with_bias else None

    def build(s, t):
        fc = s.fully_connected("fc", t, 10)
        fc.config(w, b)
        return fc

    want = x.reshape(shape[0], k) @ w.T + (b if with_bias else 0)
    got = run_layer(build, x)
    assert got.shape == (shape[0], 10)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape,axis", [
    ((2, 10), 1), ((3, 7), 0), ((2, 5, 3, 4), 1), ((2, 5, 3, 4), 3), ((2, 5, 3, 4), 2),
    ((2, 6, 2, 2), -3),
])
def test_softmax(shape, axis, rng, run_layer):
    x = rng.standard_normal(shape, dtype=np.float32) * 4
    got = run_layer(lambda s, t: s.softmax("softmax", t, axis), x)
    np.testing.assert_allclose(got, np_softmax(x, axis), rtol=RTOL, atol=1e-4)


@pytest.mark.parametrize("axis", [1, 2, 0, -1])
def test_concat_three_inputs(axis, rng, run_layer):
    base = [2, 3, 4, 5]
    arrays = []
    for extra in (1, 2, 3):
        shape = list(base)
        shape[axis] = extra
        arrays.append(rng.standard_normal(shape, dtype=np.float32))
    got = run_layer(lambda s, *ts: s.concat("concat", list(ts), axis), *arrays)
    np.testing.assert_array_equal(got, np.concatenate(arrays, axis=axis))


@pytest.mark.parametrize("src,dst", [
    ((2, 4, 3, 3), (2, 36)),
    ((1, 12, 5, 5), (1, 3, 4, 25)),
    ((6, 10), (2, 3, 5, 2)),
])
def test_reshape(src, dst, rng, run_layer):
    x = rng.standard_normal(src, dtype=np.float32)
    got = run_layer(lambda s, t: s.reshape("reshape", t, list(dst)), x)
    np.testing.assert_array_equal(got, x.reshape(dst))


@pytest.mark.parametrize("shape,perm", [
    ((1, 2, 3, 4, 5), (0, 2, 1, 3, 4)),   # ShuffleNet channel shuffle: [N, g, C/g, H, W]
    ((2, 4, 2, 3, 3), (0, 2, 1, 3, 4)),
    ((2, 3, 4, 5), (0, 2, 3, 1)),         # NCHW -> NHWC
    ((3, 4, 5), (2, 0, 1)),
])
def test_transpose(shape, perm, rng, run_layer):
    x = rng.standard_normal(shape, dtype=np.float32)
    got = run_layer(lambda s, t: s.transpose("transpose", t, list(perm)), x)
    np.testing.assert_array_equal(got, x.transpose(perm))


def test_channel_shuffle_chain(rng, run_layer):
    """Reshape -> 5-D transpose -> reshape, as emitted for ShuffleNet, in one fused block."""
    from paleozoic import _runtime as rt

    x = rng.standard_normal((1, 6, 3, 3), dtype=np.float32)
    s = rt.Session()
    t = s.input("x", list(x.shape))
    r1 = s.reshape("r1", t, [1, 2, 3, 3, 3])
    tr = s.transpose("tr", r1.output, [0, 2, 1, 3, 4])
    r2 = s.reshape("r2", tr.output, [1, 6, 3, 3])
    s.mark_output(r2.output)
    s.compile_block("b0", fuse=True, mp=4, layers=[r1, tr, r2])
    s.set_input(t, x)
    s.run()
    want = x.reshape(1, 2, 3, 3, 3).transpose(0, 2, 1, 3, 4).reshape(1, 6, 3, 3)
    np.testing.assert_array_equal(s.get(r2.output), want)
