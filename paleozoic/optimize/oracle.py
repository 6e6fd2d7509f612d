"""Cost oracles: what a block of the queue costs, in device microseconds.

An oracle answers `block_cost(start, stop, mp)`: the time of queue.layers[start:stop]
compiled as one block on `mp` cores (fused when it has more than one layer). It may also
answer the whole table at once (`cost_table`), which lets optimizers look costs up in O(1).
Two kinds ship with Paleozoic: the analytic device model
(`paleozoic.optimize.device_cost.DeviceModelOracle`) and measurement
(`paleozoic.optimize.measured.MeasuredOracle`). Any optimizer can take either.

Precision (issue 12) is an optional extension of the same protocol. An oracle that prices
blocks in other precisions than fp32 says so with a `precisions` attribute and takes them
as keyword arguments:

    precisions: tuple[Precision, ...]                     # what it can price
    block_cost(start, stop, mp, precision=Precision.FP32) -> float
    cost_table(mps, precisions=None)                      # None: the fp32 [n, n+1, M] table
                                                          # else [n, n+1, M, len(precisions)]

Without `precisions` an oracle prices fp32 only and is called exactly as before (never
with the new keywords), so oracles written against the old protocol keep working. Code
that searches precisions goes through `price` and `precision_table`, which make that
distinction in one place.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import Precision

FP32 = Precision.FP32


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


@runtime_checkable
class PrecisionCostOracle(Protocol):
    """A CostOracle that also prices fp16 and int8 blocks (see the module docstring)."""

    name: str
    precisions: tuple[Precision, ...]

    def block_cost(self, start: int, stop: int, mp: int,
                   precision: Precision = FP32) -> float:
        """µs of queue.layers[start:stop] as one block on `mp` cores in `precision`."""
        ...

    def cost_table(self, mps: Sequence[int],
                   precisions: Sequence[Precision] | None = None) -> np.ndarray | None:
        """Without precisions: the fp32 [n, n+1, len(mps)] table, as CostOracle. With them:
        [n, n+1, len(mps), len(precisions)]. None when not cheap."""
        ...


@runtime_checkable
class StageCostOracle(Protocol):
    """An oracle that also prices blocks running at once (a plan's stages): a block pinned
    to `cores` cores while the stage's other blocks run on the rest. Its layers need not be
    a contiguous run (a branch of an interleaved module)."""

    name: str

    def pinned_block_cost(self, layers: Sequence[int], mp: int,
                          precision: Precision = FP32, cores: int = 32) -> float:
        """µs of queue.layers[i] for i in `layers` as one block on `mp` cores, pinned."""
        ...


Span = tuple[int, int, int] | tuple[int, int, int, Precision]
"""(start, stop, mp[, precision]): queue.layers[start:stop] on mp cores; no precision means
fp32. Searches write fp32 spans in the short form, so code written before precisions
existed (which unpacks three values) keeps working on fp32 spaces."""


def span_parts(span: Sequence) -> tuple[int, int, int, Precision]:
    """(start, stop, mp, precision) of a span in either form."""
    if len(span) == 3:
        start, stop, mp = span
        return int(start), int(stop), int(mp), FP32
    start, stop, mp, precision = span
    return int(start), int(stop), int(mp), Precision(precision)


def make_span(start: int, stop: int, mp: int, precision: Precision = FP32) -> Span:
    """The span in its canonical form: three values for fp32, four otherwise."""
    if precision == FP32:
        return (int(start), int(stop), int(mp))
    return (int(start), int(stop), int(mp), Precision(precision))


def oracle_precisions(cost: object) -> tuple[Precision, ...]:
    """The precisions an oracle can price: its `precisions` attribute, else fp32 only."""
    declared = getattr(cost, "precisions", None)
    if declared is None:
        return (FP32,)
    return tuple(Precision(p) for p in declared)


def check_prices(cost: object, precisions: Sequence[Precision]) -> None:
    """ValueError naming the oracle unless it can price every one of `precisions`."""
    known = oracle_precisions(cost)
    missing = [p.value for p in precisions if p not in known]
    if missing:
        raise ValueError(
            f"cost oracle {getattr(cost, 'name', type(cost).__name__)!r} prices "
            f"{', '.join(p.value for p in known)} only, not {', '.join(missing)}; search "
            f"those precisions with an oracle that declares them (`precisions`)")


def price(cost: object, start: int, stop: int, mp: int,
          precision: Precision = FP32) -> float:
    """block_cost in `precision`, calling an fp32-only oracle the old way (no keyword)."""
    if precision == FP32 and getattr(cost, "precisions", None) is None:
        return float(cost.block_cost(start, stop, mp))  # type: ignore[attr-defined]
    check_prices(cost, (precision,))
    return float(cost.block_cost(start, stop, mp, precision=precision))  # type: ignore


def precision_table(cost: object, mps: Sequence[int],
                    precisions: Sequence[Precision]) -> np.ndarray | None:
    """[n, n+1, len(mps), len(precisions)] costs, or None when the oracle has no table.
    Asks an oracle for the old fp32 table when that is all that is wanted."""
    precisions = tuple(Precision(p) for p in precisions)
    check_prices(cost, precisions)
    if precisions == (FP32,):
        table = cost.cost_table(mps)  # type: ignore[attr-defined]
        return None if table is None else np.asarray(table, dtype=np.float64)[..., None]
    table = cost.cost_table(mps, precisions=precisions)  # type: ignore[attr-defined]
    return None if table is None else np.asarray(table, dtype=np.float64)


def plan_spans(plan: Plan, queue: LayerQueue) -> list[tuple[int, int, int, bool]]:
    """(start, stop, mp, fuse) of each block of a plan already validated against `queue`."""
    position = {layer.name: i for i, layer in enumerate(queue.layers)}
    spans = []
    for block in plan.blocks:
        start = position[block.layers[0]]
        spans.append((start, start + len(block.layers), block.mp, block.fuse))
    return spans


def staged_cores(plan: Plan) -> dict[str, int]:
    """Block name -> the cores a block of a stage is pinned to (data parallelism x MP)."""
    mp = {block.name: block.mp for block in plan.blocks}
    return {name: mp[name] * plan.data_parallelism for stage in plan.stages for name in stage}


def price_pinned(cost: object, layers: Sequence[int], mp: int, precision: Precision,
                 cores: int) -> float:
    """A block's cost pinned to `cores` cores while other blocks of its stage run on the
    rest (the oracle's pinned_block_cost); ValueError naming an oracle without one."""
    pinned = getattr(cost, "pinned_block_cost", None)
    if pinned is None:
        raise ValueError(f"cost oracle {getattr(cost, 'name', type(cost).__name__)!r} cannot "
                         f"price blocks that run at once (a plan's stages): it has no "
                         f"pinned_block_cost")
    return float(pinned(layers, mp, precision=precision, cores=cores))


def stage_total(plan: Plan, costs: Sequence[float]) -> float:
    """The plan's time from its block costs: blocks one after another, each stage once, as
    long as its longest block."""
    index = {block.name: i for i, block in enumerate(plan.blocks)}
    staged = {index[name] for stage in plan.stages for name in stage}
    total = sum(c for i, c in enumerate(costs) if i not in staged)
    return float(total + sum(max(costs[index[name]] for name in stage) for stage in plan.stages))


def block_costs(plan: Plan, queue: LayerQueue, cost: CostOracle) -> list[float]:
    """Cost of each block in its precision; an unfused multi-layer block costs the sum of its
    layers, each in its own precision (per-layer overrides included). A block of a stage is
    priced pinned to its cores (price_pinned)."""
    out = []
    pinned = staged_cores(plan)
    position = {layer.name: i for i, layer in enumerate(queue.layers)}
    for block, (start, stop, mp, fuse) in zip(plan.blocks, plan_spans(plan, queue)):
        if block.name in pinned:
            cores, indices = pinned[block.name], [position[name] for name in block.layers]
            if fuse or len(indices) == 1:
                out.append(price_pinned(cost, indices, mp, block.precision, cores))
            else:
                out.append(sum(price_pinned(cost, [i], mp, block.precision_of(name), cores)
                               for i, name in zip(indices, block.layers)))
        elif fuse or stop - start == 1:
            if fuse and block.layer_precision:
                # The protocol prices uniform blocks; a fused block mixing precisions needs
                # an oracle that knows how the SDK converts inside a fusion op.
                raise ValueError(f"block {block.name!r}: cost oracles price a fused block "
                                 f"in one precision; this block overrides "
                                 f"{sorted(block.layer_precision)}")
            out.append(price(cost, start, stop, mp, block.precision))
        else:
            out.append(sum(price(cost, i, i + 1, mp, block.precision_of(layer.name))
                           for i, layer in zip(range(start, stop), queue.layers[start:stop])))
    return out


def plan_cost(plan: Plan, queue: LayerQueue, cost: CostOracle) -> float:
    """The plan's cost: the sum of its block costs, a stage counting as its longest block."""
    return stage_total(plan, block_costs(plan, queue, cost))


class TableOracle:
    """An oracle backed by an explicit table (tests, caches, benchmarks): [n, n+1, len(mps)]
    fp32 costs, or [n, n+1, len(mps), len(precisions)] when `precisions` is given.

    `TableOracle.snapshot(oracle, n, mps[, precisions])` freezes any oracle into a table.
    """

    def __init__(self, table: np.ndarray, mps: Sequence[int], name: str = "table",
                 precisions: Sequence[Precision] | None = None) -> None:
        table = np.asarray(table, dtype=np.float64)
        n = table.shape[0]
        if precisions is None:
            if table.shape != (n, n + 1, len(mps)):
                raise ValueError(f"table shape {table.shape} is not ({n}, {n + 1}, {len(mps)})")
            table = table[..., None]
            precisions = (FP32,)
        elif table.shape != (n, n + 1, len(mps), len(precisions)):
            raise ValueError(f"table shape {table.shape} is not "
                             f"({n}, {n + 1}, {len(mps)}, {len(precisions)})")
        self.name = name
        self.mps = tuple(mps)
        self.precisions = tuple(Precision(p) for p in precisions)
        self._column = {mp: k for k, mp in enumerate(self.mps)}
        self._layer = {p: q for q, p in enumerate(self.precisions)}
        self._table = table

    @classmethod
    def snapshot(cls, oracle: CostOracle, n: int, mps: Sequence[int],
                 precisions: Sequence[Precision] | None = None) -> TableOracle:
        wanted = tuple(precisions) if precisions is not None else (FP32,)
        table = precision_table(oracle, mps, wanted)
        if table is None:
            table = np.full((n, n + 1, len(mps), len(wanted)), np.inf)
            for i in range(n):
                for j in range(i + 1, n + 1):
                    for k, mp in enumerate(mps):
                        for q, precision in enumerate(wanted):
                            table[i, j, k, q] = price(oracle, i, j, mp, precision)
        if precisions is None:
            return cls(table[..., 0], mps, name=oracle.name)
        return cls(table, mps, name=oracle.name, precisions=wanted)

    def block_cost(self, start: int, stop: int, mp: int,
                   precision: Precision = FP32) -> float:
        if mp not in self._column:
            raise KeyError(f"{self.name}: no costs for mp {mp} (table has {self.mps})")
        if precision not in self._layer:
            raise KeyError(f"{self.name}: no costs for {Precision(precision).value} (table "
                           f"has {', '.join(p.value for p in self.precisions)})")
        return float(self._table[start, stop, self._column[mp], self._layer[precision]])

    def cost_table(self, mps: Sequence[int],
                   precisions: Sequence[Precision] | None = None) -> np.ndarray | None:
        try:
            columns = [self._column[mp] for mp in mps]
            layers = [self._layer[Precision(p)] for p in (precisions or (FP32,))]
        except (KeyError, ValueError):
            return None
        table = self._table[:, :, columns][:, :, :, layers]
        return table[..., 0].copy() if precisions is None else table.copy()
