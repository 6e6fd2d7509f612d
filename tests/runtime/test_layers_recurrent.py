"""The recurrent layers (pz::LstmLayer, GruLayer, RnnLayer) on both SDKs (the mock: per-step
SDK ops; oneDNN: one recurrent SDK op per direction) against a float64 numpy implementation
of ONNX's LSTM / GRU / RNN (paleozoic_testing.recurrent.reference): every direction and
layout, one step and many, hidden sizes that are not multiples of 8, GRU's
linear_before_reset both ways, LSTM peepholes, initial states given and absent, the Y, Y_h
and Y_c outputs, compiled alone (op by op) and fused, in fp16 blocks; the device model
prices every step; bad inputs are refused naming the layer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paleozoic import _runtime as rt
from paleozoic.runner.sdk import runtime_module, sdk_available
from paleozoic_testing.recurrent import random_weights, reference

DIRECTIONS = ("forward", "reverse", "bidirectional")
SDKS = [pytest.param("mock"), pytest.param("onednn", marks=pytest.mark.skipif(
    not sdk_available("onednn"), reason="the oneDNN SDK is not built"))]


def _run(op: str, *, direction: str = "forward", layout: int = 0, steps: int = 5,
         batch: int = 3, input_size: int = 4, hidden: int = 7, initial: bool = False,
         peepholes: bool = False, linear_before_reset: int = 0, activation: str = "tanh",
         output: str = "y", fuse: bool = False, precision: str = "fp32", seed: int = 0,
         sdk: str = "mock", x_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(ours, float64 truth) for one layer on standard-normal inputs."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    x_shape = (steps, batch, input_size) if layout == 0 else (batch, steps, input_size)
    state = (dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)
    x = (rng.standard_normal(x_shape) * x_scale).astype(np.float32)
    w = random_weights(op, input_size, hidden, dirs, rng, peepholes=peepholes)
    h0 = rng.standard_normal(state).astype(np.float32) if initial else None
    c0 = rng.standard_normal(state).astype(np.float32) if initial and op == "LSTM" else None
    s = runtime_module(sdk).Session()
    feeds = [(s.input("x", list(x_shape)), x)]
    if h0 is not None:
        feeds.append((s.input("h0", list(state)), h0))
    if c0 is not None:
        feeds.append((s.input("c0", list(state)), c0))
    ins = [t for t, _ in feeds]
    common = {"hidden_size": hidden, "direction": direction, "layout": layout,
              "output": output}
    if op == "LSTM":
        layer = s.lstm("l", ins, peepholes=peepholes, **common)
        layer.config(w["W"], w["R"], w["B"], w.get("P"))
    elif op == "GRU":
        layer = s.gru("l", ins, linear_before_reset=bool(linear_before_reset), **common)
        layer.config(w["W"], w["R"], w["B"])
    else:
        layer = s.rnn("l", ins, activation=activation, **common)
        layer.config(w["W"], w["R"], w["B"])
    s.mark_output(layer.output)
    s.compile_block("b", fuse=fuse, mp=2, layers=[layer], precision=precision)
    for tensor, value in feeds:
        s.set_input(tensor, value)
    s.run()
    ours = s.get(layer.output)
    y, y_h, y_c = reference(op, x, w["W"], w["R"], w["B"], h0, c0, w.get("P"),
                            direction=direction, layout=layout,
                            linear_before_reset=linear_before_reset, activation=activation)
    truth = {"y": y, "y_h": y_h, "y_c": y_c}[output]
    assert ours.shape == truth.shape
    return ours, truth


def _error(ours: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(ours - truth).max())


@pytest.mark.parametrize("steps", [1, 23])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("sdk", SDKS)
def test_matches_float64(op: str, direction: str, layout: int, steps: int, sdk: str) -> None:
    # Initial states, peepholes, linear_before_reset and fusion vary with the case so that
    # each is covered in every direction and layout without the full product.
    odd = (steps + layout) % 2 == 1
    ours, truth = _run(op, sdk=sdk, direction=direction, layout=layout, steps=steps, hidden=13,
                       initial=odd, peepholes=op == "LSTM" and not odd,
                       linear_before_reset=int(layout == 1), fuse=not odd)
    # Values are in (-1, 1): a few float32 roundings per step, never accumulating past 1e-6.
    assert _error(ours, truth) < 1e-6


@pytest.mark.parametrize("fuse", [False, True])
@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("initial", [False, True])
@pytest.mark.parametrize("sdk", SDKS)
def test_gru_linear_before_reset(linear_before_reset: int, initial: bool, fuse: bool,
                                 sdk: str) -> None:
    ours, truth = _run("GRU", sdk=sdk, direction="bidirectional", steps=9, hidden=5,
                       initial=initial, linear_before_reset=linear_before_reset, fuse=fuse)
    assert _error(ours, truth) < 1e-6


@pytest.mark.parametrize("initial", [False, True])
@pytest.mark.parametrize("peepholes", [False, True])
@pytest.mark.parametrize("sdk", SDKS)
def test_lstm_peepholes_and_states(peepholes: bool, initial: bool, sdk: str) -> None:
    ours, truth = _run("LSTM", sdk=sdk, direction="reverse", layout=1, steps=11, hidden=6,
                       initial=initial, peepholes=peepholes)
    assert _error(ours, truth) < 1e-6


@pytest.mark.parametrize("output", ["y_h", "y_c"])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("sdk", SDKS)
def test_last_states(output: str, layout: int, sdk: str) -> None:
    ours, truth = _run("LSTM", sdk=sdk, direction="bidirectional", layout=layout, steps=8,
                       hidden=9, initial=True, output=output, fuse=True)
    assert _error(ours, truth) < 1e-6


@pytest.mark.parametrize("activation", ["relu", "sigmoid"])
@pytest.mark.parametrize("sdk", SDKS)
def test_rnn_activations(activation: str, sdk: str) -> None:
    ours, truth = _run("RNN", sdk=sdk, direction="bidirectional", steps=6,
                       activation=activation)
    assert _error(ours, truth) < 1e-6


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("sdk", SDKS)
def test_long_sequences_of_large_inputs(op: str, sdk: str) -> None:
    """300 steps of inputs scaled to about 1e3: a pre-activation near 0 is a sum of 24
    terms of about 1e3, so float32 rounds it by up to 1e3 * sqrt(24) * 2^-24 = 3e-4, and
    the gates (slope <= 1) pass that on; the error against float64 stays at that floor
    (measured: 4e-5 to 8e-5 on both SDKs) instead of accumulating over the steps."""
    ours, truth = _run(op, sdk=sdk, direction="bidirectional", steps=300, hidden=16,
                       input_size=24, initial=True, x_scale=1000.0)
    assert _error(ours, truth) < 3e-4

@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("sdk", SDKS)
def test_fp16_block(op: str, sdk: str) -> None:
    """In an fp16 block the weights and the layer's inputs and output are binary16, and on
    the mock every step's activations too: the error against float64 grows to binary16's
    level (a few 1e-3 over 17 steps), not beyond."""
    ours, truth = _run(op, sdk=sdk, direction="bidirectional", steps=17, hidden=11,
                       initial=True, fuse=True, precision="fp16")
    fp32, _ = _run(op, sdk=sdk, direction="bidirectional", steps=17, hidden=11, initial=True,
                   fuse=True)
    assert 1e-5 < _error(ours, truth) < 1e-2
    assert _error(fp32, truth) < 1e-6


@pytest.mark.parametrize("sdk", SDKS)
def test_one_sdk_op_per_direction_where_the_sdk_has_one(sdk: str) -> None:
    """The oneDNN SDK takes each direction as one recurrent op; the mock, like CNML, has
    none and gets the cells (the same layer, the same emitted code)."""
    mod = runtime_module(sdk)
    s = mod.Session()
    with mod.CallLog(skip_compute=True) as log:
        layer = _lstm(s, 12)
        s.mark_output(layer.output)
        s.compile_block("b", fuse=True, mp=2, layers=[layer], precision="fp32")
        calls = [r["fn"] for r in json.loads(log.take())]
    rnn_ops, cell_ops = calls.count("cnmlCreateRnnOp"), calls.count("cnmlCreateActiveOp")
    assert (rnn_ops, cell_ops == 0) == ((2, True) if sdk == "onednn" else (0, False))
    # On oneDNN, at MP 2, the two directions (one thread each) run side by side.
    kernels = {kernel for _, kernel in s.implementations()}
    side = {k for k in kernels if k.endswith("two ops side by side")}
    assert (sdk == "onednn") == (len(side) == 1 and next(iter(side)).startswith("rnn ")), kernels


def test_int8_block_computes_in_fp16() -> None:
    """No SDK int8 mode: an int8 block runs the layer in fp16."""
    ours, _ = _run("GRU", steps=5, fuse=True, precision="int8")
    half, _ = _run("GRU", steps=5, fuse=True, precision="fp16")
    np.testing.assert_array_equal(ours, half)


def _lstm(s, steps: int, direction: str = "bidirectional"):
    x = s.input("x", [steps, 2, 4])
    layer = s.lstm("l", [x], hidden_size=5, direction=direction, layout=0, output="y")
    rng = np.random.default_rng(0)
    w = random_weights("LSTM", 4, 5, 2 if direction == "bidirectional" else 1, rng)
    layer.config(w["W"], w["R"], w["B"])
    return layer


def test_device_model_prices_every_step() -> None:
    """The device model sees every per-step op: twice the steps, about twice the time."""
    short, long_ = rt.Session(), rt.Session()
    a, b = _lstm(short, 10), _lstm(long_, 20)
    t_short = short.estimate_block([a], 1, False)
    t_long = long_.estimate_block([b], 1, False)
    assert 1.8 < t_long / t_short < 2.2
    # Fused, the steps share one launch: cheaper than op by op.
    assert long_.estimate_block([b], 1, True) < t_long


def test_bad_initial_state_names_the_layer() -> None:
    s = rt.Session()
    x = s.input("x", [5, 2, 4])
    h0 = s.input("h0", [1, 3, 7])
    with pytest.raises(Exception, match=r"l: initial state h0 has shape \[1, 3, 7\], expected"):
        s.gru("l", [x, h0], hidden_size=7, direction="forward", layout=0, output="y")


def test_rnn_has_no_cell_state() -> None:
    s = rt.Session()
    x = s.input("x", [5, 2, 4])
    with pytest.raises(Exception, match="l: only an LSTM has a cell state"):
        s.rnn("l", [x], hidden_size=7, direction="forward", layout=0, output="y_c")


def test_configure_checks_weight_extent() -> None:
    s = rt.Session()
    x = s.input("x", [5, 2, 4])
    layer = s.rnn("l", [x], hidden_size=7, direction="forward", layout=0, output="y")
    with pytest.raises(Exception, match="l: R has 7 values, expected 49"):
        layer.config(np.zeros((1, 7, 4), np.float32), np.zeros(7, np.float32))
