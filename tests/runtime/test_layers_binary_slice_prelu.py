"""Binary (add/sub/mul/div with broadcasting), Slice and PRelu layers against numpy and
onnxruntime, per layer and inside fusion ops, and the SDK rules they enforce."""

import numpy as np
import pytest

from helpers import assert_split_blocks_take_their_estimates, run_chain_blocks
from paleozoic import _runtime as rt

CNML_STATUS_INVALIDPARAM = 8
NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def divisor(rng, shape):
    """Values away from zero so a division is well conditioned."""
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (sign * rng.uniform(0.5, 2.0, shape)).astype(np.float32)


# ---- Binary -----------------------------------------------------------------------------

A_SHAPE = (2, 3, 4, 5)
B_SHAPES = {
    "equal": (2, 3, 4, 5),
    "per_channel_1c11": (1, 3, 1, 1),
    "per_channel_c11": (3, 1, 1),
    "per_channel_nc11": (2, 3, 1, 1),
    "scalar_1111": (1, 1, 1, 1),
    "scalar_1": (1,),
    "plane_11hw": (1, 1, 4, 5),
    "plane_hw": (4, 5),
    "row_w": (5,),
    "strided_2141": (2, 1, 4, 1),
    "strided_1311": (1, 3, 4, 1),
}


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("b_shape", B_SHAPES.values(), ids=B_SHAPES.keys())
def test_binary_broadcasts_like_numpy(op, b_shape, rng, run_layer):
    a = rng.standard_normal(A_SHAPE, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    got = run_layer(lambda s, x, y: s.binary("bin", x, y, op), a, b)
    # One IEEE operation per element: bit-identical to numpy's float32 result.
    np.testing.assert_array_equal(got, NUMPY_OPS[op](a, b))


def test_binary_plane_broadcast_over_channels(rng, run_layer):
    """[1, C, H, W] against [1, 1, H, W]: b broadcast along C only."""
    a = rng.standard_normal((1, 6, 7, 9), dtype=np.float32)
    b = rng.standard_normal((1, 1, 7, 9), dtype=np.float32)
    for op in ("add", "sub", "mul"):
        got = run_layer(lambda s, x, y: s.binary("bin", x, y, op), a, b)
        np.testing.assert_array_equal(got, NUMPY_OPS[op](a, b))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (7,), (3, 11), (1, 2, 3, 2, 2, 3)])
def test_binary_div_elementwise(shape, rng, run_layer):
    a = rng.standard_normal(shape, dtype=np.float32)
    b = divisor(rng, shape)
    got = run_layer(lambda s, x, y: s.binary("div", x, y, "div"), a, b)
    np.testing.assert_array_equal(got, a / b)


@pytest.mark.parametrize("b_shape", [(1, 2, 1, 1), (1, 1, 1, 1), (1, 1, 160, 144), (160, 1)],
                         ids=["per_channel", "scalar", "plane", "strided"])
@pytest.mark.parametrize("mp", [1, 32])
def test_binary_large_rows_split_across_threads(b_shape, mp, rng, run_layer):
    """Rows longer than one task (per-channel b over a 160x144 plane, one scalar row)."""
    a = rng.standard_normal((2, 2, 160, 144), dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    got = run_layer(lambda s, x, y: s.binary("bin", x, y, "mul"), a, b, mp=mp)
    np.testing.assert_array_equal(got, a * b)


def test_binary_same_tensor_twice(rng):
    x_data = rng.standard_normal((1, 3, 4, 4), dtype=np.float32)
    s = rt.Session()
    x = s.input("x", [1, 3, 4, 4])
    sq = s.binary("square", x, x, "mul")
    s.mark_output(sq.output)
    s.compile_block("b0", fuse=True, mp=4, layers=[sq])
    assert x.consumers == 2
    s.set_input(x, x_data)
    s.run()
    np.testing.assert_array_equal(s.get(sq.output), x_data * x_data)


def test_binary_matches_onnxruntime(rng, ort_node, run_layer):
    x = rng.standard_normal((2, 4, 3, 3), dtype=np.float32)
    b = rng.standard_normal((4, 1, 1), dtype=np.float32)
    for op_type, op in (("Add", "add"), ("Sub", "sub"), ("Mul", "mul")):
        got = run_layer(lambda s, t, u: s.binary("bin", t, u, op), x, b)
        np.testing.assert_array_equal(got, ort_node(op_type, x, [b]))


@pytest.mark.parametrize("op,b_shape,call", [
    ("add", (1, 3, 1, 2), "cnmlCreateBroadcastAddOp"),
    ("sub", (3, 4), "cnmlCreateBroadcastSubOp"),
    ("mul", (1, 2, 3, 4, 5), "cnmlCreateBroadcastMultOp"),
    ("div", (1, 3, 1, 1), "cnmlCreateRealDivOp"),
    ("div", (1, 1, 1, 1), "cnmlCreateRealDivOp"),
])
def test_binary_sdk_rules_name_the_layer(op, b_shape, call):
    s = rt.Session()
    a = s.input("a", [2, 3, 4, 5])
    b = s.input("b", list(b_shape))
    # SDK ops are created when their block compiles (precision decides their dtypes).
    layer = s.binary(f"bad_{op}", a, b, op)
    with pytest.raises(rt.SdkError, match=rf"bad_{op}: {call} failed with "
                                          rf"CNML_STATUS_INVALIDPARAM \(8\)") as info:
        s.compile_block("b", False, 1, [layer])
    assert info.value.layer == f"bad_{op}"
    assert info.value.status == CNML_STATUS_INVALIDPARAM
    hint = "div needs equal shapes" if op == "div" else "b must broadcast to a"
    assert hint in str(info.value) and str(list(b_shape)) in str(info.value)


def test_binary_unknown_op():
    s = rt.Session()
    a = s.input("a", [1, 2])
    with pytest.raises(rt.Error, match="unknown binary op 'mod'; use add, sub, .*, or or xor"):
        s.binary("p", a, a, "mod")


# ---- Slice ------------------------------------------------------------------------------

SLICES = [
    ((2, 8, 7, 9), (0, 1, 2, 0), (2, 8, 7, 9), (1, 3, 2, 4)),   # steps on C, H and W
    ((1, 6, 5, 5), (0, 2, 0, 0), (1, 5, 5, 5), (1, 1, 1, 1)),   # channel range (rows copied)
    ((3, 4, 6, 8), (1, 0, 1, 2), (3, 4, 6, 7), (2, 3, 2, 1)),   # N and C steps, W contiguous
    ((2, 3, 4, 5), (0, 0, 0, 0), (2, 3, 4, 5), (1, 1, 1, 1)),   # whole tensor
    ((5, 12), (1, 0), (5, 11), (2, 5)),
    ((10,), (3,), (10,), (3,)),
    ((2, 3, 4, 5, 6), (0, 1, 1, 0, 5), (2, 3, 4, 5, 6), (1, 1, 2, 2, 1)),
    ((2, 2, 3, 3, 4, 5), (1, 0, 1, 0, 1, 0), (2, 2, 3, 3, 4, 5), (1, 2, 1, 2, 2, 2)),
]


@pytest.mark.parametrize("shape,begin,end,step", SLICES)
def test_slice_like_numpy(shape, begin, end, step, rng, run_layer):
    x = rng.standard_normal(shape, dtype=np.float32)
    got = run_layer(lambda s, t: s.slice("slice", t, list(begin), list(end), list(step)), x)
    want = x[tuple(slice(b, e, st) for b, e, st in zip(begin, end, step))]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mp", [1, 32])
def test_slice_many_rows(mp, rng, run_layer):
    x = rng.standard_normal((1, 16, 64, 64), dtype=np.float32)
    got = run_layer(lambda s, t: s.slice("s", t, [0, 1, 3, 0], [1, 16, 64, 63], [1, 2, 3, 2]),
                    x, mp=mp)
    np.testing.assert_array_equal(got, x[:, 1:16:2, 3:64:3, 0:63:2])


@pytest.mark.parametrize("begin,end,step,match", [
    ([0, 0, 0], [1, 3, 6], [1, 1, 1], r"slice needs one begin, end and step per axis of "
                                      r"\[1, 3, 6, 6\], got begin \[0, 0, 0\]"),
    ([0, 0, 0, 0], [1, 5, 6, 6], [1, 1, 1, 1], r"slice of axis 1 \(size 3\) from 0 to 5 step 1"),
    ([0, 0, 0, 0], [1, 3, 6, 6], [1, 0, 1, 1], r"slice of axis 1 \(size 3\) from 0 to 3 step 0"),
    ([0, 2, 0, 0], [1, 2, 6, 6], [1, 1, 1, 1], r"slice of axis 1 \(size 3\) from 2 to 2"),
    ([0, -1, 0, 0], [1, 3, 6, 6], [1, 1, 1, 1], r"slice of axis 1 \(size 3\) from -1 to 3"),
])
def test_slice_bad_parameters_name_the_layer(begin, end, step, match):
    s = rt.Session()
    x = s.input("x", [1, 3, 6, 6])
    with pytest.raises(rt.Error, match="bad: " + match):
        s.slice("bad", x, begin, end, step)


# ---- PRelu ------------------------------------------------------------------------------

def np_prelu(x, slope):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return np.where(x >= 0, x, slope.reshape(shape) * x)


@pytest.mark.parametrize("shape", [(2, 5, 4, 3), (3, 7), (1, 4, 2, 3, 2)])
def test_prelu_negative_inputs(shape, rng, run_layer):
    x = rng.standard_normal(shape, dtype=np.float32) * 3
    assert (x < 0).any()
    slope = rng.uniform(-1.5, 1.5, shape[1]).astype(np.float32)

    def build(s, t):
        p = s.prelu("prelu", t)
        p.config(slope)
        return p

    np.testing.assert_array_equal(run_layer(build, x), np_prelu(x, slope))


def test_prelu_matches_onnxruntime(rng, ort_node, run_layer):
    x = rng.standard_normal((2, 6, 5, 5), dtype=np.float32)
    slope = rng.uniform(0.0, 0.5, 6).astype(np.float32)

    def build(s, t):
        p = s.prelu("prelu", t)
        p.config(slope)
        return p

    np.testing.assert_allclose(run_layer(build, x), ort_node("PRelu", x, [slope.reshape(6, 1, 1)]),
                               rtol=1e-6, atol=1e-7)


def test_leaky_relu_is_prelu_with_alpha(rng, ort_node, run_layer):
    x = rng.standard_normal((1, 4, 6, 6), dtype=np.float32)
    alpha = 0.1

    def build(s, t):
        p = s.prelu("leaky", t)
        p.config(np.full(4, alpha, np.float32))
        return p

    np.testing.assert_allclose(run_layer(build, x), ort_node("LeakyRelu", x, alpha=alpha),
                               rtol=1e-6, atol=1e-7)


def test_prelu_config_errors():
    s = rt.Session()
    x = s.input("x", [1, 3, 4, 4])
    p = s.prelu("p", x)
    with pytest.raises(rt.Error, match="p: slope has 2 values, expected 3"):
        p.config(np.ones(2, np.float32))
    with pytest.raises(rt.Error, match=r"p: configLayer takes 1 weight\(s\) \(slope\), got 2"):
        p.config(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(rt.Error, match="p: configLayer was not called"):
        s.compile_block("b0", fuse=False, mp=1, layers=[p])
    with pytest.raises(rt.Error, match="q: needs an input with a channel axis"):
        s.prelu("q", s.input("flat", [5]))


def test_relu1_activation(run_layer):
    x = np.array([[-2.0, -0.0, 0.25, 1.0, 3.5]], np.float32)
    np.testing.assert_array_equal(run_layer(lambda s, t: s.active("r", t, "relu1"), x),
                                  np.clip(x, 0, 1))


# ---- inside fusion ops ------------------------------------------------------------------

def build_chain(s, rng):
    """A squeeze-excite style gate, PRelu, channel halves, div and clip, a strided slice and a
    scalar-like shift: every new kind and broadcast form in one dataflow graph."""
    slope = rng.uniform(-0.5, 0.5, 8).astype(np.float32)
    x = s.input("x", [2, 8, 6, 6])
    gap = s.global_avg_pool("gap", x)                              # [2, 8, 1, 1]
    gate = s.active("gate", gap.output, "sigmoid")
    scaled = s.binary("scaled", x, gate.output, "mul")             # per-channel [N, C, 1, 1]
    prelu = s.prelu("prelu", scaled.output)
    prelu.config(slope)
    lo = s.slice("lo", prelu.output, [0, 0, 0, 0], [2, 4, 6, 6], [1, 1, 1, 1])
    hi = s.slice("hi", prelu.output, [0, 4, 0, 0], [2, 8, 6, 6], [1, 1, 1, 1])
    diff = s.binary("diff", lo.output, hi.output, "sub")          # equal shapes: Sub
    den = s.active("den", hi.output, "sigmoid")
    ratio = s.binary("ratio", diff.output, den.output, "div")     # RealDiv
    clip = s.active("clip", ratio.output, "relu1")
    strided = s.slice("strided", clip.output, [0, 0, 1, 0], [2, 4, 6, 6], [1, 2, 2, 3])
    corner = s.slice("corner", gap.output, [0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1])
    shift = s.binary("shift", strided.output, corner.output, "add")  # scalar-like [1, 1, 1, 1]
    plane = s.slice("plane", scaled.output, [0, 0, 1, 0], [1, 1, 6, 6], [1, 1, 2, 3])
    out = s.binary("out", shift.output, plane.output, "sub")      # [1, 1, H, W] over N and C
    s.mark_output(out.output)
    layers = [gap, gate, scaled, prelu, lo, hi, diff, den, ratio, clip, strided, corner, shift,
              plane, out]
    return x, layers, slope


def chain_reference(x, slope):
    gap = x.mean(axis=(2, 3), keepdims=True)
    scaled = x * (1 / (1 + np.exp(-gap)))
    prelu = np_prelu(scaled, slope)
    lo, hi = prelu[:, :4], prelu[:, 4:]
    clip = np.clip((lo - hi) / (1 / (1 + np.exp(-hi))), 0, 1)
    shift = clip[:, 0:4:2, 1:6:2, 0:6:3] + gap[:1, :1]
    return shift - scaled[:1, :1, 1:6:2, 0:6:3]


def run_chain(fuse, mp, x_data):
    s = rt.Session()
    x, layers, slope = build_chain(s, np.random.default_rng(11))
    return run_chain_blocks(s, x, layers, x_data, fuse, mp), slope


@pytest.mark.parametrize("mp", [1, 4, 32])
def test_new_kinds_fused_equal_unfused_and_numpy(mp):
    x_data = np.random.default_rng(5).standard_normal((2, 8, 6, 6), dtype=np.float32)
    unfused, slope = run_chain(False, mp, x_data)
    assert unfused.shape == (2, 2, 3, 2)
    np.testing.assert_allclose(unfused, chain_reference(x_data, slope), rtol=1e-5, atol=1e-6)
    fused, _ = run_chain(True, mp, x_data)
    np.testing.assert_array_equal(fused, unfused)


def test_fused_chain_device_time_matches_estimate():
    s = rt.Session()
    x, layers, _ = build_chain(s, np.random.default_rng(11))
    assert_split_blocks_take_their_estimates(s, x, layers, 7, (2, 8, 6, 6))


# ---- device model -----------------------------------------------------------------------

def test_slice_cost_reads_only_what_it_selects():
    s = rt.Session()
    x = s.input("x", [1, 64, 56, 56])
    whole = s.slice("whole", x, [0, 0, 0, 0], [1, 64, 56, 56], [1, 1, 1, 1])
    quarter = s.slice("quarter", x, [0, 0, 0, 0], [1, 16, 56, 56], [1, 1, 1, 1])
    strided_w = s.slice("strided_w", x, [0, 0, 0, 0], [1, 64, 56, 56], [1, 1, 1, 2])
    strided_h = s.slice("strided_h", x, [0, 0, 0, 0], [1, 64, 56, 56], [1, 1, 2, 1])
    cost = {layer.name: s.estimate_block([layer], 1, fuse=False)
            for layer in (whole, quarter, strided_w, strided_h)}
    assert cost["quarter"] < cost["whole"]
    # A stride along H skips rows; along W the DMA still moves the whole span of each row.
    assert cost["strided_h"] < cost["strided_w"] < cost["whole"]


def test_slice_along_h_is_not_row_local():
    """A channel slice keeps rows in the tile; a slice along H needs its whole input, so a
    row-local consumer in the block waits at a barrier."""
    s = rt.Session()
    x = s.input("x", [1, 16, 32, 32])
    by_channel = s.slice("by_channel", x, [0, 0, 0, 0], [1, 8, 32, 32], [1, 1, 1, 1])
    relu_c = s.active("relu_c", by_channel.output, "relu")
    by_row = s.slice("by_row", x, [0, 0, 0, 0], [1, 16, 32, 32], [1, 1, 2, 1])
    relu_h = s.active("relu_h", by_row.output, "relu")
    assert s.explain_block([by_channel, relu_c], 8)["exchanges"] == 0
    assert s.explain_block([by_row, relu_h], 8)["exchanges"] == 1


def test_binary_costs():
    s = rt.Session()
    a = s.input("a", [1, 32, 28, 28])
    b = s.input("b", [1, 32, 1, 1])
    c = s.input("c", [1, 32, 28, 28])
    mul = s.binary("mul", a, b, "mul")
    add = s.binary("add", a, c, "add")
    div = s.binary("div", add.output, c, "div")
    prelu = s.prelu("prelu", a)
    costs = {layer.name: s.estimate_block([layer], 4, fuse=False)
             for layer in (mul, add, div, prelu)}
    assert all(us > 0 for us in costs.values())
    assert costs["mul"] < costs["add"]   # a broadcast b reads 32 values, not a whole tensor
    info = s.explain_block([add, div], 4)
    assert info["compute_us"] > 0 and info["exchanges"] == 0   # element-wise rows stay local
