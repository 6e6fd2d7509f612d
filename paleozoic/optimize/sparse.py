"""The sparse-mode knob (MLU100's cnmlSparseMode_t): which layers a plan puts in it.

A layer in sparse mode skips its filter's zero pairs (paleozoic.ops.sparsity) and pays for an
index; the device model prices both from the weights. The choice is per layer and changes
only that layer's own work, so it is made layer by layer, before the search of cuts, MP and
precision, which then prices the chosen layers sparse (DeviceModelOracle(sparse=...)).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Collection, Sequence

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import MP_MAX, MP_MIN, Precision
from paleozoic.ops import KINDS
from paleozoic.ops.sparsity import sparse_refusal, sparsity_of

logger = logging.getLogger(__name__)


def sparse_candidates(queue: LayerQueue) -> dict[str, float]:
    """The layers that have a sparse mode and zero pairs to skip: name -> their fraction."""
    found = {}
    for layer in queue.layers:
        if sparse_refusal(layer) or "weight" not in layer.weights:
            continue
        pairs = sparsity_of(queue.weights[layer.weights["weight"]],
                            KINDS[layer.kind].weight_channel_axis).pairs
        if pairs > 0:
            found[layer.name] = pairs
    return found


def paying_sparse(queue: LayerQueue, profile: str | None = None,
                  mps: Sequence[int] = (MP_MIN, MP_MAX),
                  precisions: Sequence[Precision] = (Precision.FP32,),
                  candidates: dict[str, float] | None = None) -> list[str]:
    """The candidates (default: sparse_candidates) the device model prices faster sparse than
    dense, alone at every MP of `mps` and precision of `precisions`, in queue order."""
    from paleozoic.optimize.device_cost import DeviceModelOracle

    if candidates is None:
        candidates = sparse_candidates(queue)
    if not candidates:
        return []
    dense = DeviceModelOracle(queue, profile)
    sparse = DeviceModelOracle(queue, profile, sparse=candidates)
    chosen = []
    for i, layer in enumerate(queue.layers):
        if layer.name not in candidates:
            continue
        pays = all(sparse.block_cost(i, i + 1, mp, p) < dense.block_cost(i, i + 1, mp, p)
                   for mp in mps for p in precisions)
        logger.info("%s: %.0f%% zero pairs; sparse mode %s", layer.name,
                    100 * candidates[layer.name], "pays" if pays else "does not pay")
        if pays:
            chosen.append(layer.name)
    return chosen


def with_sparse(plan: Plan, layers: Collection[str]) -> Plan:
    """`plan` with each block's layers that are in `layers` in sparse mode."""
    wanted = set(layers)
    blocks = [replace(b, sparse=[name for name in b.layers if name in wanted])
              for b in plan.blocks]
    return replace(plan, blocks=blocks)
