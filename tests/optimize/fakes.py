"""Pure-Python cost oracles for tests (no device model needed)."""

from __future__ import annotations

from pathlib import Path

from typing import Sequence

import numpy as np



def random_table(n: int, mps: Sequence[int], seed: int) -> np.ndarray:
    """A random separable cost table: positive where j > i, inf elsewhere. Fusing tends to
    pay (a block costs about 0.8x its layers alone) so optimal plans mix block lengths."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(1.0, 10.0, size=(n, len(mps)))
    table = np.full((n, n + 1, len(mps)), np.inf)
    for i in range(n):
        for j in range(i + 1, n + 1):
            table[i, j] = base[i:j].sum(axis=0) * rng.uniform(0.6, 1.1) + rng.uniform(0, 3)
    return table


class TableFake:
    """Random separable oracle without a cost table (exercises the block_cost path)."""

    name = "table-fake"

    def __init__(self, table: np.ndarray, mps: Sequence[int]) -> None:
        self.table, self.mps = table, tuple(mps)
        self.calls = 0

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        self.calls += 1
        return float(self.table[start, stop, self.mps.index(mp)])

    def cost_table(self, mps: Sequence[int]) -> np.ndarray | None:
        return None


REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "optimizers"
