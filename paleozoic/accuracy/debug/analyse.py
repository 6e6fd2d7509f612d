"""Measures a session folder's plan against onnxruntime, block by block and layer by layer,
and finds where the error jumps.

Two runtime runs per batch: the plan exactly as compiled (block figures, from each block's
boundary outputs: what a fused block makes readable) and every layer compiled alone at its
planned precision (layer figures; reading every tensor of the fused run would need marking
them all as outputs, which breaks the fusion being debugged).

The jump rule: a tensor's SQNR is capped at CEILING_DB (two fp32 implementations summing
in different orders differ there; below it the difference is a real loss). A block's input
SQNR is the lowest (capped) SQNR of the tensors it reads (graph inputs are exact), its
output SQNR the lowest of the ONNX-mapped tensors it writes; its drop is input minus output,
with the input first capped at what the block's precision can carry (PRECISION_CEILING_DB:
fp16 about 60 dB, int8 about 40 dB — a quantiser gains some 6 dB per bit and real ranges
waste a few bits), so that a block doing what its precision allows is not a jump.
The first jump is the first block, in plan order, whose drop exceeds jump_db. Layers in the
per-layer run are judged the same way. A tensor no ONNX tensor equals (inside a node that
became several layers) is skipped: its readers look through it to its producer's inputs.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from paleozoic.accuracy.debug.folder import SessionFolder
from paleozoic.accuracy.debug.metrics import Pooled
from paleozoic.accuracy.debug.onnx_tensors import OnnxReference
from paleozoic.accuracy.debug.runner import PlanRun, block_outputs, per_layer_plan
from paleozoic.ir import LayerQueue, Plan

logger = logging.getLogger(__name__)

CEILING_DB = 100.0
JUMP_DB = 20.0
POOLING = "pooled over all batches (sums of squares over every element, one ratio)"


@dataclass(frozen=True)
class Budget:
    metric: str    # "sqnr" (dB) or "cosine"
    value: float

    def met(self, sqnr_db: float | None, cosine: float | None) -> bool:
        figure = sqnr_db if self.metric == "sqnr" else cosine
        return figure is not None and not math.isnan(figure) and figure >= self.value

    def text(self) -> str:
        return f"SQNR >= {self.value:g} dB" if self.metric == "sqnr" else \
            f"cosine >= {self.value:g}"


@dataclass
class LayerFigures:
    name: str
    kind: str
    onnx_nodes: list[str]
    onnx_tensor: str | None      # the ONNX tensor compared with (None: none equals it)
    precision: str
    sqnr_db: float | None
    cosine: float | None
    input_sqnr_db: float
    drop_db: float | None


@dataclass
class BlockFigures:
    name: str
    fuse: bool
    mp: int
    precision: str
    outputs: dict[str, dict[str, float]]   # queue tensor -> sqnr_db, cosine (mapped only)
    sqnr_db: float | None                   # the lowest over its mapped outputs
    cosine: float | None
    input_sqnr_db: float
    drop_db: float | None
    layers: list[LayerFigures] = field(default_factory=list)


@dataclass
class DebugReport:
    folder: str
    strategy: str
    data: str
    batches: int
    blocks: list[BlockFigures]
    outputs: dict[str, dict[str, float]]    # ONNX graph output -> sqnr_db, cosine (fused)
    first_jump: str | None
    first_jump_layer: str | None
    budget: Budget | None = None
    first_below_budget: str | None = None
    pooling: str = POOLING
    jump_db: float = JUMP_DB
    ceiling_db: float = CEILING_DB

    @property
    def meets_budget(self) -> bool | None:
        if self.budget is None:
            return None
        return all(self.budget.met(o["sqnr_db"], o["cosine"]) for o in self.outputs.values())

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["meets_budget"] = self.meets_budget
        return _json_safe(data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"


def _json_safe(value: Any) -> Any:
    """JSON has no inf or NaN: they become strings ("inf", "-inf", "nan")."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _capped(db: float) -> float:
    return min(db, CEILING_DB)


PRECISION_CEILING_DB = {"fp32": CEILING_DB, "fp16": 60.0, "int8": 40.0}


def _ceiling(*precisions: str) -> float:
    return min(PRECISION_CEILING_DB.get(p, CEILING_DB) for p in precisions)


class _Upstream:
    """The (capped) SQNR a tensor carries: its own if measured, else the lowest of the
    tensors its producer reads (through unmeasured tensors), graph inputs exact."""

    def __init__(self, queue: LayerQueue, stats: Mapping[str, Pooled]) -> None:
        self.stats = stats
        self.producers = queue.producers()
        self.memo: dict[str, float] = {info.name: CEILING_DB for info in queue.inputs}

    def __call__(self, tensor: str) -> float:
        if tensor not in self.memo:
            if tensor in self.stats:
                self.memo[tensor] = _capped(self.stats[tensor].sqnr_db)
            else:
                layer = self.producers[tensor]
                self.memo[tensor] = min((self(t) for t in layer.inputs), default=CEILING_DB)
        return self.memo[tensor]


def measure(folder: SessionFolder, batches: Sequence[list[np.ndarray]], data: str,
            jump_db: float = JUMP_DB, budget: Budget | None = None,
            plan: Plan | None = None) -> DebugReport:
    """The report of `plan` (default: the folder's) on `batches` (feeds in queue input
    order)."""
    queue, plan = folder.queue, plan or folder.plan
    outputs_of = block_outputs(queue, plan)
    fused_read = {t for names in outputs_of.values() for t in names} | set(queue.outputs)
    fused = PlanRun(queue, plan, fused_read, folder.quantization)
    single = PlanRun(queue, per_layer_plan(plan), [layer.output for layer in queue.layers],
                     folder.quantization)
    reference = OnnxReference(folder.model, queue)
    fused_stats: dict[str, Pooled] = {}
    single_stats: dict[str, Pooled] = {}
    for feeds in batches:
        truth = reference.run(feeds)
        for values, stats in ((fused.run(feeds), fused_stats), (single.run(feeds),
                                                                  single_stats)):
            for tensor, value in values.items():
                if tensor in truth:
                    stats.setdefault(tensor, Pooled()).add(truth[tensor], value)
    logger.info("measured %d batch(es): %d block tensors, %d layer tensors", len(batches),
                len(fused_stats), len(single_stats))
    blocks = _block_figures(queue, plan, outputs_of, fused_stats, single_stats)
    jump = next((b.name for b in blocks if b.drop_db is not None and b.drop_db > jump_db),
                None)
    jump_layer = next((f.name for b in blocks for f in b.layers
                       if f.drop_db is not None and f.drop_db > jump_db), None)
    graph_outputs = {
        names[-1] if (names := queue.onnx_tensors.get(t)) else t:
            {"sqnr_db": fused_stats[t].sqnr_db, "cosine": fused_stats[t].cosine}
        for t in queue.outputs if t in fused_stats}
    report = DebugReport(str(folder.path), plan.strategy, data, len(batches), blocks,
                         graph_outputs, jump, jump_layer, budget, jump_db=jump_db)
    if budget is not None:
        report.first_below_budget = next(
            (b.name for b in blocks if b.sqnr_db is not None
             and not budget.met(b.sqnr_db, b.cosine)), None)
    return report


def _block_figures(queue: LayerQueue, plan: Plan, outputs_of: Mapping[str, list[str]],
                   fused_stats: Mapping[str, Pooled], single_stats: Mapping[str, Pooled]
                   ) -> list[BlockFigures]:
    by_name = {layer.name: layer for layer in queue.layers}
    fused_up, single_up = _Upstream(queue, fused_stats), _Upstream(queue, single_stats)
    blocks = []
    for block in plan.blocks:
        layers = [by_name[n] for n in block.layers]
        inside = {layer.output for layer in layers}
        reads = [t for layer in layers for t in layer.inputs if t not in inside]
        input_db = min((fused_up(t) for t in reads), default=CEILING_DB)
        outs = {t: {"sqnr_db": fused_stats[t].sqnr_db, "cosine": fused_stats[t].cosine}
                for t in outputs_of[block.name] if t in fused_stats}
        sqnr = min((o["sqnr_db"] for o in outs.values()), default=None)
        cosine = min((o["cosine"] for o in outs.values()), default=None)
        figures = BlockFigures(
            block.name, block.fuse, block.mp, block.precision.value +
            ("*" if block.layer_precision else ""), outs, sqnr, cosine, input_db,
            None if sqnr is None else
            min(input_db, _ceiling(*(block.precision_of(n).value for n in block.layers)))
            - _capped(sqnr))
        for layer in layers:
            stats = single_stats.get(layer.output)
            layer_in = min((single_up(t) for t in layer.inputs), default=CEILING_DB)
            names = queue.onnx_tensors.get(layer.output)
            figures.layers.append(LayerFigures(
                layer.name, layer.kind, list(layer.onnx_nodes), names[0] if names else None,
                block.precision_of(layer.name).value,
                None if stats is None else stats.sqnr_db,
                None if stats is None else stats.cosine, layer_in,
                None if stats is None else
                min(layer_in, _ceiling(block.precision_of(layer.name).value))
                - _capped(stats.sqnr_db)))
        blocks.append(figures)
    return blocks
