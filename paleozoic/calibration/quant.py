"""Cambricon's quantisation arithmetic: real = q * 2^position / scale, q in [-127, 127].

The position and scale for a range follow Cambricon Caffe's get_quantized_info: position is
log2(absmax / 127), one more when positive, truncated and clamped to [-32, 32]; scale then
maps absmax onto 127 exactly (scale = 127 * 2^position / absmax)."""

from __future__ import annotations

import math

import numpy as np

QMAX = 127
POSITION_RANGE = (-32, 32)


def quantized_param(absmax: float) -> tuple[int, float]:
    """(position, scale) for values in [-absmax, absmax]; a zero range quantises as 1.0."""
    absmax = float(absmax)
    if not math.isfinite(absmax) or absmax < 0:
        raise ValueError(f"a quantisation range must be finite and >= 0, got {absmax}")
    if absmax == 0.0:
        absmax = 1.0
    log = math.log2(absmax / QMAX)
    position = int(log + 1) if log > 0 else int(log)  # int() truncates toward zero
    position = max(POSITION_RANGE[0], min(POSITION_RANGE[1], position))
    scale = QMAX * 2.0 ** position / absmax
    return position, scale


def quantize(x: np.ndarray, position: int, scale: float) -> np.ndarray:
    """int8 codes of `x` (round half to even, saturating at +-127)."""
    q = np.rint(np.asarray(x, dtype=np.float64) * scale / 2.0 ** position)
    return np.clip(q, -QMAX, QMAX).astype(np.int8)


def dequantize(q: np.ndarray, position: int, scale: float) -> np.ndarray:
    return q.astype(np.float64) * 2.0 ** position / scale
