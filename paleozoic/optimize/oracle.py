"""Cost oracles: what a block of the queue costs, in device microseconds.

An oracle answers `block_cost(start, stop, mp)`: the time of queue.layers[start:stop]
compiled as one block on `mp` cores (fused when it has more than one layer). It may also
answer the whole table at once (`cost_table`), which lets optimizers look costs up in O(1).
Two kinds ship with Paleozoic: the analytic device model
(`paleozoic.optimize.device_cost.DeviceModelOracle`) and measurement
(`paleozoic.optimize.measured.MeasuredOracle`). Any optimizer can take either.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from paleozoic.ir import LayerQueue, Plan


@runtime_checkable
class CostOracle(Protocol):
    name: str

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        """µs of queue.layers[start:stop] as one block on `mp` cores."""
        ...

    def cost_table(self, mps: Sequence[int]) -> np.ndarray | None:
        """[n, n+1, len(mps)] with [i, j, k] = block_cost(i, j, mps[k]), inf where j <= i;
        None when the oracle cannot produce it cheaply."""
        ...


Span = tuple[int, int, int]  # (start, stop, mp): queue.layers[start:stop] on mp cores


def plan_spans(plan: Plan, queue: LayerQueue) -> list[tuple[int, int, int, bool]]:
    """(start, stop, mp, fuse) of each block of a plan already validated against `queue`."""
    position = {layer.name: i for i, layer in enumerate(queue.layers)}
    spans = []
    for block in plan.blocks:
        start = position[block.layers[0]]
        spans.append((start, start + len(block.layers), block.mp, block.fuse))
    return spans


def block_costs(plan: Plan, queue: LayerQueue, cost: CostOracle) -> list[float]:
    """Cost of each block; an unfused multi-layer block costs the sum of its layers."""
    out = []
    for start, stop, mp, fuse in plan_spans(plan, queue):
        if fuse or stop - start == 1:
            out.append(float(cost.block_cost(start, stop, mp)))
        else:
            out.append(sum(float(cost.block_cost(i, i + 1, mp)) for i in range(start, stop)))
    return out


def plan_cost(plan: Plan, queue: LayerQueue, cost: CostOracle) -> float:
    """The plan's cost: the sum of its block costs."""
    return float(sum(block_costs(plan, queue, cost)))


class TableOracle:
    """An oracle backed by an explicit [n, n+1, len(mps)] table (tests, caches, benchmarks).

    `TableOracle.snapshot(oracle, n, mps)` freezes any oracle into a table.
    """

    def __init__(self, table: np.ndarray, mps: Sequence[int], name: str = "table") -> None:
        table = np.asarray(table, dtype=np.float64)
        n = table.shape[0]
        if table.shape != (n, n + 1, len(mps)):
            raise ValueError(f"table shape {table.shape} is not ({n}, {n + 1}, {len(mps)})")
        self.name = name
        self.mps = tuple(mps)
        self._column = {mp: k for k, mp in enumerate(self.mps)}
        self._table = table

    @classmethod
    def snapshot(cls, oracle: CostOracle, n: int, mps: Sequence[int]) -> TableOracle:
        table = oracle.cost_table(mps)
        if table is None:
            table = np.full((n, n + 1, len(mps)), np.inf)
            for i in range(n):
                for j in range(i + 1, n + 1):
                    for k, mp in enumerate(mps):
                        table[i, j, k] = oracle.block_cost(i, j, mp)
        return cls(table, mps, name=oracle.name)

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        if mp not in self._column:
            raise KeyError(f"{self.name}: no costs for mp {mp} (table has {self.mps})")
        return float(self._table[start, stop, self._column[mp]])

    def cost_table(self, mps: Sequence[int]) -> np.ndarray | None:
        try:
            columns = [self._column[mp] for mp in mps]
        except KeyError:
            return None
        return self._table[:, :, columns].copy()
