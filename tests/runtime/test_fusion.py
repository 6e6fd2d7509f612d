"""Fused blocks compute what the same layers compute one by one, for several MPs."""

import numpy as np
import pytest

from paleozoic import _runtime as rt


def build_graph(s, rng):
    """Block A: conv + relu + max pool. Block B: conv + relu + residual add, two outputs."""
    r = np.random.default_rng(7)
    w1 = r.standard_normal((8, 3, 3, 3), dtype=np.float32) * 0.3
    b1 = r.standard_normal(8, dtype=np.float32)
    w2 = r.standard_normal((8, 8, 3, 3), dtype=np.float32) * 0.2
    x = s.input("x", [2, 3, 10, 10])
    c1 = s.conv("c1", x, out_channels=8, kernel=(3, 3), pads=(1, 1, 1, 1))
    c1.config(w1, b1)
    r1 = s.active("r1", c1.output, "relu")
    p1 = s.pool("p1", r1.output, mode="max", kernel=(3, 3), stride=(2, 2), pads=(1, 1, 1, 1))
    c2 = s.conv("c2", p1.output, out_channels=8, kernel=(3, 3), pads=(1, 1, 1, 1))
    c2.config(w2, None)
    r2 = s.active("r2", c2.output, "relu")
    add = s.add("add", r2.output, p1.output)   # p1 is read twice in block B
    s.mark_output(r2.output)
    s.mark_output(add.output)
    return x, [c1, r1, p1], [c2, r2, add], (w1, b1, w2)


def reference(x, weights):
    w1, b1, w2 = weights

    def conv_same(a, w, b):
        n, ci, h, wd = a.shape
        pad = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        cols = np.stack([pad[:, :, i:i + h, j:j + wd] for i in range(3) for j in range(3)], 2)
        out = np.einsum("nckhw,ock->nohw", cols, w.reshape(w.shape[0], ci, 9))
        return out + (0 if b is None else b[None, :, None, None])

    r1 = np.maximum(conv_same(x, w1, b1), 0)
    pad = np.pad(r1, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    p1 = np.stack([np.stack([pad[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3))
                             for j in range(5)], -1) for i in range(5)], -2)
    r2 = np.maximum(conv_same(p1, w2, None), 0)
    return r2, r2 + p1


def run(fuse_a, fuse_b, mp, x_data, rng=None):
    s = rt.Session()
    x, block_a, block_b, weights = build_graph(s, rng)
    ba = s.compile_block("A", fuse=fuse_a, mp=mp, layers=block_a)
    bb = s.compile_block("B", fuse=fuse_b, mp=mp, layers=block_b)
    s.set_input(x, x_data)
    s.run()
    outs = s.get(block_b[1].output), s.get(block_b[2].output)
    micros = s.block_micros()
    assert len(micros) == 2 and all(m > 0 for m in micros)
    assert (ba.fuse, bb.mp) == (fuse_a, mp)
    return outs, weights


@pytest.mark.parametrize("mp", [1, 4, 32])
def test_fused_equals_unfused(mp):
    x_data = np.random.default_rng(3).standard_normal((2, 3, 10, 10), dtype=np.float32)
    (r2_u, add_u), weights = run(False, False, mp, x_data)
    want_r2, want_add = reference(x_data, weights)
    np.testing.assert_allclose(r2_u, want_r2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(add_u, want_add, rtol=1e-4, atol=1e-4)
    for fuse_a, fuse_b in [(True, True), (True, False), (False, True)]:
        (r2_f, add_f), _ = run(fuse_a, fuse_b, mp, x_data)
        np.testing.assert_allclose(r2_f, r2_u, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(add_f, add_u, rtol=1e-5, atol=1e-6)


def test_fused_intermediates_have_no_buffer():
    s = rt.Session()
    x, block_a, block_b, _ = build_graph(s, None)
    s.compile_block("A", fuse=True, mp=4, layers=block_a)
    s.compile_block("B", fuse=True, mp=4, layers=block_b)
    s.set_input(x, np.ones((2, 3, 10, 10), np.float32))
    s.run()
    with pytest.raises(rt.Error, match="r1.*fused block"):
        s.get(block_a[1].output)   # relu inside block A: never leaves the chip
    assert s.get(block_a[2].output).shape == (2, 8, 5, 5)   # pool output feeds block B


def test_single_layer_fused_block(rng, run_layer):
    x = rng.standard_normal((1, 4, 6, 6), dtype=np.float32)
    got = run_layer(lambda s, t: s.active("relu", t, "relu"), x, fuse=True, mp=1)
    np.testing.assert_array_equal(got, np.maximum(x, 0))
