"""SQNR and cosine similarity pooled over batches: sums over every element of every batch,
one ratio at the end (the same as measuring the batches concatenated), so a batch with
tiny values cannot dominate as it would in an average of per-batch dB."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Pooled:
    signal: float = 0.0   # sum of x^2, x the reference
    noise: float = 0.0    # sum of (x - x_hat)^2
    dot: float = 0.0      # sum of x * x_hat
    ours: float = 0.0     # sum of x_hat^2
    finite: bool = True
    batches: int = 0

    def add(self, reference: np.ndarray, ours: np.ndarray) -> None:
        x = np.asarray(reference, dtype=np.float64).ravel()
        y = np.asarray(ours, dtype=np.float64).ravel()
        if x.size != y.size:
            raise ValueError(f"sizes differ: reference {x.size}, ours {y.size}")
        self.batches += 1
        if not np.all(np.isfinite(y)):
            self.finite = False
            return
        self.signal += float(np.dot(x, x))
        self.noise += float(np.dot(x - y, x - y))
        self.dot += float(np.dot(x, y))
        self.ours += float(np.dot(y, y))

    @property
    def sqnr_db(self) -> float:
        """20 log10(||x|| / ||x - x_hat||); inf when equal, -inf when not finite."""
        if not self.finite:
            return -math.inf
        if self.noise == 0.0:
            return math.inf
        return 10.0 * math.log10(max(self.signal, 1e-300) / self.noise)

    @property
    def cosine(self) -> float:
        if not self.finite:
            return math.nan
        if self.signal == 0.0 or self.ours == 0.0:  # all-zero agrees only with all-zero
            return 1.0 if self.signal == self.ours == 0.0 else 0.0
        return self.dot / math.sqrt(self.signal * self.ours)
