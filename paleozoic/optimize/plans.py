"""The two fixed plans: `per-layer` (every layer its own block on one core) and `fuse-all`
(the paper's simple strategy: as few blocks as the SDK's fusion rules allow, each on every
core). They are plain functions of the queue; the `per-layer` and `fuse-all` optimizers
wrap them so they also run through the optimizer hook."""

from __future__ import annotations

from typing import Callable

from paleozoic.ir import LayerQueue, Plan, PlannedBlock
from paleozoic.ir.plan import MP_MAX, Precision
from paleozoic.ops import KINDS


def per_layer(queue: LayerQueue, mp: int = 1, precision: Precision = Precision.FP32) -> Plan:
    blocks = [PlannedBlock(f"block{i}", [layer.name], mp=mp, fuse=False, precision=precision)
              for i, layer in enumerate(queue.layers)]
    return Plan(blocks, strategy="per-layer", model=queue.source)


def fuse_all(queue: LayerQueue, mp: int = MP_MAX,
             precision: Precision = Precision.FP32) -> Plan:
    runs: list[list[str]] = [[]]
    for i, layer in enumerate(queue.layers):
        if i and layer.branch != queue.layers[i - 1].branch and runs[-1]:
            runs.append([])  # a run-time If's branch runs inside an if: blocks of its own
        if not KINDS[layer.kind].fusible:
            # The SDK cannot put this layer in a fusion op: it gets a block of its own.
            if runs[-1]:
                runs.append([])
            runs[-1].append(layer.name)
            runs.append([])
        else:
            runs[-1].append(layer.name)
    runs = [run for run in runs if run]
    blocks = [PlannedBlock(f"block{i}", run, mp=mp, fuse=True, precision=precision)
              for i, run in enumerate(runs)]
    return Plan(blocks, strategy="fuse-all", model=queue.source)


BUILTIN_PLANS: dict[str, Callable[[LayerQueue], Plan]] = {
    "per-layer": per_layer,
    "fuse-all": fuse_all,
}


def fusible_kinds() -> dict[str, bool]:
    return {name: kind.fusible for name, kind in KINDS.items()}
