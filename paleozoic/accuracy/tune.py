"""Accuracy-aware tuning on the user's data: per-layer sensitivities measured through the
runtime, the exact accuracy-aware search of paleozoic.optimize.accuracy over cuts, MP and
precision with the device model's costs, then each candidate run on held-out data until one
meets the budget as measured (the search's noise model is additive, an approximation).

Measurement: each layer with an SDK int8 mode is run alone in int8 (the rest fp32), and the
whole model once in fp16; the fp16 noise is shared among the layers in proportion to their
output elements (fp16 rounds every stored value, so its noise grows with what is stored),
and a layer without an int8 mode is as sensitive in int8 as in fp16, since it computes an
int8 block's work in fp16. That is 1 + (int8-capable layers) runs instead of two per layer.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from paleozoic.ir import LayerQueue, Plan, PlannedBlock
from paleozoic.ir.plan import Precision
from paleozoic.ops import KINDS
from paleozoic.optimize.accuracy import AccuracyBudget, Candidate, search_accuracy_aware
from paleozoic.optimize.oracle import plan_cost
from paleozoic.optimize.sensitivities import Sensitivities
from paleozoic.optimize.space import SearchSpace
from paleozoic.runner.plan_runner import PlanRunner

logger = logging.getLogger(__name__)

METRICS = ("sqnr", "cosine", "top1")
Batches = Sequence[list[np.ndarray]]


def uniform_plan(queue: LayerQueue, precisions: Mapping[str, Precision] | None = None,
                 default: Precision = Precision.FP32) -> Plan:
    """Every layer alone on 32 cores, in `default` unless `precisions` names it: the plan
    sensitivities are measured with (the mock's numbers do not depend on fusion or MP)."""
    precisions = precisions or {}
    return Plan([PlannedBlock(f"l{i}", [layer.name], mp=32, fuse=False,
                              precision=precisions.get(layer.name, default))
                 for i, layer in enumerate(queue.layers)], strategy="measure")


def outputs_on(queue: LayerQueue, plan: Plan, quantization: Mapping[str, Any],
               batches: Batches) -> list[np.ndarray]:
    """The graph outputs (concatenated, flattened) of `plan` on every batch."""
    runner = PlanRunner(queue, plan, quantization)
    out = []
    for feeds in batches:
        values = runner.run(feeds)
        out.append(np.concatenate([values[name].ravel() for name in queue.outputs]))
    return out


@dataclass
class Measured:
    """Accuracy of a plan's outputs against fp32's on the same batches."""

    sqnr_db: float
    cosine: float
    top1: float  # agreement of the argmax of the first output, per batch item

    def value(self, metric: str) -> float:
        return {"sqnr": self.sqnr_db, "cosine": self.cosine, "top1": self.top1}[metric]


def compare(ours: Sequence[np.ndarray], ref: Sequence[np.ndarray],
            first_output: tuple[int, ...]) -> Measured:
    """Pooled over all batches: SQNR = 10 log10(sum ref^2 / sum (ours - ref)^2)."""
    signal = sum(float(np.sum(r.astype(np.float64) ** 2)) for r in ref)
    noise = sum(float(np.sum((o.astype(np.float64) - r) ** 2)) for o, r in zip(ours, ref))
    dot = sum(float(np.dot(o.astype(np.float64), r)) for o, r in zip(ours, ref))
    norm = math.sqrt(signal * sum(float(np.sum(o.astype(np.float64) ** 2)) for o in ours))
    size = int(np.prod(first_output))
    rows = first_output[0] if len(first_output) > 1 else 1
    agree = total = 0
    for o, r in zip(ours, ref):
        a, b = o[:size].reshape(rows, -1), r[:size].reshape(rows, -1)
        agree += int(np.sum(a.argmax(axis=1) == b.argmax(axis=1)))
        total += rows
    sqnr = math.inf if noise == 0 else 10.0 * math.log10(signal / noise)
    return Measured(sqnr, dot / norm if norm else 1.0, agree / total)


class RuntimeNoiseProbe:
    """paleozoic.optimize.sensitivities.NoiseProbe through the runtime: output noise power
    of the queue with some layers in reduced precision, against its fp32 outputs."""

    def __init__(self, queue: LayerQueue, quantization: Mapping[str, Any],
                 batches: Batches) -> None:
        self.queue, self.quantization, self.batches = queue, quantization, batches
        self.reference = outputs_on(queue, uniform_plan(queue), quantization, batches)
        self._signal = sum(float(np.sum(r.astype(np.float64) ** 2)) for r in self.reference)
        self.runs = 0

    def noise_of(self, plan: Plan) -> float:
        self.runs += 1
        ours = outputs_on(self.queue, plan, self.quantization, self.batches)
        noise = sum(float(np.sum((o.astype(np.float64) - r) ** 2))
                    for o, r in zip(ours, self.reference))
        return noise / self._signal if self._signal else 0.0

    def output_noise(self, precisions: Mapping[str, Precision]) -> float:
        return self.noise_of(uniform_plan(self.queue, precisions))


def measure_sensitivities(queue: LayerQueue, probe: RuntimeNoiseProbe,
                          progress: Callable[[int, int], None] | None = None
                          ) -> Sensitivities:
    """The module docstring's measurement: one fp16 run, one int8 run per int8 layer."""
    int8_layers = [layer for layer in queue.layers if KINDS[layer.kind].int8_mode]
    total = 1 + len(int8_layers)
    fp16 = probe.noise_of(uniform_plan(queue, default=Precision.FP16))
    if progress:
        progress(1, total)
    sizes = np.array([float(np.prod(queue.shape(layer.output))) for layer in queue.layers])
    share = fp16 * sizes / sizes.sum()
    layers: dict[str, dict[Precision, float]] = {
        layer.name: {Precision.FP16: float(s), Precision.INT8: float(s)}
        for layer, s in zip(queue.layers, share)}
    for done, layer in enumerate(int8_layers, start=2):
        layers[layer.name][Precision.INT8] = max(
            probe.output_noise({layer.name: Precision.INT8}), layers[layer.name][Precision.FP16])
        if progress:
            progress(done, total)
    return Sensitivities(layers, model=queue.source, notes={
        "method": "int8 per int8-capable layer alone; fp16 of the whole model shared by "
                  "output size", "fp16_noise": fp16, "runs": probe.runs})


@dataclass
class TuneResult:
    plan: Plan
    candidate: Candidate
    measured: Measured
    tried: list[tuple[Candidate, Measured]] = field(default_factory=list)


def tune_for_accuracy(queue: LayerQueue, quantization: Mapping[str, Any],
                      sensitivities: Sensitivities, cost: Any, metric: str, target: float,
                      holdout: Batches, mps: Sequence[int] = tuple(range(1, 33)),
                      spacing_db: float = 1.0) -> TuneResult:
    """The fastest plan on the predicted cost/noise front that meets `metric` >= `target`
    when run on `holdout` (against fp32 there). The front is searched exactly; the measured
    accuracy is taken as monotone along it (faster = noisier), so a binary search finds the
    fastest candidate that holds, which is then the one returned (it was run and met it)."""
    if metric not in METRICS:
        raise ValueError(f"unknown accuracy metric {metric!r}; use one of {', '.join(METRICS)}")
    space = SearchSpace.from_queue(queue, mps=mps, precisions=(Precision.FP32, Precision.FP16,
                                                               Precision.INT8))
    front = list(search_accuracy_aware(queue, space, cost, sensitivities,
                                       AccuracyBudget("noise", math.inf), candidates=10_000,
                                       spacing_db=spacing_db))
    if metric == "sqnr":  # predicted noise says where to start: skip the hopeless ones
        limit = 10.0 ** (-target / 10.0)
        first = next((i for i, c in enumerate(front) if c.noise <= limit), len(front) - 1)
        front = front[first:]
    reference = outputs_on(queue, uniform_plan(queue), quantization, holdout)
    shape = tuple(queue.shape(queue.outputs[0]))
    tried: list[tuple[Candidate, Measured]] = []

    def holds(index: int) -> bool:
        got = compare(outputs_on(queue, front[index].plan, quantization, holdout), reference,
                      shape)
        tried.append((front[index], got))
        logger.info("candidate %d: %.1f us, predicted %.1f dB, measured %s", index,
                    front[index].cost_us, front[index].sqnr_db, got)
        return got.value(metric) >= target

    lo, hi = 0, len(front) - 1  # front[-1] is the least noisy (all fp32 when allowed)
    if not holds(hi):
        raise ValueError(f"even the most accurate plan misses {metric} >= {target} on the "
                         f"held-out data ({tried[-1][1].value(metric):.4g})")
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    chosen = front[lo]
    # The noise model is additive and the metric may not be monotone along the front, so
    # the fastest plan of each single precision is tried too when it is faster: the result
    # is never slower than a uniform plan that meets the budget.
    for precision in (Precision.INT8, Precision.FP16):
        uniform = _fastest_uniform(queue, cost, mps, precision, sensitivities)
        if uniform.cost_us < chosen.cost_us:
            front.append(uniform)
            if holds(len(front) - 1):
                chosen = uniform
    best = next(m for c, m in tried if c is chosen)
    plan = chosen.plan
    plan.strategy = "accuracy-aware"
    plan.notes.update({"metric": metric, "target": target, "measured": vars(best),
                       "predicted_cost_us": front[lo].cost_us,
                       "predicted_sqnr_db": front[lo].sqnr_db,
                       "candidates_on_front": len(front), "candidates_run": len(tried)})
    return TuneResult(plan, chosen, best, tried)


def _fastest_uniform(queue: LayerQueue, cost: Any, mps: Sequence[int], precision: Precision,
                     sensitivities: Sensitivities) -> Candidate:
    """The device model's fastest plan with every block in `precision` (exact DP), with
    its predicted noise."""
    from paleozoic.optimize import load_optimizer, run_optimizer

    space = SearchSpace.from_queue(queue, mps=mps, precisions=(precision,))
    plan = run_optimizer(load_optimizer("dp"), queue, cost, space)
    noise = float(sensitivities.matrix(queue, (precision,)).sum())
    return Candidate(plan, float(plan_cost(plan, queue, cost)), noise, [])
