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


# Relative speed of each precision on the fake device: fp16 about 1.7x fp32, int8 about
# 2.5x, each block varying so that no precision wins everywhere by a fixed factor.
PRECISION_SPEED = {"fp32": 1.0, "fp16": 0.6, "int8": 0.4}


def random_precision_table(n: int, mps: Sequence[int], precisions: Sequence[str],
                           seed: int) -> np.ndarray:
    """[n, n+1, len(mps), len(precisions)]: random_table's fp32 costs scaled per precision
    by PRECISION_SPEED times a per-block factor in [0.8, 1.25] (so lower precisions are
    usually, not always, faster); inf where j <= i."""
    rng = np.random.default_rng(seed + 1000)
    fp32 = random_table(n, mps, seed)
    factors = rng.uniform(0.8, 1.25, size=(n, n + 1, 1, len(precisions)))
    speed = np.array([PRECISION_SPEED[str(getattr(p, "value", p))] for p in precisions])
    table = fp32[..., None] * speed * factors
    for p, precision in enumerate(precisions):
        if str(getattr(precision, "value", precision)) == "fp32":
            table[..., p] = fp32
    return table


class PrecisionFake:
    """A precision-aware oracle (new protocol) without a cost table: every block_cost call
    goes through the keyword path."""

    name = "precision-fake"

    def __init__(self, table: np.ndarray, mps: Sequence[int], precisions: Sequence) -> None:
        from paleozoic.ir.plan import Precision

        self.table, self.mps = table, tuple(mps)
        self.precisions = tuple(Precision(p) for p in precisions)
        self.calls = 0

    def block_cost(self, start: int, stop: int, mp: int, precision="fp32") -> float:
        from paleozoic.ir.plan import Precision

        self.calls += 1
        return float(self.table[start, stop, self.mps.index(mp),
                                self.precisions.index(Precision(precision))])

    def cost_table(self, mps: Sequence[int], precisions=None) -> np.ndarray | None:
        return None


def random_sensitivities(names: Sequence[str], seed: int, zero_fp16: Sequence[str] = ()):
    """Sensitivities with int8 typically ~30x noisier than fp16 (log-normal spread), as
    measured noises tend to be; layers in `zero_fp16` lose nothing in fp16."""
    from paleozoic.optimize.sensitivities import Sensitivities

    rng = np.random.default_rng(seed + 2000)
    return Sensitivities({
        name: {"fp16": 0.0 if name in zero_fp16 else float(rng.lognormal(-11.0, 1.5)),
               "int8": float(rng.lognormal(-7.5, 1.5))}
        for name in names})


class NamesQueue:
    """The part of a LayerQueue the accuracy search reads: layer names (and a source)."""

    def __init__(self, n: int) -> None:
        from types import SimpleNamespace

        self.layers = [SimpleNamespace(name=f"layer{i}", kind="Conv") for i in range(n)]
        self.source = "fake"
