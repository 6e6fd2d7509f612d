"""The precision knob in the wrapper: a block's precision sets its layers' dtypes and
weights, casts are inserted where a layer reads a tensor stored in the other dtype (and
cost device time), int8 layers quantise as Cambricon's arithmetic says, and errors name the
layer. The mock's own arithmetic is checked op by op in test_precision_fp16/int8.py."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.calibration.quant import quantize, quantized_param

rt = pytest.importorskip("paleozoic._runtime")

F16 = np.float16


def f16(x: np.ndarray) -> np.ndarray:
    """Rounded to binary16 (nearest even) and back, as fp16 storage keeps it."""
    return np.asarray(x, dtype=np.float32).astype(F16).astype(np.float32)


def _conv_session(x, w, b, precision: str, fuse: bool = False, relu: bool = False,
                  layer_precision: dict[str, str] | None = None, quant=None):
    s = rt.Session()
    t = s.input("x", list(x.shape))
    conv = s.conv("conv", t, out_channels=w.shape[0], kernel=list(w.shape[2:]), pads=[1, 1, 1, 1])
    conv.config(w, b)
    if quant is not None:
        conv.set_quantization(*quant)
    layers = [conv]
    if relu:
        layers.append(s.active("relu", conv.output, "relu"))
    s.mark_output(layers[-1].output)
    block = s.compile_block("b0", fuse=fuse, mp=4, layers=layers, precision=precision,
                            layer_precision=layer_precision or {})
    s.set_input(t, x)
    s.run()
    return np.asarray(s.get(layers[-1].output)), block


@pytest.fixture
def conv_data():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((1, 8, 10, 10)) * 3).astype(np.float32)
    w = rng.standard_normal((6, 8, 3, 3)).astype(np.float32) * 0.2
    b = rng.standard_normal(6).astype(np.float32)
    return x, w, b


def test_fp16_block_is_the_fp32_op_on_rounded_operands_rounded_once(conv_data) -> None:
    x, w, b = conv_data
    got, block = _conv_session(x, w, b, "fp16")
    assert block.precision == "fp16"
    # Same kernel in fp32 on what fp16 storage holds, rounded once to fp16.
    want, _ = _conv_session(f16(x), f16(w), f16(b), "fp32")
    np.testing.assert_array_equal(got, f16(want))
    exact, _ = _conv_session(x, w, b, "fp32")
    assert not np.array_equal(got, exact)  # fp16 really happened
    assert np.max(np.abs(got - exact)) / np.max(np.abs(exact)) < 2e-3


def test_int8_conv_follows_cambricons_arithmetic(conv_data) -> None:
    x, w, b = conv_data
    px, sx = quantized_param(float(np.abs(f16(x)).max()))
    channels = [quantized_param(float(np.abs(w[c]).max())) for c in range(w.shape[0])]
    got, _ = _conv_session(x, w, b, "int8", quant=((px, sx), channels))
    # int8 codes, exact integer accumulation, one rescale in fp32, fp16 bias, fp16 output.
    qx = quantize(f16(x), px, sx).astype(np.int64)
    qw = np.stack([quantize(w[c], *channels[c]) for c in range(w.shape[0])]).astype(np.int64)
    padded = np.pad(qx, ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((1, 6, 10, 10), dtype=np.int64)
    for i in range(3):
        for j in range(3):
            acc += np.einsum("nchw,oc->nohw", padded[:, :, i:i + 10, j:j + 10], qw[:, :, i, j])
    factor = np.array([np.float32(2.0 ** (px + p) / (sx * s)) for p, s in channels])
    want = (acc.astype(np.float32) * factor[None, :, None, None].astype(np.float32)
            + f16(b)[None, :, None, None])
    np.testing.assert_array_equal(got, f16(want.astype(np.float32)))
    exact, _ = _conv_session(x, w, b, "fp32")
    assert np.max(np.abs(got - exact)) / np.max(np.abs(exact)) < 3e-2


def test_int8_without_parameters_names_the_layer_and_the_fix(conv_data) -> None:
    x, w, b = conv_data
    with pytest.raises(rt.Error, match=r"conv: computes in int8 but has no quantisation "
                                       r"parameters.*--calibration"):
        _conv_session(x, w, b, "int8")


def test_layers_without_an_int8_mode_run_int8_blocks_in_fp16(conv_data) -> None:
    x, w, b = conv_data
    q = (quantized_param(float(np.abs(x).max())),
         [quantized_param(float(np.abs(w[c]).max())) for c in range(6)])
    got, _ = _conv_session(x, w, b, "int8", relu=True, quant=q, fuse=True)
    conv_only, _ = _conv_session(x, w, b, "int8", quant=q)
    np.testing.assert_array_equal(got, np.maximum(conv_only, 0))


def test_per_layer_override_inside_a_fused_block_casts_inside_it(conv_data) -> None:
    x, w, b = conv_data
    fused, _ = _conv_session(x, w, b, "fp16", relu=True, fuse=True,
                             layer_precision={"relu": "fp32"})
    alone, _ = _conv_session(x, w, b, "fp16", relu=True, fuse=False,
                             layer_precision={"relu": "fp32"})
    np.testing.assert_array_equal(fused, alone)
    fp16_conv, _ = _conv_session(x, w, b, "fp16")
    np.testing.assert_array_equal(fused, np.maximum(fp16_conv, 0))


def test_casts_at_precision_boundaries_cost_device_time() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 16, 32, 32)).astype(np.float32)

    def second_block_us(first: str, second: str) -> float:
        s = rt.Session()
        t = s.input("x", list(x.shape))
        a = s.active("a", t, "relu")
        c = s.active("c", a.output, "tanh")
        s.mark_output(c.output)
        s.compile_block("first", False, 1, [a], precision=first)
        s.compile_block("second", False, 1, [c], precision=second)
        s.set_input(t, x)
        s.run()
        return float(s.block_micros()[1])

    same = second_block_us("fp16", "fp16")
    crossing = second_block_us("fp32", "fp16")
    assert crossing > same  # the fp32 -> fp16 cast runs, and is timed, in the second block
    back = second_block_us("fp16", "fp32")
    assert back > second_block_us("fp32", "fp32")


def test_precision_cannot_change_after_compile(conv_data) -> None:
    x, w, b = conv_data
    s = rt.Session()
    t = s.input("x", list(x.shape))
    conv = s.conv("conv", t, out_channels=6, kernel=[3, 3], pads=[1, 1, 1, 1])
    conv.config(w, b)
    s.compile_block("b0", False, 1, [conv], precision="fp16")
    with pytest.raises(rt.Error, match="conv: its precision cannot change after it was "
                                       "compiled"):
        conv.set_precision("fp32")
    with pytest.raises(rt.Error, match="unknown precision 'bf16'"):
        s.compile_block("b1", False, 1, [conv], precision="bf16")


@pytest.mark.parametrize("input_q,filter_q,call", [
    ((0, -1.0), (0, 1.0), "cnmlCreateQuantizedParam"),      # input scale <= 0
    ((40, 1.0), (0, 1.0), "cnmlCreateQuantizedParam"),      # input position outside -32..32
    ((0, 1.0), (0, 0.0), "cnrtCreateQuantizedParam"),       # filter scale 0
])
def test_bad_quantisation_parameters_are_sdk_errors_naming_the_layer(conv_data, input_q,
                                                                     filter_q, call) -> None:
    x, w, b = conv_data
    with pytest.raises(rt.SdkError, match=rf"conv: {call} failed with") as info:
        _conv_session(x, w, b, "int8", quant=(input_q, [filter_q] * 6))
    assert info.value.layer == "conv"
