"""`debug --fix`: a plan that meets an accuracy budget on the data by moving the fewest
layers it can to a higher precision (int8 -> fp16 -> fp32, as layer_precision overrides)
or out of their fused block.

Greedy: layers are taken in order of measured error (blocks by their SQNR drop in the
planned run, then layers by their drop in the per-layer run); each gets one move at a time
and the changed plan is run again until the graph outputs meet the budget. Then every
moved layer is tried back in its original state, and kept there when the budget still
holds, so a layer moved only because it came early in the order does not stay moved."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from paleozoic.accuracy.debug.analyse import Budget, DebugReport
from paleozoic.accuracy.debug.folder import SessionFolder
from paleozoic.accuracy.debug.metrics import Pooled
from paleozoic.accuracy.debug.runner import PlanRun
from paleozoic.errors import BudgetError
from paleozoic.ir import LayerQueue, Plan, PlannedBlock
from paleozoic.ir.plan import Precision

logger = logging.getLogger(__name__)

_HIGHER = {Precision.INT8: Precision.FP16, Precision.FP16: Precision.FP32}


@dataclass
class _Changes:
    precision: dict[str, Precision] = field(default_factory=dict)   # raised layers
    unfused: set[str] = field(default_factory=set)                  # taken out of fusion

    def copy(self) -> _Changes:
        return _Changes(dict(self.precision), set(self.unfused))

    def without(self, layer: str) -> _Changes:
        out = self.copy()
        out.precision.pop(layer, None)
        out.unfused.discard(layer)
        return out


@dataclass
class FixResult:
    plan: Plan
    moves: list[str]                 # what changed, layer by layer
    outputs: dict[str, float]        # graph output -> the budget's figure, fixed plan
    runs: int                        # plans run to find it


def apply_changes(plan: Plan, changes: _Changes) -> Plan:
    """`plan` with the changes: raised layers get layer_precision overrides; a block with
    unfused layers is cut around each (the first piece keeps the block's name, the others
    add _1, _2, ... avoiding names in use)."""
    used = {b.name for b in plan.blocks}
    blocks: list[PlannedBlock] = []
    for block in plan.blocks:
        pieces: list[list[str]] = [[]]
        for name in block.layers:
            if name in changes.unfused and len(block.layers) > 1:
                if pieces[-1]:
                    pieces.append([])
                pieces[-1].append(name)
                pieces.append([])
            else:
                pieces[-1].append(name)
        pieces = [p for p in pieces if p]
        for k, layers in enumerate(pieces):
            name = block.name
            if k:
                n = k
                while f"{block.name}_{n}" in used:
                    n += 1
                name = f"{block.name}_{n}"
                used.add(name)
            wanted = {layer: changes.precision.get(layer, block.precision_of(layer))
                      for layer in layers}
            # A piece whose layers all agree computes in that precision, without overrides.
            common = set(wanted.values())
            precision = common.pop() if len(common) == 1 else block.precision
            overrides = {k: v for k, v in wanted.items() if v is not precision}
            alone = len(layers) == 1 and layers[0] in changes.unfused
            blocks.append(PlannedBlock(name, layers, block.mp, fuse=block.fuse and not alone,
                                       precision=precision, layer_precision=overrides))
    return Plan(blocks, strategy=plan.strategy, model=plan.model, notes=dict(plan.notes))


class _Judge:
    """Runs plans on the batches and compares their graph outputs with onnxruntime's."""

    def __init__(self, queue: LayerQueue, batches: Sequence[list[np.ndarray]],
                 truths: Sequence[dict[str, np.ndarray]], budget: Budget,
                 quantization: Mapping[str, Any]) -> None:
        self.queue, self.batches, self.truths, self.budget = queue, batches, truths, budget
        self.quantization = quantization
        self.runs = 0

    def figures(self, plan: Plan) -> dict[str, Pooled]:
        self.runs += 1
        run = PlanRun(self.queue, plan, self.queue.outputs, self.quantization)
        stats = {t: Pooled() for t in self.queue.outputs}
        for feeds, truth in zip(self.batches, self.truths):
            for tensor, value in run.run(feeds).items():
                stats[tensor].add(truth[tensor], value)
        return stats

    def meets(self, plan: Plan) -> bool:
        return all(self.budget.met(s.sqnr_db, s.cosine) for s in self.figures(plan).values())

    def summary(self, plan: Plan) -> dict[str, float]:
        pick = "sqnr_db" if self.budget.metric == "sqnr" else "cosine"
        return {t: getattr(s, pick) for t, s in self.figures(plan).items()}


def _order(report: DebugReport) -> list[str]:
    """Layers by measured error: blocks by drop, then layers by drop, then queue order."""
    def key(value: float | None) -> float:
        return -value if value is not None else float("inf")

    blocks = sorted(report.blocks, key=lambda b: key(b.drop_db))
    return [f.name for b in blocks for f in sorted(b.layers, key=lambda f: key(f.drop_db))]


def _move(layer: str, block: PlannedBlock, changes: _Changes) -> str | None:
    """Applies the next move for `layer` to `changes`; None when it has none left."""
    current = changes.precision.get(layer, block.precision_of(layer))
    if current in _HIGHER:
        changes.precision[layer] = _HIGHER[current]
        return f"{layer}: {current.value} -> {_HIGHER[current].value}"
    if block.fuse and len(block.layers) > 1 and layer not in changes.unfused:
        changes.unfused.add(layer)
        return f"{layer}: out of fused block {block.name}"
    return None


def fix_plan(folder: SessionFolder, report: DebugReport, batches: Sequence[list[np.ndarray]],
             truths: Sequence[dict[str, np.ndarray]], budget: Budget) -> FixResult:
    """The fixed plan, or BudgetError when even every layer in fp32 and unfused misses."""
    plan, queue = folder.plan, folder.queue
    judge = _Judge(queue, batches, truths, budget, folder.quantization)
    everything = _Changes({layer.name: Precision.FP32 for layer in queue.layers},
                          {layer.name for layer in queue.layers})
    if not judge.meets(apply_changes(plan, everything)):
        best = judge.summary(apply_changes(plan, everything))
        raise BudgetError(
            f"no plan meets {budget.text()}: even every layer in fp32 and unfused reaches "
            + ", ".join(f"{t} {v:.6g}" for t, v in best.items())
            + "; the error is not the plan's (check weights.bin and the data); nothing written")
    block_of = {name: b for b in plan.blocks for name in b.layers}
    changes = _Changes()
    moved: list[str] = []
    met = judge.meets(plan)
    for layer in ([] if met else _order(report)):
        while not met and _move(layer, block_of[layer], changes) is not None:
            if layer not in moved:
                moved.append(layer)
            met = judge.meets(apply_changes(plan, changes))
        if met:
            break
    if not met:  # cannot happen: the loop ends with every layer fp32 and unfused
        raise BudgetError(f"no plan meets {budget.text()}; nothing written")
    for layer in list(moved):  # undo moves the budget does not need
        trial = changes.without(layer)
        if judge.meets(apply_changes(plan, trial)):
            changes = trial
            moved.remove(layer)
    fixed = apply_changes(plan, changes)
    moves = _describe(plan, changes)
    fixed.notes["debug_fix"] = {"budget": budget.text(), "moves": moves}
    logger.info("fix: %d layer(s) moved after %d runs", len(moved), judge.runs)
    return FixResult(fixed, moves, judge.summary(fixed), judge.runs)


def _describe(plan: Plan, changes: _Changes) -> list[str]:
    block_of = {name: b for b in plan.blocks for name in b.layers}
    out = []
    for layer in [name for b in plan.blocks for name in b.layers]:
        block = block_of[layer]
        if layer in changes.precision and changes.precision[layer] is not \
                block.precision_of(layer):
            out.append(f"{layer}: {block.precision_of(layer).value} -> "
                       f"{changes.precision[layer].value}")
        if layer in changes.unfused and block.fuse and len(block.layers) > 1:
            out.append(f"{layer}: out of fused block {block.name}")
    return out


def write_plan_atomic(path: str | Path, plan: Plan) -> None:
    write_text_atomic(path, plan.to_json())


def write_text_atomic(path: str | Path, text: str) -> None:
    """Writes through a temporary file in the same folder and a rename, so the file is
    either the old one or the complete new one, never half written."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
