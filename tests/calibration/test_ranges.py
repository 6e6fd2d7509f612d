"""The calibration methods on distributions whose right answer is known: absmax is the
largest |x|; percentile keeps the requested share; entropy clips a heavy tail far below its
absmax but keeps a uniform distribution's range."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.calibration import METHODS, TensorStats


def _stats(*batches: np.ndarray) -> TensorStats:
    stats = TensorStats()
    for batch in batches:
        stats.observe(batch)
    stats.start_histogram()
    for batch in batches:
        stats.histogram(batch)
    return stats


def test_absmax_over_batches() -> None:
    stats = _stats(np.array([-3.0, 1.0]), np.array([2.5, -0.5]))
    assert (stats.minimum, stats.maximum, stats.absmax) == (-3.0, 2.5, 3.0)
    assert METHODS["absmax"](stats) == 3.0


def test_percentile_keeps_the_share_asked_for() -> None:
    x = np.random.default_rng(1).standard_normal(400_000)
    stats = _stats(x)
    threshold = METHODS["percentile"](stats, percentile=99.0)
    kept = np.mean(np.abs(x) <= threshold)
    assert 0.99 <= kept <= 0.99 + 2 / 2048 * 10  # within a few bins of 99 %
    assert METHODS["percentile"](stats, percentile=100.0) == pytest.approx(stats.absmax)


def test_entropy_clips_heavy_tails_not_uniform_ranges() -> None:
    rng = np.random.default_rng(2)
    heavy = _stats(rng.standard_t(2, 200_000))
    assert METHODS["entropy"](heavy) < heavy.absmax / 5
    uniform = _stats(rng.uniform(-1.0, 1.0, 200_000))
    assert METHODS["entropy"](uniform) == pytest.approx(uniform.absmax, rel=0.01)
    normal = _stats(rng.standard_normal(200_000))
    assert 2.5 < METHODS["entropy"](normal) <= normal.absmax


def test_all_zero_tensor() -> None:
    stats = _stats(np.zeros(100))
    for method in METHODS.values():
        assert method(stats) == 0.0


def test_infinities_and_nan_are_no_range() -> None:
    """An additive attention mask holds -inf and a guarded softmax may hold NaN: the range
    is that of the finite values (before, absmax was inf and calibration failed)."""
    from paleozoic.calibration.ranges import TensorStats, absmax_threshold, percentile_threshold

    stats = TensorStats()
    stats.observe(np.array([0.0, -np.inf, 2.5, np.nan, -1.0], np.float32))
    stats.observe(np.array([np.inf], np.float32))
    assert (stats.minimum, stats.maximum, stats.count) == (-1.0, 2.5, 3)
    assert absmax_threshold(stats) == 2.5
    stats.start_histogram()
    stats.histogram(np.array([0.5, -np.inf, np.nan, 2.5], np.float32))
    assert stats.hist.sum() == 2 and 0 < percentile_threshold(stats, percentile=50) <= 2.5
