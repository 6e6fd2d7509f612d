"""What the SDK's sparse mode skips: pairs of output channels (2i, 2i+1) whose weights are
both zero at one position (Cambricon Caffe's pruning rule; cnmlSparseMode_t)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def sparse_refusal(layer: Any) -> str | None:
    """Why a queue layer cannot be put in the sparse mode (its kind has none, or its
    attributes rule it out); None when it can."""
    from paleozoic.ops import KINDS

    return KINDS[layer.kind].sparse_refused(layer.op.attrs)


def pair_magnitudes(weight: np.ndarray, axis: int) -> np.ndarray:
    """|w| of each pair of output channels (the larger of the two), [channels / 2, rest];
    an odd last channel is a pair with itself."""
    w = np.abs(np.moveaxis(weight, axis, 0).reshape(weight.shape[axis], -1))
    if w.shape[0] % 2:
        w = np.concatenate([w, np.zeros_like(w[:1])])
    return w.reshape(w.shape[0] // 2, 2, -1).max(axis=1)


@dataclass(frozen=True)
class Sparsity:
    zeros: float  # fraction of weights that are zero
    pairs: float  # fraction of output-channel pairs both zero (what the sparse mode skips)


def sparsity_of(weight: np.ndarray, axis: int) -> Sparsity:
    """As the SDK counts it (the mock's device model): an odd last channel has no pair."""
    w = np.asarray(weight)
    if w.size == 0:
        return Sparsity(0.0, 0.0)
    rows = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    paired = rows[: rows.shape[0] // 2 * 2]
    pairs = (float(np.mean(np.abs(paired).reshape(-1, 2, rows.shape[1]).max(axis=1) == 0))
             if paired.size else 0.0)
    return Sparsity(float(np.mean(w == 0)), pairs)
