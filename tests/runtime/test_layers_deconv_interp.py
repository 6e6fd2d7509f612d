"""Deconv (ONNX ConvTranspose) and Interp (ONNX Resize of H and W) against onnxruntime, per
layer and inside fusion ops, their configuration errors, and the device model's view of
them (upsampling layers in the halo model)."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import assert_split_blocks_take_their_estimates, onnx_pads, run_chain_blocks
from paleozoic import _runtime as rt

RTOL, ATOL = 1e-4, 1e-5


def ort_model(nodes, x_shape, inits, output="y"):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def ort_resize(x, size, mode, coordinates, rounding):
    sizes = np.array(list(x.shape[:2]) + list(size), np.int64)
    attrs = {"mode": mode, "coordinate_transformation_mode": coordinates}
    if mode == "nearest":
        attrs["nearest_mode"] = rounding
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attrs)
    return ort_model([node], x.shape, {"sizes": sizes}).run(None, {"x": x})[0]


# ---- Deconv -----------------------------------------------------------------------------

DECONV_CASES = {
    # id: (input shape, out_channels, kernel, stride, pads (t, b, l, r), dilation, groups,
    #      output_padding)
    "k3_s2_pad1_outpad1": ((1, 4, 5, 7), 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1)),
    "k3_s2_outpad_past_pad": ((1, 4, 5, 5), 6, (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1, (1, 1)),
    "k4_s2_pad1": ((2, 8, 6, 6), 4, (4, 4), (2, 2), (1, 1, 1, 1), (1, 1), 1, (0, 0)),
    "k2_s2_no_overlap": ((1, 3, 4, 5), 5, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 1, (0, 0)),
    "k3_s1_asym_pads": ((1, 4, 5, 6), 6, (3, 3), (1, 1), (1, 0, 2, 1), (1, 1), 1, (0, 0)),
    "rect_kernel_stride": ((1, 3, 4, 6), 5, (3, 2), (2, 1), (0, 1, 1, 0), (1, 1), 1, (1, 0)),
    "dilation2": ((1, 4, 5, 5), 6, (3, 3), (1, 1), (1, 1, 1, 1), (2, 2), 1, (0, 0)),
    "dilation2_s2_outpad": ((1, 4, 4, 5), 3, (3, 3), (2, 2), (2, 1, 1, 2), (2, 2), 1, (1, 1)),
    "groups2": ((1, 4, 5, 5), 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2, (1, 1)),
    "groups2_dilation2": ((2, 6, 4, 4), 4, (3, 3), (2, 2), (1, 1, 1, 1), (2, 2), 2, (0, 0)),
    "depthwise": ((1, 8, 6, 6), 8, (4, 4), (2, 2), (1, 1, 1, 1), (1, 1), 8, (0, 0)),
    "depthwise_mult2": ((1, 3, 5, 4), 6, (3, 3), (2, 2), (0, 1, 1, 0), (1, 1), 3, (1, 1)),
    "wide_channels": ((1, 32, 6, 6), 24, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1)),
    "k1_s3": ((1, 5, 3, 3), 2, (1, 1), (3, 3), (0, 0, 0, 0), (1, 1), 1, (2, 1)),
}


def deconv_weights(rng, shape, co, kernel, groups, with_bias=True):
    w = rng.standard_normal((shape[1], co // groups, *kernel), dtype=np.float32)
    b = rng.standard_normal(co, dtype=np.float32) if with_bias else None
    return w, b


def ort_deconv(x, w, b, stride, pads, dilation, groups, output_padding):
    inits = {"w": w} if b is None else {"w": w, "b": b}
    node = helper.make_node("ConvTranspose", ["x", *inits], ["y"], strides=list(stride),
                            pads=onnx_pads(pads), dilations=list(dilation), group=groups,
                            output_padding=list(output_padding))
    return ort_model([node], x.shape, inits).run(None, {"x": x})[0]


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("case", DECONV_CASES.values(), ids=DECONV_CASES.keys())
def test_deconv_matches_onnxruntime(case, with_bias, rng, run_layer):
    shape, co, kernel, stride, pads, dilation, groups, out_pad = case
    x = rng.standard_normal(shape, dtype=np.float32)
    w, b = deconv_weights(rng, shape, co, kernel, groups, with_bias)

    def build(s, t):
        d = s.deconv("deconv", t, out_channels=co, kernel=kernel, stride=stride, pads=pads,
                     dilation=dilation, groups=groups, output_padding=out_pad)
        d.config(w, b)
        return d

    got = run_layer(build, x)
    want = ort_deconv(x, w, b, stride, pads, dilation, groups, out_pad)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("groups", [1, 2])
def test_deconv_large_map_in_row_chunks_is_thread_independent(groups, rng, run_layer):
    """A map whose columns exceed one chunk (several GEMMs per item), equal at MP 1 and 32."""
    shape, co, kernel, stride, pads = (1, 8, 100, 64), 16, (4, 4), (2, 2), (1, 1, 1, 1)
    x = rng.standard_normal(shape, dtype=np.float32)
    w, b = deconv_weights(rng, shape, co, kernel, groups)

    def build(s, t):
        d = s.deconv("big", t, co, kernel, stride, pads, groups=groups)
        d.config(w, b)
        return d

    one, many = run_layer(build, x, mp=1), run_layer(build, x, mp=32)
    np.testing.assert_array_equal(one, many)
    want = ort_deconv(x, w, b, stride, pads, (1, 1), groups, (0, 0))
    np.testing.assert_allclose(one, want, rtol=RTOL, atol=1e-4)


def test_deconv_config_and_shape_errors():
    s = rt.Session()
    x = s.input("x", [1, 4, 5, 5])
    d = s.deconv("d", x, 6, (3, 3), groups=2)
    with pytest.raises(rt.Error, match="d: weight has 10 values, expected 108"):
        d.config(np.ones(10, np.float32))
    with pytest.raises(rt.Error, match="d: bias has 2 values, expected 6"):
        d.config(np.ones(108, np.float32), np.ones(2, np.float32))
    with pytest.raises(rt.Error, match="d: configLayer was not called"):
        s.compile_block("b0", fuse=False, mp=1, layers=[d])
    with pytest.raises(rt.Error, match=r"g3: deconv: groups = 3 must divide"):
        s.deconv("g3", x, 6, (3, 3), groups=3)
    with pytest.raises(rt.Error, match=r"op: deconv: output padding \(2, 0\)"):
        s.deconv("op", x, 6, (3, 3), stride=(2, 2), output_padding=(2, 0))
    with pytest.raises(rt.Error, match="crop: deconv: pads crop away the whole 3x3 output"):
        s.deconv("crop", s.input("one", [1, 4, 1, 1]), 6, (3, 3), pads=(2, 1, 0, 0))


# ---- Interp -----------------------------------------------------------------------------

COORDINATES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
ROUNDINGS = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
RESIZES = {
    "scale2": ((1, 2, 4, 4), (8, 8)),
    "up_5x7_to_12x9": ((1, 3, 5, 7), (12, 9)),
    "down_8x8_to_3x5": ((2, 2, 8, 8), (3, 5)),
    "mixed_6x4_to_4x10": ((1, 2, 6, 4), (4, 10)),
    "to_1x1": ((1, 2, 5, 3), (1, 1)),
}


def run_interp(run_layer, x, size, mode, coordinates, rounding, mp=4):
    return run_layer(lambda s, t: s.interp("resize", t, mode, size, coordinates, rounding), x,
                     mp=mp)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("resize", RESIZES.values(), ids=RESIZES.keys())
def test_interp_nearest_matches_onnxruntime(resize, coordinates, rounding, rng, run_layer):
    shape, size = resize
    x = rng.standard_normal(shape, dtype=np.float32)
    got = run_interp(run_layer, x, size, "nearest", coordinates, rounding)
    # A gather: the same input element onnxruntime picks, bit for bit.
    np.testing.assert_array_equal(got, ort_resize(x, size, "nearest", coordinates, rounding))


@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("resize", RESIZES.values(), ids=RESIZES.keys())
def test_interp_linear_matches_onnxruntime(resize, coordinates, rng, run_layer):
    shape, size = resize
    x = rng.standard_normal(shape, dtype=np.float32)
    got = run_interp(run_layer, x, size, "linear", coordinates, "")
    np.testing.assert_allclose(got, ort_resize(x, size, "linear", coordinates, ""),
                               rtol=1e-6, atol=1e-6)


def test_interp_rounding_ties_differ():
    """asymmetric x2: x_in = x_out / 2 is a tie on every odd output; floor and
    round_prefer_floor take the left neighbour there, ceil and round_prefer_ceil the right."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    got = {}
    for rounding in ROUNDINGS:
        s = rt.Session()
        t = s.input("x", [1, 1, 1, 4])
        layer = s.interp("r", t, "nearest", (1, 8), "asymmetric", rounding)
        s.mark_output(layer.output)
        s.compile_block("b", fuse=False, mp=1, layers=[layer])
        s.set_input(t, x)
        s.run()
        got[rounding] = s.get(layer.output).ravel().tolist()
    assert got["floor"] == got["round_prefer_floor"] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert got["ceil"] == [0, 1, 1, 2, 2, 3, 3, 3]
    assert got["round_prefer_ceil"] == [0, 1, 1, 2, 2, 3, 3, 3]


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_interp_many_rows_thread_independent(mode, rng, run_layer):
    x = rng.standard_normal((2, 16, 40, 36), dtype=np.float32)
    rounding = "round_prefer_floor" if mode == "nearest" else ""
    one = run_interp(run_layer, x, (97, 61), mode, "half_pixel", rounding, mp=1)
    many = run_interp(run_layer, x, (97, 61), mode, "half_pixel", rounding, mp=32)
    np.testing.assert_array_equal(one, many)
    np.testing.assert_allclose(one, ort_resize(x, (97, 61), mode, "half_pixel", rounding),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("args, match", [
    (("cubic", (4, 4), "half_pixel", "floor"), "unknown interp mode 'cubic'"),
    (("nearest", (4, 4), "tf_crop_and_resize", "floor"), "unknown coordinate_transformation_mode"),
    (("nearest", (4, 4), "half_pixel", "simple"), "unknown nearest_mode 'simple'"),
    (("linear", (4, 4), "half_pixel", "floor"), "linear interp takes no rounding"),
])
def test_interp_bad_parameters(args, match):
    s = rt.Session()
    x = s.input("x", [1, 2, 3, 3])
    with pytest.raises(rt.Error, match=match):
        s.interp("bad", x, *args)


def test_interp_shape_errors_name_the_layer():
    s = rt.Session()
    with pytest.raises(rt.Error, match=r"flat: interp needs a 4-D NCHW input"):
        s.interp("flat", s.input("x", [2, 3, 4]), "nearest", (4, 4))
    with pytest.raises(rt.Error, match=r"empty: interp: output size must be >= 1, got 0x4"):
        s.interp("empty", s.input("y", [1, 1, 2, 2]), "linear", (0, 4), rounding="")


# ---- inside fusion ops ------------------------------------------------------------------

def chain_params(rng):
    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    return {"c1.w": w(8, 8, 3, 3), "c1.b": w(8), "d1.w": w(8, 6, 3, 3), "d1.b": w(6),
            "d2.w": w(12, 2, 3, 3), "d3.w": w(4, 1, 2, 2), "d3.b": w(4)}


def build_chain(s, p):
    """conv -> deconv (s2, bias, output padding within the pad) -> relu -> nearest and
    bilinear x2 -> concat -> dilated group deconv -> align-corners nearest and bilinear down to
    10x7 -> add -> depthwise deconv (output padding past the pad) -> pytorch_half_pixel
    nearest with ceil: each SDK param form of both kinds in one dataflow graph."""
    x = s.input("x", [2, 8, 6, 6])
    c1 = s.conv("c1", x, 8, (3, 3), pads=(1, 1, 1, 1))
    c1.config(p["c1.w"], p["c1.b"])
    d1 = s.deconv("d1", c1.output, 6, (3, 3), (2, 2), (1, 1, 1, 1), output_padding=(1, 1))
    d1.config(p["d1.w"], p["d1.b"])                                       # [2, 6, 12, 12]
    r1 = s.active("r1", d1.output, "relu")
    n1 = s.interp("n1", r1.output, "nearest", (24, 24), "asymmetric", "floor")
    l1 = s.interp("l1", r1.output, "linear", (24, 24), "half_pixel", "")
    cat = s.concat("cat", [n1.output, l1.output], 1)                     # [2, 12, 24, 24]
    d2 = s.deconv("d2", cat.output, 4, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), groups=2)
    d2.config(p["d2.w"])                                                  # [2, 4, 24, 24]
    n2 = s.interp("n2", d2.output, "nearest", (10, 7), "align_corners", "round_prefer_ceil")
    l2 = s.interp("l2", d2.output, "linear", (10, 7), "align_corners", "")
    add = s.add("add", n2.output, l2.output)
    d3 = s.deconv("d3", add.output, 4, (2, 2), (2, 2), groups=4, output_padding=(1, 1))
    d3.config(p["d3.w"], p["d3.b"])                                       # [2, 4, 21, 15]
    n3 = s.interp("n3", d3.output, "nearest", (8, 8), "pytorch_half_pixel", "ceil")
    s.mark_output(n3.output)
    return x, [c1, d1, r1, n1, l1, cat, d2, n2, l2, add, d3, n3]


def chain_reference(x, p):
    def resize(name, inp, out, size, mode, coordinates, rounding=""):
        sizes = f"{name}.sizes"
        inits[sizes] = np.array([2, inp_channels[inp], *size], np.int64)
        attrs = {"mode": mode, "coordinate_transformation_mode": coordinates}
        if rounding:
            attrs["nearest_mode"] = rounding
        return helper.make_node("Resize", [inp, "", "", sizes], [out], **attrs)

    inits = dict(p)
    inp_channels = {"r1": 6, "d2": 4, "d3": 4}
    nodes = [
        helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("ConvTranspose", ["c1", "d1.w", "d1.b"], ["d1"], strides=[2, 2],
                         pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("Relu", ["d1"], ["r1"]),
        resize("n1", "r1", "n1", (24, 24), "nearest", "asymmetric", "floor"),
        resize("l1", "r1", "l1", (24, 24), "linear", "half_pixel"),
        helper.make_node("Concat", ["n1", "l1"], ["cat"], axis=1),
        helper.make_node("ConvTranspose", ["cat", "d2.w"], ["d2"], pads=[2, 2, 2, 2],
                         dilations=[2, 2], group=2),
        resize("n2", "d2", "n2", (10, 7), "nearest", "align_corners", "round_prefer_ceil"),
        resize("l2", "d2", "l2", (10, 7), "linear", "align_corners"),
        helper.make_node("Add", ["n2", "l2"], ["add"]),
        helper.make_node("ConvTranspose", ["add", "d3.w", "d3.b"], ["d3"], strides=[2, 2],
                         group=4, output_padding=[1, 1]),
        resize("n3", "d3", "y", (8, 8), "nearest", "pytorch_half_pixel", "ceil"),
    ]
    return ort_model(nodes, x.shape, inits).run(None, {"x": x})[0]


def run_chain(fuse, mp, x_data, p):
    s = rt.Session()
    x, layers = build_chain(s, p)
    return run_chain_blocks(s, x, layers, x_data, fuse, mp)


@pytest.mark.parametrize("mp", [1, 4, 32])
def test_deconv_interp_fused_equal_unfused_and_onnxruntime(mp):
    rng = np.random.default_rng(3)
    p = chain_params(rng)
    x_data = rng.standard_normal((2, 8, 6, 6), dtype=np.float32)
    unfused = run_chain(False, mp, x_data, p)
    assert unfused.shape == (2, 4, 8, 8)
    np.testing.assert_allclose(unfused, chain_reference(x_data, p), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(run_chain(True, mp, x_data, p), unfused)


def test_fused_chain_device_time_matches_estimate():
    s = rt.Session()
    x, layers = build_chain(s, chain_params(np.random.default_rng(3)))
    assert_split_blocks_take_their_estimates(s, x, layers, 6, (2, 8, 6, 6))


# ---- device model -----------------------------------------------------------------------

def test_cost_table_equals_estimates_for_the_new_kinds():
    s = rt.Session()
    _, layers = build_chain(s, chain_params(np.random.default_rng(3)))
    mps = [1, 4, 32]
    table = s.cost_table(layers, mps)
    for i, j in [(0, 2), (1, 5), (3, 8), (6, 12), (0, 12), (10, 11)]:
        for k, mp in enumerate(mps):
            want = s.estimate_block(layers[i:j], mp, fuse=j - i > 1)
            assert table[i, j, k] == pytest.approx(want, rel=1e-6)


def test_deconv_and_interp_costs():
    s = rt.Session()
    x = s.input("x", [1, 64, 32, 32])
    small = s.deconv("small", x, 32, (2, 2), (2, 2))
    big = s.deconv("big", x, 32, (4, 4), (2, 2), (1, 1, 1, 1))
    near = s.interp("near", x, "nearest", (64, 64), "asymmetric", "floor")
    lin = s.interp("lin", x, "linear", (64, 64), "half_pixel", "")
    cost = {layer.name: s.estimate_block([layer], 4, fuse=False)
            for layer in (small, big, near, lin)}
    assert all(us > 0 for us in cost.values())
    assert cost["big"] > cost["small"]      # four times the MACs, same output
    assert cost["lin"] >= cost["near"]


def test_upsampling_keeps_rows_local_and_halos_follow_the_window():
    """Deconv and Interp tile by rows in a fused block (no barrier); a bilinear consumer needs
    a row of halo from its producer, a nearest one none."""
    s = rt.Session()
    x = s.input("x", [1, 16, 32, 32])
    relu_n = s.active("relu_n", x, "relu")
    near = s.interp("near", relu_n.output, "nearest", (64, 64), "asymmetric", "floor")
    relu_l = s.active("relu_l", x, "relu")
    lin = s.interp("lin", relu_l.output, "linear", (64, 64), "half_pixel", "")
    relu_d = s.active("relu_d", x, "relu")
    deconv = s.deconv("deconv", relu_d.output, 16, (3, 3), (2, 2), (1, 1, 1, 1),
                      output_padding=(1, 1))
    nearest = s.explain_block([relu_n, near], 8)
    linear = s.explain_block([relu_l, lin], 8)
    deconv_info = s.explain_block([relu_d, deconv], 8)
    for info in (nearest, linear, deconv_info):
        assert info["exchanges"] == 0
    assert nearest["halo_us"] == 0
    assert linear["halo_us"] > 0 and deconv_info["halo_us"] > 0
