"""fp16 and int8 ops on the oneDNN SDK (runtime_cpp/backends/onednn/quantized.cpp) against
the mock's stated arithmetic (numerics.h): int8 Conv/ConvGroup/Mlp bit for bit with the numpy
emulation of test_precision_int8.py (input quantised with the mock's rule, -127 not -128,
exact int32 sums, the same fp32 rescale), fp16 ops as the fp32 primitive between exact
binary16 conversions, fused int8 chains within one binary16 rounding, the calibrated digits
CNN end to end, and oneDNN's VNNI kernels actually running (ONEDNN_VERBOSE). Skipped
without the `onednn` extra."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import mock_sdk
import numpy as np
import pytest
from test_precision_int8 import CONVS, conv_int64, epilogue, quantize, rescale_factors

from paleozoic.runner.sdk import runtime_module, sdk_available

pytestmark = [
    pytest.mark.skipif(
        not sdk_available("onednn"),
        reason="the oneDNN SDK is not available: pip install 'paleozoic[onednn]'"),
    pytest.mark.filterwarnings("ignore:overflow encountered"),
    pytest.mark.filterwarnings("ignore:invalid value encountered"),
]

F16, F32 = np.float16, np.float32
SDKS = ("mock", "onednn")
_CPUINFO = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
# Without VNNI (or AMX) int8 ops stay on the mock's kernels (quantized.cpp): the int8
# tests then still compare numbers but expect no oneDNN int8 primitive.
VNNI = any(flag in _CPUINFO for flag in ("avx512_vnni", "avx_vnni", "amx_int8"))


@pytest.fixture(scope="module")
def sdk():
    """mock_sdk's ctypes driver over each SDK's shared object: {"mock": m, "onednn": m}."""
    return {"mock": mock_sdk, "onednn": mock_sdk.onednn_driver()}


@pytest.fixture
def kernels(capfd: pytest.CaptureFixture[str]):
    """kernels(f) runs f() with oneDNN's verbose mode on and returns (f's result, the
    primitives executed: "kind impl descriptors" lines), to show that an op ran on oneDNN
    and not on the mock's kernels (which print nothing)."""
    runtime_module("onednn")  # loads libdnnl
    dnnl, libc = ctypes.CDLL("libdnnl.so.3"), ctypes.CDLL(None)

    def run(f):
        libc.fflush(None)
        capfd.readouterr()
        assert dnnl.dnnl_set_verbose(1) == 0
        try:
            result = f()
        finally:
            libc.fflush(None)
            dnnl.dnnl_set_verbose(0)
        lines = [line.split(",") for line in capfd.readouterr().out.splitlines()
                 if line.startswith("onednn_verbose,exec,cpu,")]
        return result, [" ".join(parts[3:5] + parts[6:7]) for parts in lines]

    return run


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16)


def _int8_conv(m, x, wq, bias, c, px, sx, pw, sw, per_channel):
    n, _ci, h, w = x.shape
    co, k, group = wq.shape[0], wq.shape[2], c["group"]
    stride, dil, pads = c["stride"], c["dil"], c["pads"]
    ho = (h + pads[0] + pads[1] - dil[0] * (k - 1) - 1) // stride[0] + 1
    wo = (w + pads[2] + pads[3] - dil[1] * (k - 1) - 1) // stride[1] + 1
    tin, tout = m.tensor(x.shape, m.FLOAT16), m.tensor([n, co, ho, wo], m.FLOAT16)
    tf, tb = m.const(wq, m.INT8, m.FILTER), m.const(bias, m.FLOAT16)
    if per_channel:
        m.check("cnmlSetQuantizedPositionByChannel", tf, m.ints(pw), co)
        m.check("cnmlSetQuantizedScaleByChannel", tf, m.floats(sw), co)
    else:  # the SDK's per-tensor parameters
        m.check("cnmlSetQuantizedPosition", tf, int(pw))
        m.check("cnmlSetQuantizedScale", tf, m.f32(sw))
    param = m.conv_param(stride, dil, pads)
    if group == 1:
        op = m.create("cnmlCreateConvOp", param, tin, tout, tf, tb)
    else:
        op = m.create("cnmlCreateConvGroupOp", param, tin, tout, tf, tb, group)
    m.check("cnmlSetOperationComputingDataType", op, tin, m.INT8, m.quant_param(px, sx))
    y, _ = m.run_base(op, "cnmlComputeConvOpForward_V4", (tin, x),
                      (tout, (n, co, ho, wo), F16), mp=2)
    return y


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("name", list(CONVS))
def test_int8_conv_is_the_mocks_bit_for_bit(sdk, kernels, name: str, per_channel: bool) -> None:
    """Plain, grouped, depthwise, strided/padded, dilated, pointwise, wide and long-K convs
    on standard-normal inputs with values far outside the calibrated range (they clamp)."""
    c = CONVS[name]
    rng = np.random.default_rng(sum(map(ord, name)) + 1)
    n, h = 2, c.get("h", 11)
    ci, co, k, group = c["ci"], c["co"], c["k"], c["group"]
    x = (rng.standard_normal((n, ci, h, h)) * 4).astype(F16)
    x.flat[::37] = F16(300.0)
    x.flat[5::41] = F16(-1000.0)  # -1000 * 2^3 * 1.7: oneDNN's saturation would give -128
    wq = rng.integers(-127, 128, (co, ci // group, k, k)).astype(np.int8)
    wq.flat[::3] = 127
    bias = (rng.standard_normal(co) * 10).astype(F16)
    px, sx = -3, 1.7
    if per_channel:
        pw, sw = rng.integers(-8, 2, co), rng.uniform(0.5, 2.0, co).astype(F32)
    else:
        pw, sw = -5, 1.3
    ys = {"mock": _int8_conv(sdk["mock"], x, wq, bias, c, px, sx, pw, sw, per_channel)}
    ys["onednn"], ran = kernels(
        lambda: _int8_conv(sdk["onednn"], x, wq, bias, c, px, sx, pw, sw, per_channel))
    assert bool([k for k in ran if k.startswith("convolution") and "src_s8" in k
                 and "wei_s8" in k and ("vnni" in k or "amx" in k)]) == VNNI, ran
    acc = conv_int64(quantize(x, px, sx), wq, group, c["stride"], c["dil"], c["pads"])
    want = epilogue(acc, rescale_factors(px, sx, pw, sw) * np.ones(co, F32), bias)
    assert np.array_equal(_bits(ys["onednn"]), _bits(want))
    assert np.array_equal(_bits(ys["onednn"]), _bits(ys["mock"]))


def test_int8_input_quantisation_is_the_mocks_rule_on_every_binary16_value(sdk) -> None:
    """Every binary16 (with +-inf and NaN) through a 1x1 conv whose output is the input's q
    code: rint half to even of the product in double, clamped to +-127 (oneDNN's quantising
    reorder saturates at -128, and multiplies in fp32)."""
    codes = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    x = codes.view(F16).reshape(1, 1, 256, 256)
    px, sx = -2, F32(1.0000001)
    wq = np.ones((1, 1, 1, 1), np.int8)
    bias = np.zeros(1, F16)
    c = {"group": 1, "stride": (1, 1), "dil": (1, 1), "pads": (0, 0, 0, 0)}
    y = _int8_conv(sdk["onednn"], x, wq, bias, c, px, sx, -px, 1.0, False)
    q = quantize(x, px, sx)
    assert np.array_equal(_bits(y), _bits(epilogue(q, rescale_factors(px, sx, -px, 1.0), bias)))
    # A quantisation saturating at -128 (oneDNN's reorder) would differ on this input.
    fp32_rule = np.clip(np.rint(np.nan_to_num(x.astype(F32) * F32(sx * 4), nan=0.0)), -128, 127)
    assert (fp32_rule != q).sum() > 1000
    assert q.min() == -127


@pytest.mark.parametrize("batch", [1, 3])
def test_int8_mlp_long_reduction_is_the_mocks(sdk, kernels, batch: int) -> None:
    """K = 3000 with mostly saturated codes: |acc| > 2^24, exact in int32 on both SDKs."""
    rng = np.random.default_rng(batch + 10)
    k, co = 3000, 37
    x = (rng.standard_normal((batch, k)) * 200).astype(F16)
    wq = rng.choice(np.array([-127, -126, 125, 127], np.int8), (co, k))
    wq[:co // 2] = np.where(x[0] >= 0, 127, -127)
    bias = rng.standard_normal(co).astype(F16)
    px, sx, pw = 0, 1.0, rng.integers(-4, 1, co)
    sw = rng.uniform(0.7, 1.3, co).astype(F32)

    def run(m):
        tin, tout = m.tensor(x.shape, m.FLOAT16), m.tensor([batch, co], m.FLOAT16)
        tf, tb = m.const(wq, m.INT8, m.FILTER), m.const(bias, m.FLOAT16)
        m.check("cnmlSetQuantizedPositionByChannel", tf, m.ints(pw), co)
        m.check("cnmlSetQuantizedScaleByChannel", tf, m.floats(sw), co)
        op = m.create("cnmlCreateMlpOp", tin, tout, tf, tb, m.NO_SPARSE)
        m.check("cnmlSetOperationComputingDataType", op, tin, m.INT8, m.quant_param(px, sx))
        return m.run_fused([op], [(tin, x)], [(tout, (batch, co), F16)])[0]

    ys = {"mock": run(sdk["mock"])}
    ys["onednn"], ran = kernels(lambda: run(sdk["onednn"]))
    assert bool([k for k in ran if k.startswith("inner_product") and "src_s8" in k
                 and ("vnni" in k or "amx" in k)]) == VNNI, ran
    acc = quantize(x, px, sx) @ wq.astype(np.int64).T
    assert np.abs(acc).max() > 2**24
    want = epilogue(acc, rescale_factors(px, sx, pw, sw), bias)
    assert np.array_equal(_bits(ys["onednn"]), _bits(want))
    assert np.array_equal(_bits(ys["onednn"]), _bits(ys["mock"]))


# ---- through the wrapper (rt.Session), fp16 and fused int8 -------------------------------

def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in binary16 steps (same-sign finite values)."""
    ia = _bits(a.astype(F16)).astype(np.int32)
    ib = _bits(b.astype(F16)).astype(np.int32)
    return np.abs(ia - ib)


def _session(sdk_name: str, build, feeds: dict[str, np.ndarray], precision: str,
             fuse: bool, quant=None) -> np.ndarray:
    rt = runtime_module(sdk_name)
    s = rt.Session()
    inputs = {name: s.input(name, list(x.shape)) for name, x in feeds.items()}
    layers = build(s, inputs)
    for layer, q in (quant or {}).items():
        layers[layer].set_quantization(*q)
    out = list(layers.values())[-1].output
    s.mark_output(out)
    s.compile_block("b0", fuse=fuse, mp=2, layers=list(layers.values()), precision=precision)
    for name, x in feeds.items():
        s.set_input(inputs[name], x)
    s.run()
    return np.asarray(s.get(out))


def _stress(rng, shape, scale=3.0) -> np.ndarray:
    """Standard normal times `scale` with large and tiny (binary16 subnormal) values."""
    x = (rng.standard_normal(shape) * scale).astype(F32)
    x.flat[::29] *= 1000.0
    x.flat[3::31] *= 1e-6
    return x


def _weights(layer, rng, scale=0.3):
    return [rng.standard_normal(shape).astype(F32) * scale for _, shape, _ in layer.weight_specs]


# fp16 ops whose fp32 arithmetic is the same on both SDKs (one rounding, element-wise or
# data movement): bit-equal. The rest differ in fp32 summation order only.
def _relu(s, i):
    return {"relu": s.active("relu", i["x"], "relu")}


def _tanh(s, i):
    return {"tanh": s.active("tanh", i["x"], "tanh")}


def _add(s, i):
    return {"add": s.add("add", i["x"], i["y"])}


def _div(s, i):
    return {"div": s.binary("div", i["x"], i["y"], op="div")}


def _maxpool(s, i):
    return {"pool": s.pool("pool", i["x"], mode="max", kernel=[3, 3], stride=[2, 2],
                           pads=[1, 1, 1, 1])}


def _avgpool(s, i):
    return {"pool": s.pool("pool", i["x"], mode="avg", kernel=[2, 2], stride=[2, 2])}


def _transpose(s, i):
    return {"t": s.transpose("t", i["x"], perm=[0, 2, 3, 1])}


def _concat(s, i):
    return {"cat": s.concat("cat", [i["x"], i["y"]], axis=1)}


def _conv(s, i):
    return {"conv": s.conv("conv", i["x"], out_channels=12, kernel=[3, 3], pads=[1, 1, 1, 1])}


def _fc(s, i):
    return {"fc": s.fully_connected("fc", i["x"], out_features=20)}


def _softmax(s, i):
    return {"sm": s.softmax("sm", i["x"], axis=1)}


def _batchnorm(s, i):
    return {"bn": s.batch_norm("bn", i["x"])}


# The oneDNN primitive each fp16 kind runs (in f32).
PRIMITIVE = {"relu": "eltwise", "tanh": "eltwise", "add": "binary", "div": "binary",
             "maxpool": "pooling", "avgpool": "pooling", "transpose": "reorder",
             "concat": "concat", "conv": "convolution", "fc": "inner_product",
             "softmax": "softmax", "batchnorm": "binary"}
EXACT_FP16 = {"relu": _relu, "add": _add, "div": _div, "maxpool": _maxpool,
              "transpose": _transpose, "concat": _concat, "batchnorm": _batchnorm}
ROUNDED_FP16 = {"tanh": _tanh, "avgpool": _avgpool, "conv": _conv, "fc": _fc,
                "softmax": _softmax}


def _fp16_run(name: str, build, kernels) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, name)))
    feeds = {"x": _stress(rng, (2, 8, 12, 12)), "y": _stress(rng, (2, 8, 12, 12))}
    if name == "div":
        feeds["y"] = np.where(np.abs(feeds["y"]) < 1e-3, 1.5, feeds["y"]).astype(F32)

    def with_weights(s, inputs):
        layers = build(s, inputs)
        wr = np.random.default_rng(1)
        for layer in layers.values():
            if layer.weight_specs:
                ws = _weights(layer, wr)
                if name == "batchnorm":  # mean, reciprocal deviation > 0
                    ws = [ws[0], np.abs(ws[1]) + 0.5]
                layer.config(*ws)
        return layers

    ys = {"mock": _session("mock", with_weights, feeds, "fp16", fuse=False)}
    ys["onednn"], ran = kernels(lambda: _session("onednn", with_weights, feeds, "fp16",
                                                 fuse=False))
    assert [k for k in ran if k.startswith(PRIMITIVE[name]) and "f32" in k], ran
    return ys


@pytest.mark.parametrize("name", sorted(EXACT_FP16))
def test_fp16_elementwise_and_data_movement_are_bit_equal(name: str, kernels) -> None:
    ys = _fp16_run(name, EXACT_FP16[name], kernels)
    assert np.array_equal(_bits(ys["onednn"]), _bits(ys["mock"]))
    assert ys["mock"].dtype == F32 and np.isfinite(ys["mock"]).any()


@pytest.mark.parametrize("name", sorted(ROUNDED_FP16))
def test_fp16_reductions_are_one_rounding_of_an_fp32_result(name: str, kernels) -> None:
    """Another fp32 summation order moves a few results across a binary16 rounding
    boundary: at most one binary16 step apart (measured: 0 to 2 % of the elements)."""
    ys = _fp16_run(name, ROUNDED_FP16[name], kernels)
    ref = ys["mock"]
    assert np.array_equal(ys["onednn"], ys["onednn"].astype(F16).astype(F32))  # binary16 values
    assert _ulps(ys["onednn"], ref).max() <= 1
    assert np.mean(ys["onednn"] != ref) < 0.05


def _conv_chain(kind: str):
    def build(s, i):
        layers = {}
        if kind == "add_relu":  # the residual computed in the block, ahead of the conv
            layers["res"] = s.active("res", i["y"], "relu")
        layers["conv"] = s.conv("conv", i["x"], out_channels=16, kernel=[3, 3],
                                pads=[1, 1, 1, 1])
        last = layers["conv"].output
        if kind in ("bn_relu",):
            layers["bn"] = s.batch_norm("bn", last)
            last = layers["bn"].output
        if kind == "add_relu":
            layers["add"] = s.add("add", last, layers["res"].output)
            last = layers["add"].output
        layers["relu"] = s.active("relu", last, "relu")
        return layers
    return build


def _configured_conv_chain(kind: str, rng, x):
    """The chain of `kind` with its conv's weights and batchnorm's statistics drawn from
    `rng` (after `x`, and the residual's second input before them): its builder, which
    configures them, its feeds, and what it drew: (y, w, b, mean, inv)."""
    y = (rng.standard_normal((1, 16, 14, 14)) * 2).astype(F32)
    w = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(F32)
    b = rng.standard_normal(16).astype(F32)
    mean, inv = rng.standard_normal(16).astype(F32), rng.uniform(0.5, 2, 16).astype(F32)
    build = _conv_chain(kind)

    def configured(s, inputs):
        layers = build(s, inputs)
        layers["conv"].config(w, b)
        if "bn" in layers:
            layers["bn"].config(mean, inv)
        return layers

    feeds = {"x": x, "y": y} if kind == "add_relu" else {"x": x}
    return configured, feeds, (y, w, b, mean, inv)


@pytest.mark.skipif(not VNNI, reason="no VNNI on this CPU: int8 stays on the mock's kernels")
@pytest.mark.parametrize("kind", ["relu", "bn_relu", "add_relu"])
def test_fused_int8_chain(kind: str) -> None:
    """int8 conv + (batchnorm) + (add) + relu as one oneDNN int8 convolution with post-ops.
    The mock rounds every op's output to binary16, the fused primitive only the chain's:
    conv + relu is bit-equal (relu commutes with rounding), the others differ by the
    skipped rounding and are no farther from the float64 truth of the same int8 codes than
    the mock."""
    rng = np.random.default_rng(len(kind))
    x = (rng.standard_normal((1, 16, 14, 14)) * 2).astype(F32)
    configured, feeds, (y, w, b, mean, inv) = _configured_conv_chain(kind, rng, x)
    from paleozoic.calibration.quant import quantized_param
    px, sx = quantized_param(float(np.abs(x).max()))
    channels = [quantized_param(float(np.abs(w[c]).max())) for c in range(16)]
    quant = {"conv": ((px, sx), channels)}
    fused = {s: _session(s, configured, feeds, "int8", True, quant) for s in SDKS}
    alone = _session("onednn", configured, feeds, "int8", False, quant)
    np.testing.assert_array_equal(alone, fused["mock"])  # op by op: the mock's numbers
    if kind == "relu":
        np.testing.assert_array_equal(fused["onednn"], fused["mock"])
        return
    # The mock's extra rounding of the conv's output (half a binary16 step of it) is all
    # that differs: relative to the output's range, within one step.
    diff = np.abs(fused["onednn"] - fused["mock"]).max()
    assert 0 < diff <= 2.0**-10 * np.abs(fused["mock"]).max()
    # float64 truth of the same codes and rescale, the chain without rounding.
    xq = quantize(x.astype(F16), px, sx)
    wq = np.stack([quantize(w[c], *channels[c]) for c in range(16)])
    acc = conv_int64(xq, wq, 1, (1, 1), (1, 1), (1, 1, 1, 1))
    f = np.array([2.0 ** (px + p) / (sx * np.float64(F32(s))) for p, s in channels])
    t = acc * f[None, :, None, None] + b.astype(F16).astype(np.float64)[None, :, None, None]
    if kind == "bn_relu":
        t = ((t - mean.astype(F16)[None, :, None, None])
             * inv.astype(F16)[None, :, None, None].astype(np.float64))
    else:
        t = t + np.maximum(y.astype(F16), 0)
    t = np.maximum(t, 0)
    err = {s: np.abs(fused[s].astype(np.float64) - t).max() for s in SDKS}
    assert err["onednn"] <= err["mock"]


@pytest.mark.skipif(not VNNI, reason="no VNNI on this CPU: int8 stays on the mock's kernels")
def test_linked_int8_convs_requantise_in_the_producer(kernels) -> None:
    """conv -> conv in one int8 fusion: the first writes the second's int8 codes itself
    (output scale, clip to -127) instead of a binary16 value the second quantises. The
    codes are those of the fp32 value rounded once (the mock rounds it to binary16 first,
    so it differs from the mock by one code near rounding ties). Checked against a numpy
    emulation of that single rounding, with 1 in 8 intermediate values far below the
    calibrated range, where a conversion to s8 would give -128."""
    rng = np.random.default_rng(11)
    c = 24
    x = (rng.standard_normal((1, c, 12, 12)) * 2).astype(F32)
    w1 = (rng.standard_normal((c, c, 3, 3)) * 0.1).astype(F32)
    w2 = (rng.standard_normal((c, c, 3, 3)) * 0.1).astype(F32)
    b1, b2 = rng.standard_normal(c).astype(F32), rng.standard_normal(c).astype(F32)
    from paleozoic.calibration.quant import quantized_param
    px, sx = quantized_param(float(np.abs(x).max()))
    q1 = [quantized_param(float(np.abs(w1[k]).max())) for k in range(c)]
    q2 = [quantized_param(float(np.abs(w2[k]).max())) for k in range(c)]
    pads = (1, 1, 1, 1)
    xq = quantize(x.astype(F16), px, sx)
    w1q = np.stack([quantize(w1[k], *q1[k]) for k in range(c)])
    w2q = np.stack([quantize(w2[k], *q2[k]) for k in range(c)])
    f1 = rescale_factors(px, sx, [p for p, _ in q1], [s for _, s in q1])
    v1 = (conv_int64(xq, w1q, 1, (1, 1), (1, 1), pads).astype(F32) * f1[None, :, None, None]
          + b1.astype(F16).astype(F32)[None, :, None, None])
    # The second conv's input range: the 7/8 quantile of |v1|, so 1/8 clamps (half below).
    ph, sh = quantized_param(float(np.quantile(np.abs(v1), 7 / 8)))
    assert (quantize(v1, ph, sh) == -127).mean() > 0.04

    def build(s, i):
        conv1 = s.conv("conv1", i["x"], out_channels=c, kernel=[3, 3], pads=[1, 1, 1, 1])
        conv2 = s.conv("conv2", conv1.output, out_channels=c, kernel=[3, 3],
                       pads=[1, 1, 1, 1])
        conv1.config(w1, b1)
        conv2.config(w2, b2)
        return {"conv1": conv1, "conv2": conv2}

    quant = {"conv1": ((px, sx), q1), "conv2": ((ph, sh), q2)}
    feeds = {"x": x}
    fused, ran = kernels(lambda: _session("onednn", build, feeds, "int8", True, quant))
    assert any(k.startswith("convolution") and "dst_s8" in k for k in ran), ran
    mock = _session("mock", build, feeds, "int8", True, quant)
    f2 = rescale_factors(ph, sh, [p for p, _ in q2], [s for _, s in q2])

    def second(codes, low=-127):
        acc = conv_int64(np.maximum(codes, low), w2q, 1, (1, 1), (1, 1), pads)
        return epilogue(acc, f2, b2.astype(F16))

    once = second(quantize(v1, ph, sh))
    # fp32 products next to the emulation's double ones: measured 0 of 3,456 outputs differ.
    assert (fused != once).mean() <= 0.01
    to_s8 = np.clip(np.rint(v1 * np.float64(F32(sh)) * 2.0 ** -ph), -128, 127)
    assert (second(to_s8.astype(np.int64), low=-128) != fused).mean() > 0.3  # caught
    assert (mock != fused).any()  # the mock's binary16 rounding in between
    # No farther from the float64 truth than the mock.
    truth = second(quantize(v1, ph, sh)).astype(np.float64)
    assert np.abs(fused - truth).max() <= np.abs(mock - truth).max()


@pytest.mark.skipif(not VNNI, reason="no VNNI on this CPU: int8 stays on the mock's kernels")
def test_linked_int8_value_read_by_a_conv_and_a_residual_add() -> None:
    """A bottleneck in one int8 fusion: a = relu(conv1 x) read by conv2 and by conv3's
    residual add. conv1 keeps its fp32 result (the add needs it), conv2 writes conv3's
    int8 codes. Within a few int8 steps of the mock (the skipped binary16 roundings), as
    any reader left on a buffer nobody writes would not be."""
    rng = np.random.default_rng(12)
    c = 16
    x = (rng.standard_normal((1, c, 10, 10)) * 2).astype(F32)
    ws = [(rng.standard_normal((c, c, 3, 3)) * 0.15).astype(F32) for _ in range(3)]
    from paleozoic.calibration.quant import quantized_param

    def build(s, i):
        layers, last = {}, i["x"]
        for k in range(3):
            conv = s.conv(f"conv{k}", last, out_channels=c, kernel=[3, 3], pads=[1, 1, 1, 1])
            conv.config(ws[k], None)
            layers[f"conv{k}"] = conv
            last = conv.output
            if k == 0:
                layers["relu0"] = s.active("relu0", last, "relu")
                last = residual = layers["relu0"].output
            if k == 1:
                layers["relu1"] = s.active("relu1", last, "relu")
                last = layers["relu1"].output
        layers["add"] = s.add("add", last, residual)
        layers["relu"] = s.active("relu", layers["add"].output, "relu")
        return layers

    ranges = [float(np.abs(x).max()), 6.0, 6.0]
    quant = {f"conv{k}": (quantized_param(ranges[k]),
                          [quantized_param(float(np.abs(ws[k][o]).max())) for o in range(c)])
             for k in range(3)}
    fused = {s: _session(s, build, {"x": x}, "int8", True, quant).astype(np.float64)
             for s in SDKS}
    step = 6.0 / 127
    assert np.abs(fused["onednn"] - fused["mock"]).max() <= 4 * step
    assert np.abs(fused["mock"]).max() > 20 * step


def test_linked_fp16_steps_hand_over_fp32() -> None:
    """fc -> tanh -> fc -> add -> layernorm as fp16 steps of one fusion (an inner product
    head cannot take tanh as its post-op here, so each is its own step): inside the fusion
    a step reads the previous one's fp32 result, where the mock rounds every op's output
    to binary16. The result is the chain rounded once: a few binary16 steps from the mock,
    and no farther from the float64 truth than the mock is."""
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((8, 64)) * 2).astype(F32)
    w1 = (rng.standard_normal((96, 64)) * 0.15).astype(F32)
    w2 = (rng.standard_normal((64, 96)) * 0.15).astype(F32)
    b1, b2 = rng.standard_normal(96).astype(F32), rng.standard_normal(64).astype(F32)
    gamma, beta = rng.uniform(0.5, 1.5, 64).astype(F32), rng.standard_normal(64).astype(F32)

    def build(s, i):
        fc1 = s.fully_connected("fc1", i["x"], out_features=96)
        act = s.active("act", fc1.output, "tanh")
        fc2 = s.fully_connected("fc2", act.output, out_features=64)
        add = s.add("add", fc2.output, i["x"])
        norm = s.layer_norm("norm", add.output, axis=1)
        fc1.config(w1, b1)
        fc2.config(w2, b2)
        norm.config(gamma, beta)
        return {"fc1": fc1, "act": act, "fc2": fc2, "add": add, "norm": norm}

    out = {s: _session(s, build, {"x": x}, "fp16", True).astype(np.float64) for s in SDKS}
    h = np.tanh(x.astype(F16).astype(np.float64) @ w1.astype(F16).T.astype(np.float64)
                + b1.astype(F16))
    a = h @ w2.astype(F16).T.astype(np.float64) + b2.astype(F16) + x.astype(F16)
    truth = ((a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
             * gamma.astype(F16) + beta.astype(F16))
    err = {s: np.abs(out[s] - truth).max() for s in SDKS}
    assert np.abs(out["onednn"] - out["mock"]).max() <= 4 * 2.0**-10 * np.abs(truth).max()
    assert err["onednn"] <= err["mock"], err


# ---- a whole calibrated model ------------------------------------------------------------

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits"


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory):
    from paleozoic.calibration import calibrate
    from paleozoic.calibration.params import layer_quantization
    from paleozoic.pipeline import load_queue

    data = dict(np.load(DIGITS / "digits_data.npz"))
    calib = tmp_path_factory.mktemp("digits_onednn")
    for i, image in enumerate(data["calib_x"][:64]):
        np.save(calib / f"{i:03d}.npy", image[None].astype(np.float32))
    queue = load_queue(str(DIGITS / "digits_cnn.onnx"))
    record = calibrate(queue, [calib], model="digits_cnn.onnx")
    return data, queue, layer_quantization(queue, record)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_calibrated_digits_cnn_on_onednn(digits, precision: str) -> None:
    """The digits CNN (conv, relu, conv, relu, maxpool, gemm) per-layer and fuse-all at
    fp16 / int8 in-process on both SDKs: int8 logits bit-equal per-layer; fuse-all's first
    conv writes the second's int8 codes (one rounding where the mock has two, see
    test_linked_int8_convs_requantise_in_the_producer), as close to the fp32 logits as the
    mock's (measured on 40 images: RMS error 0.1313 vs 0.1315); fp16 logits within a
    binary16 step of the largest; the same top-1 image for image."""
    from paleozoic.ir.plan import Precision
    from paleozoic.optimize import fuse_all, per_layer
    from paleozoic.pipeline import with_precision
    from paleozoic.runner.plan_runner import PlanRunner

    data, queue, quantization = digits
    images = data["test_x"][:40].astype(np.float32)

    def logits_of(plan, sdk):
        runner = PlanRunner(queue, plan, quantization, sdk=sdk)
        return np.stack([next(iter(runner.run([x[None]]).values())) for x in images])

    truth = logits_of(fuse_all(queue), "mock").astype(np.float64)
    for make in (per_layer, fuse_all):
        plan = with_precision(make(queue), Precision(precision))
        logits = {s: logits_of(plan, s) for s in SDKS}
        if precision == "int8" and make is per_layer:  # int8 convs/FCs exact, the rest too
            np.testing.assert_array_equal(logits["onednn"], logits["mock"])
        elif precision == "int8":
            rms = {s: np.sqrt(((logits[s] - truth) ** 2).mean()) for s in SDKS}
            assert not np.array_equal(logits["onednn"], logits["mock"])  # the link ran
            assert rms["onednn"] <= 1.02 * rms["mock"], rms
        else:  # fp32 summation order: measured 2.5 % of the logits one step apart
            diff = np.abs(logits["onednn"] - logits["mock"]).max()
            assert diff <= 2.0**-10 * np.abs(logits["mock"]).max()
        assert np.array_equal(logits["onednn"].argmax(-1), logits["mock"].argmax(-1))


# ---- the kernels oneDNN runs -------------------------------------------------------------

_VERBOSE_SCRIPT = textwrap.dedent("""
    import numpy as np
    from paleozoic.calibration.quant import quantized_param
    from paleozoic.runner.sdk import runtime_module
    rt = runtime_module("onednn")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 32, 28, 28)).astype(np.float32)
    w = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    for precision in ("int8", "fp16"):
        s = rt.Session()
        t = s.input("x", list(x.shape))
        conv = s.conv("conv", t, out_channels=32, kernel=[3, 3], pads=[1, 1, 1, 1])
        conv.config(w, None)
        conv.set_quantization(quantized_param(float(np.abs(x).max())),
                              [quantized_param(float(np.abs(w[c]).max())) for c in range(32)])
        relu = s.active("relu", conv.output, "relu")
        s.mark_output(relu.output)
        s.compile_block("b0", fuse=True, mp=2, layers=[conv, relu], precision=precision)
        s.set_input(t, x)
        print("RUN", precision, flush=True)
        s.run()
""")


def test_int8_and_fp16_run_on_onednn_kernels(tmp_path) -> None:
    """ONEDNN_VERBOSE: the int8 conv + relu executes a VNNI int8 convolution (s8 source and
    weights, relu as a post-op), the fp16 one an fp32 convolution, neither a reference
    kernel nor the mock's (which would print no convolution)."""
    if not VNNI:
        pytest.skip("no VNNI on this CPU: int8 stays on the mock's kernels")
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS="2")
    # Not from the checkout: `python -c` puts the working directory first on sys.path, and
    # the source tree's paleozoic has no built modules unless installed editable.
    out = subprocess.run([sys.executable, "-c", _VERBOSE_SCRIPT], capture_output=True,
                         text=True, env=env, check=True, cwd=tmp_path).stdout
    sections = out.split("RUN ")
    convs = {part.split()[0]: [line for line in part.splitlines()
                               if line.startswith("onednn_verbose,exec,cpu,convolution")]
             for part in sections[1:]}
    assert convs["int8"] and convs["fp16"], out
    int8 = convs["int8"][0]
    # An int8 kernel: VNNI, or AMX where the CPU has it (oneDNN then prefers it).
    assert ("vnni" in int8 or "amx" in int8) and "ref" not in int8.split(",")[4], int8
    assert "src_s8" in int8 and "wei_s8" in int8 and "eltwise_relu" in int8, int8
    fp16 = convs["fp16"][0]
    assert "src_f32" in fp16 and "ref" not in fp16.split(",")[4], fp16


@pytest.mark.parametrize("kind", ["relu", "bn_relu", "add_relu"])
def test_fused_fp16_conv_chain(kind: str, kernels) -> None:
    """fp16 conv + (batchnorm) + (add) + relu: one f32 convolution with post-ops between
    binary16 conversions into and out of its channels-last layout. Alone, each op is the
    mock's up to fp32 summation order; fused, the skipped roundings too."""
    rng = np.random.default_rng(len(kind) + 3)
    x = _stress(rng, (1, 16, 14, 14))
    configured, feeds, _ = _configured_conv_chain(kind, rng, x)
    mock = _session("mock", configured, feeds, "fp16", True)
    fused, ran = kernels(lambda: _session("onednn", configured, feeds, "fp16", True))
    convs = [k for k in ran if k.startswith("convolution")]
    assert len(convs) == 1 and "src_f32:a:blocked:acdb" in convs[0], ran
    # batchnorm, add and relu are post-ops (the one eltwise left is the residual's relu)
    assert not [k for k in ran if k.startswith("binary")], ran
    assert len([k for k in ran if k.startswith("eltwise")]) == (kind == "add_relu"), ran
    assert np.array_equal(fused, fused.astype(F16).astype(F32))
    assert np.abs(fused - mock).max() <= 2.0**-9 * np.abs(mock).max()
    alone = _session("onednn", configured, feeds, "fp16", False)
    assert np.abs(alone - mock).max() <= 2.0**-10 * np.abs(mock).max()
    assert np.mean(alone != mock) < 0.05
