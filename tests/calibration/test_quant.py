"""Cambricon's quantisation arithmetic (real = q * 2^position / scale) against its
definition in float64: absmax maps to 127, the round trip error is at most half a step,
position clamps to [-32, 32], bad ranges are refused."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.calibration import dequantize, quantize, quantized_param


@pytest.mark.parametrize("absmax", [1e-6, 0.01, 0.5, 1.0, 6.0, 127.0, 3.3e3, 1e7])
def test_absmax_maps_to_127_and_round_trips(absmax: float) -> None:
    position, scale = quantized_param(absmax)
    assert -32 <= position <= 32 and scale > 0
    assert quantize(np.array([absmax]), position, scale)[0] == 127
    x = np.random.default_rng(0).uniform(-absmax, absmax, 10_000)
    step = 2.0 ** position / scale
    error = np.abs(dequantize(quantize(x, position, scale), position, scale) - x)
    assert error.max() <= step / 2 * (1 + 1e-12)


def test_cambricon_position_rule() -> None:
    # position = int(log2(absmax / 127)) plus 1 when positive (Cambricon Caffe)
    assert quantized_param(127.0)[0] == 0
    assert quantized_param(254.0)[0] == 2          # log2(2) = 1 -> int(2.0) = 2
    assert quantized_param(1.0)[0] == -6           # log2(1/127) = -6.99 -> -6
    assert quantized_param(1e-30)[0] == -32        # clamped
    assert quantized_param(0.0) == quantized_param(1.0)


def test_saturation_and_bad_ranges() -> None:
    position, scale = quantized_param(1.0)
    assert list(quantize(np.array([-5.0, 5.0]), position, scale)) == [-127, 127]
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="finite and >= 0"):
            quantized_param(bad)
