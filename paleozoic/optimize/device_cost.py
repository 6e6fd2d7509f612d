"""The analytic DeviceModel as a cost oracle: the mock SDK's device model (C++, through
paleozoic._runtime), so plans are costed with exactly the time an emitted session reports.
`DeviceModelOracle` answers block and plan costs from the model, with a cached cost table
for dynamic programming; the queue's layers are built in a runtime Session
(paleozoic.runner.graph) for it.
"""

from __future__ import annotations

from typing import Any, Collection, Sequence

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.boundary import block_boundary, read_counts
from paleozoic.ir.plan import MP_MAX, Precision
from paleozoic.optimize.oracle import stage_total, staged_cores
from paleozoic.runner.graph import build_runtime_graph

__all__ = ["DeviceModelOracle"]


class DeviceModelOracle:
    """Block costs (simulated device us) from the mock SDK's device model.

    block_cost(start, stop, mp): queue.layers[start:stop] as one block on mp cores, fused
    when it holds more than one layer. cost_table(mps): [n, n+1, len(mps)] array of every
    block's cost (inf where stop <= start), computed once per MP list and cached. The layers
    named in `sparse` are priced in the SDK's sparse mode (their zero weight pairs skipped).
    Blocks are priced at `data_parallelism` (groups of frames each forward runs at once, on
    mp cores each: an MP above 32 / data_parallelism costs inf); plan_cost prices a plan at
    the plan's own.
    """

    name = "model"
    # The C++ model prices each layer at a precision: its compute rate (fp32, fp16, int8
    # for layers with an int8 mode, fp16 for the others) and its bytes by dtype. A block is
    # priced with its inputs already in its storage dtype: the casts a mixed plan needs at
    # precision boundaries are in an emitted session's device time, not in these costs.
    precisions: tuple[Precision, ...] = (Precision.FP32, Precision.FP16, Precision.INT8)

    def __init__(self, queue: LayerQueue, profile: str | None = None,
                 sparse: Collection[str] = (), data_parallelism: int = 1) -> None:
        from paleozoic.runner.sdk import runtime_module

        rt = runtime_module()

        self.queue = queue
        self.profile = profile
        self.sparse = frozenset(sparse)
        self.data_parallelism = data_parallelism
        self._rt = rt
        self._apply_profile()
        self._session = rt.Session()
        self._layers = build_runtime_graph(queue, self._session, bind_weights=False,
                                           sparse=self.sparse)
        self._index = {layer.name: i for i, layer in enumerate(queue.layers)}
        self._reads = read_counts(queue.layers)
        self._tables: dict[tuple[tuple[int, ...], Precision], np.ndarray] = {}

    def _apply_profile(self) -> None:
        # The mock's profile is process-wide: set it before every query so two oracles with
        # different profiles do not see each other's.
        if self.profile is None:
            self._rt.reset_device_profile()
        else:
            self._rt.set_device_profile(str(self.profile))

    def _outputs(self, start: int, stop: int) -> list[Any]:
        """Outputs of a block relative to the whole queue (as in the cost table)."""
        return self._outputs_of(list(range(start, stop)))

    def _outputs_of(self, indices: Sequence[int]) -> list[Any]:
        layers = [self.queue.layers[i] for i in indices]
        _, names = block_boundary(layers, self._reads, set(self.queue.outputs))
        return [self._layers[i].output for i, layer in zip(indices, layers)
                if layer.output in names]

    def block_cost(self, start: int, stop: int, mp: int,
                   precision: Precision = Precision.FP32) -> float:
        return self._block_cost(range(start, stop), mp, precision, self.data_parallelism)

    def pinned_block_cost(self, layers: Sequence[int], mp: int,
                          precision: Precision = Precision.FP32, cores: int = MP_MAX) -> float:
        """queue.layers[i] for i in `layers` (in queue order; a stage's block need not be a
        contiguous run) as one block, pinned to `cores` cores (its affinity) while blocks of
        its stage run on the others: it has those cores' share of the DRAM bandwidth."""
        return self._block_cost(layers, mp, precision, self.data_parallelism, cores)

    def _block_cost(self, indices: Sequence[int], mp: int, precision: Precision,
                    dp: int, cores: int = 0) -> float:
        indices = list(indices)
        if not indices or not all(0 <= i < len(self._layers) for i in indices):
            raise ValueError(f"block {indices} is outside the queue's {len(self._layers)} "
                             f"layers")
        if mp * dp > MP_MAX:
            return float("inf")
        self._apply_profile()
        layers = [self._layers[i] for i in indices]
        each = [Precision(precision).value] * len(layers)
        if len(indices) == 1:
            return float(self._session.estimate_block(layers, mp, fuse=False, precisions=each,
                                                      data_parallelism=dp, cores=cores))
        return float(self._session.estimate_block(layers, mp, fuse=True,
                                                  outputs=self._outputs_of(indices),
                                                  precisions=each, data_parallelism=dp,
                                                  cores=cores))

    def explain_block(self, start: int, stop: int, mp: int) -> dict[str, float]:
        """Where a fused block's time goes (launch/barriers, compute, halo, DRAM, spill)."""
        self._apply_profile()
        return dict(self._session.explain_block(self._layers[start:stop], mp,
                                                outputs=self._outputs(start, stop),
                                                data_parallelism=self.data_parallelism))

    def cost_table(self, mps: Sequence[int],
                   precisions: Sequence[Precision] | None = None) -> np.ndarray:
        if precisions is not None:
            return np.stack([self._table(mps, Precision(p)) for p in precisions], axis=-1)
        return self._table(mps, Precision.FP32)

    def _table(self, mps: Sequence[int], precision: Precision) -> np.ndarray:
        key = (tuple(int(m) for m in mps), precision)
        if key not in self._tables:
            self._apply_profile()
            dp = self.data_parallelism
            fits = [m for m in key[0] if m * dp <= MP_MAX]
            part = None
            if fits:
                part = self._session.cost_table(self._layers, fits,
                                                precisions=[precision.value] * len(self._layers),
                                                data_parallelism=dp)
            if fits and fits == list(key[0]):  # the usual case: no copy of n^2 x 32 costs
                table = np.ascontiguousarray(part, dtype=np.float64)
            else:
                table = np.full((len(self._layers), len(self._layers) + 1, len(key[0])),
                                np.inf)
                for k, mp in enumerate(key[0]):
                    if mp in fits:
                        table[:, :, k] = part[:, :, fits.index(mp)]
            table.setflags(write=False)
            self._tables[key] = table
        return self._tables[key]

    def _channel_cores(self) -> int:
        """The cores one DDR channel serves in this oracle's profile: a forward placed on a
        channel (MP 1) has their share of the DRAM, as the mock prices it."""
        self._apply_profile()
        profile = self._rt.device_profile()
        return max(1, int(profile["cores"] // profile["dram_channels"]))

    def plan_cost(self, plan: Plan) -> float:
        """The plan's time at its own data parallelism: its blocks one after another (a block
        with fuse=False the sum of its layers alone at the block's MP), each stage once, as
        long as its longest block pinned to its cores."""
        pinned = staged_cores(plan)
        channel_cores = self._channel_cores() if plan.channel is not None else 0
        costs = []
        for block in plan.blocks:
            try:
                idx = [self._index[name] for name in block.layers]
            except KeyError as missing:
                raise ValueError(f"block {block.name!r}: layer {missing} is not in the "
                                 f"queue") from None
            cores = pinned.get(block.name, 0)
            if not cores and idx != list(range(idx[0], idx[0] + len(idx))):
                raise ValueError(f"block {block.name!r}: layers are not a contiguous run of "
                                 f"the queue")
            if not cores and block.mp == 1:
                cores = channel_cores  # 0 without a channel placement
            dp = plan.data_parallelism
            if block.fuse or len(idx) == 1:
                costs.append(self._block_cost(idx, block.mp, block.precision, dp, cores))
            else:
                costs.append(sum(self._block_cost([i], block.mp, block.precision_of(name), dp,
                                                  cores)
                                 for i, name in zip(idx, block.layers)))
        return stage_total(plan, costs)
