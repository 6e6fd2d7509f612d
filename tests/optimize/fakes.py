"""Pure-Python cost oracles for tests (no device model needed)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from paleozoic.ir import LayerQueue
from paleozoic.ops import KINDS
from paleozoic.ops.kind import elements


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


class AnalyticFake:
    """A separable toy device model: launch + per-core sync + compute / (mp * efficiency)
    + DRAM traffic at the block boundary, spills when intermediates outgrow on-chip memory,
    and redundant work for fused spatial layers that grows with the block."""

    name = "analytic-fake"

    def __init__(self, queue: LayerQueue) -> None:
        self.n = len(queue.layers)
        macs, outs, ins, spatial = [], [], [], []
        for layer in queue.layers:
            kind = KINDS[layer.kind]
            in_shapes = [queue.shape(x) for x in layer.inputs]
            out_shape = queue.shape(layer.output)
            macs.append(float(kind.macs(layer.op.attrs, in_shapes, out_shape)))
            outs.append(4.0 * elements(out_shape))
            ins.append(4.0 * sum(elements(s) for s in in_shapes))
            spatial.append(bool(kind.spatial))
        self.macs, self.outs, self.ins = np.array(macs), np.array(outs), np.array(ins)
        self.spatial = np.array(spatial)

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        if stop <= start:
            return float("inf")
        work = self.macs[start:stop].sum()
        redundant = 0.04 * max(int(self.spatial[start:stop].sum()) - 1, 0) * np.sqrt(mp)
        compute = work * (1.0 + redundant) / (mp * 2.0e3 / (1.0 + 0.015 * mp))
        inner = self.outs[start:stop - 1].sum()
        spill = max(0.0, inner - mp * 256e3) * 2.0
        traffic = (self.ins[start] + self.outs[stop - 1] + spill) / 1.0e5
        return float(20.0 + 0.5 * mp + compute + traffic)

    def cost_table(self, mps: Sequence[int]) -> np.ndarray | None:
        table = np.full((self.n, self.n + 1, len(mps)), np.inf)
        for i in range(self.n):
            for j in range(i + 1, self.n + 1):
                for k, mp in enumerate(mps):
                    table[i, j, k] = self.block_cost(i, j, mp)
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
