"""Streaming statistics of one tensor and the calibration methods that turn them into a
clipping threshold: absmax (Cambricon's own), percentile, and entropy (TensorRT's and ncnn's
KL-divergence search over a 2048-bin histogram of |x|)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BINS = 2048
QUANT_LEVELS = 128  # |q| in 0..127


@dataclass
class TensorStats:
    """min, max and absmax over every batch seen; a histogram of |x| over [0, hist_max] once
    the range is known (the second pass of percentile and entropy)."""

    minimum: float = float("inf")
    maximum: float = float("-inf")
    count: int = 0
    hist: np.ndarray | None = None
    hist_max: float = 0.0
    channels: list[float] = field(default_factory=list)

    @property
    def absmax(self) -> float:
        return max(abs(self.minimum), abs(self.maximum)) if self.count else 0.0

    def observe(self, x: np.ndarray) -> None:
        # Infinities and NaN (an additive attention mask's -inf, a guarded softmax) are no
        # range: int8 clamps them to +-127 whatever the range is.
        x = _finite(x)
        if x.size == 0:
            return
        self.minimum = min(self.minimum, float(x.min()))
        self.maximum = max(self.maximum, float(x.max()))
        self.count += x.size

    def start_histogram(self) -> None:
        self.hist_max = self.absmax
        self.hist = np.zeros(BINS, dtype=np.int64)

    def histogram(self, x: np.ndarray) -> None:
        assert self.hist is not None
        if self.hist_max == 0.0:
            self.hist[0] += x.size
            return
        counts, _ = np.histogram(np.abs(_finite(x)), bins=BINS, range=(0.0, self.hist_max))
        self.hist += counts


def _finite(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.floating) and not np.isfinite(x).all():
        return x[np.isfinite(x)]
    return x


def absmax_threshold(stats: TensorStats, **_: float) -> float:
    return stats.absmax


def percentile_threshold(stats: TensorStats, percentile: float = 99.99, **_: float) -> float:
    """The |x| below which `percentile` percent of the values fall (bin upper edge)."""
    if stats.hist is None or stats.hist_max == 0.0:
        return stats.absmax
    cumulative = np.cumsum(stats.hist) / stats.hist.sum()
    index = int(np.searchsorted(cumulative, percentile / 100.0))
    return min(stats.hist_max, (index + 1) * stats.hist_max / BINS)


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    mask = p > 0
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def entropy_threshold(stats: TensorStats, **_: float) -> float:
    """TensorRT's entropy calibration: for each candidate threshold i (128..2048 bins), the
    reference distribution is the histogram clipped at i (outliers added to the last bin),
    the candidate is that histogram merged into 128 levels and expanded back over the
    non-empty bins; the threshold with the least KL divergence wins."""
    if stats.hist is None or stats.hist_max == 0.0 or stats.hist.sum() == 0:
        return stats.absmax
    hist = stats.hist.astype(np.float64)
    best, best_i = float("inf"), BINS
    for i in range(QUANT_LEVELS, BINS + 1):
        reference = hist[:i].copy()
        reference[-1] += hist[i:].sum()
        nonzero = hist[:i] != 0
        starts = (np.arange(QUANT_LEVELS) * i) // QUANT_LEVELS
        sums = np.add.reduceat(hist[:i], starts)
        used = np.add.reduceat(nonzero.astype(np.float64), starts)
        level = np.divide(sums, used, out=np.zeros_like(sums), where=used > 0)
        expanded = np.where(nonzero, np.repeat(level, np.diff(np.append(starts, i))), 0.0)
        if expanded.sum() == 0:
            continue
        p = reference / reference.sum()
        q = expanded / expanded.sum()
        # A bin the candidate leaves empty where the reference is not: smooth it.
        q = np.where((q == 0) & (p > 0), 1e-12, q)
        divergence = _kl(p, q)
        if divergence < best:
            best, best_i = divergence, i
    return min(stats.absmax, (best_i + 0.5) * stats.hist_max / BINS)


METHODS = {"absmax": absmax_threshold, "percentile": percentile_threshold,
           "entropy": entropy_threshold}
