"""Accuracy-aware search: the fastest plan (cuts, MP and precision per block) whose
predicted output noise stays within a budget, and the next candidates after it.

    budget = AccuracyBudget.sqnr_db(30)                  # noise <= 10^(-30/10)
    sens = Sensitivities.load("sensitivities.json")      # per layer, per precision
    ranked = search_accuracy_aware(queue, space, oracle, sens, budget)
    ranked[0].plan                                       # the fastest plan under budget

Model. A plan costs the sum of its block costs (each block at its best MP for its
precision, from the oracle) and its predicted noise is the sum over layers of the layer's
sensitivity in its block's precision (sensitivities.py says why that adds up). Noise does
not depend on cuts or MPs, only on which precision each layer ends up in.

Algorithm: a bi-criteria (cost, noise) label-setting dynamic programme over cut points. At
each cut point j it keeps the Pareto set of partial plans of layers [0, j): no kept plan
is both cheaper-or-equal and less-noisy-or-equal than another. The Pareto set at j is
built from the sets at every allowed block start i < j, extended by block [i, j) in each
precision. Only partial plans with noise <= budget are kept (noise never decreases), and
none costing more than `upper_bound` (below).

Why it is exact: both criteria add up along the queue, so if a full plan is Pareto-optimal
its part before any cut is Pareto-optimal among partial plans ending at that cut (if
another partial plan dominated it, swapping it in would dominate the full plan). The sets
therefore never drop a prefix of a Pareto-optimal plan, the final set at n is exactly the
Pareto front of all plans (one plan per distinct (cost, noise) point), and the cheapest
point with noise <= budget is the optimum. The bound pruning is sound: every front point
costs at most the cheapest least-noise plan (a dearer point with at least as much noise
would be dominated by it), so a partial plan whose cost plus the cheapest possible rest
exceeds that bound cannot lead to a front point. The arithmetic is float64 and sums
noises in another order than a layer-by-layer sum would, so the budget is compared with a
relative tolerance of BUDGET_RTOL (1e-9; a plan predicted exactly at the budget is in).

Ranked candidates are the Pareto front under the budget, cheapest first: each next
candidate is slower but strictly less noisy, so when a plan misses the budget on held-out
data the next one is the cheapest plan predicted to be more accurate. (A plan both slower
and noisier than an earlier candidate would never be a sensible fallback.) Ties: of plans
with equal cost and equal noise one is kept, the one found first (more precise precision,
then earlier block start); of plans with equal cost the less noisy one.

Optional thinning (`resolution`, a noise step): if the fronts grow too large, each cut
point keeps only the cheapest plan per `resolution`-wide noise bucket. Each thinning
replaces a plan by one no dearer and at most `resolution` noisier, at most once per cut
point, so the plan returned is within the budget and costs at most the true optimum for
the budget tightened by n * resolution. The result says whether thinning happened.

Per-layer precision inside a fused block (e.g. an int8 block with some fp16 layers) is not
searched: the cost oracles price a fused block in one precision.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Literal

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import Precision
from paleozoic.optimize.base import CostLookup, Optimizer, spans_to_plan
from paleozoic.optimize.oracle import CostOracle, Span, make_span
from paleozoic.optimize.sensitivities import Sensitivities
from paleozoic.optimize.space import SearchSpace

logger = logging.getLogger(__name__)

BudgetKind = Literal["sqnr_db", "noise", "cosine", "top1"]
BUDGET_RTOL = 1e-9  # absorbs summation-order rounding; far below any meaningful noise step


def noise_to_sqnr_db(noise: float) -> float:
    return math.inf if noise <= 0 else -10.0 * math.log10(noise)


@dataclass(frozen=True)
class AccuracyBudget:
    """How much accuracy a plan may give up, as a bound on the predicted noise power.

    kind "sqnr_db": at least `value` dB SQNR at the output, noise <= 10^(-value/10).
    kind "noise": noise power <= value directly.
    kind "cosine" / "top1": at least `value` cosine similarity / top-1 agreement with fp32;
    these need `to_noise`, the caller's calibrated monotone map from that metric to the
    noise power that keeps it (measured on the caller's data; no universal map exists).
    """

    kind: BudgetKind
    value: float
    to_noise: Callable[[float], float] | None = field(default=None, compare=False)

    @classmethod
    def sqnr(cls, db: float) -> AccuracyBudget:
        return cls("sqnr_db", float(db))

    def noise(self) -> float:
        if self.kind == "sqnr_db":
            return 10.0 ** (-self.value / 10.0)
        if self.kind == "noise":
            if self.value < 0:
                raise ValueError(f"noise budget {self.value} must be >= 0")
            return float(self.value)
        if self.kind in ("cosine", "top1"):
            if self.to_noise is None:
                raise ValueError(f"a {self.kind} budget needs to_noise, a calibrated map "
                                 f"from {self.kind} to output noise power")
            noise = float(self.to_noise(self.value))
            if not noise >= 0:
                raise ValueError(f"to_noise({self.value}) = {noise}; it must be >= 0")
            return noise
        raise ValueError(f"budget kind {self.kind!r} is not sqnr_db, noise, cosine or top1")


@dataclass
class Candidate:
    """A plan with its predicted cost (µs, from the oracle) and output noise power."""

    plan: Plan
    cost_us: float
    noise: float
    spans: list[Span]

    @property
    def sqnr_db(self) -> float:
        return noise_to_sqnr_db(self.noise)


@dataclass
class _Blocks:
    """Per allowed block [i, j) and precision p: the best cost over MPs and which MP."""

    cost: np.ndarray        # [n, n+1, P], inf where not allowed
    mp_index: np.ndarray    # [n, n+1, P]
    first_start: list[int]  # first_start[j]: the smallest i with [i, j) allowed


def _block_costs(space: SearchSpace, lookup: CostLookup) -> _Blocks:
    n, n_mp, n_p = space.n, len(space.mps), len(space.precisions)
    first = [0] * (space.n + 1)
    for j in range(1, n + 1):
        i = j - 1
        while i > 0 and space.allows(i - 1, j):
            i -= 1
        first[j] = i
    if lookup.table is not None:
        table = lookup.table.reshape(n, n + 1, n_p, n_mp)
    else:
        table = np.full((n, n + 1, n_p, n_mp), np.inf)
        for j in range(1, n + 1):
            for i in range(first[j], j):
                for k in range(n_p * n_mp):
                    table[i, j, k // n_mp, k % n_mp] = lookup(i, j, k)
    # argmin takes the first of equal MPs: ties go to the smaller MP, as elsewhere.
    return _Blocks(table.min(axis=3), table.argmin(axis=3), first)


def _cheapest_rest(blocks: _Blocks, allowed: np.ndarray) -> np.ndarray:
    """rest[i] = cheapest cost of layers [i, n) using blocks with allowed[i, j, p]."""
    n = blocks.cost.shape[0]
    cost = np.where(allowed, blocks.cost, np.inf).min(axis=2)
    rest = np.full(n + 1, np.inf)
    rest[n] = 0.0
    for i in range(n - 1, -1, -1):
        rest[i] = np.min(cost[i, i + 1:] + rest[i + 1:])
    return rest


def search_accuracy_aware(queue: LayerQueue, space: SearchSpace, cost: CostOracle,
                          sensitivities: Sensitivities, budget: AccuracyBudget,
                          candidates: int = 8, resolution: float | None = None,
                          spacing_db: float = 0.0) -> list[Candidate]:
    """The fastest plans whose predicted noise is within `budget`, cheapest first (at most
    `candidates`; each next one strictly less noisy). [] when no plan fits, which happens
    only when the space leaves out fp32 and some layer is noisy in every precision left.
    ValueError for a negative budget.

    `spacing_db` > 0 spreads the fallbacks: each next candidate is the cheapest front plan
    predicted at least that many dB more accurate than the previous one (the first is
    always the optimum).

    `space.precisions` are the precisions searched; the oracle must price them. Exact unless
    `resolution` is given (module docstring). Each candidate's plan.notes records its cost,
    noise, SQNR, rank, the budget and whether the search was exact.
    """
    started = time.monotonic()
    limit = budget.noise()
    if limit < 0:
        raise ValueError(f"noise budget {limit} must be >= 0")
    admit = limit * (1.0 + BUDGET_RTOL)
    n, precisions = space.n, space.precisions
    lookup = CostLookup(space, cost)
    blocks = _block_costs(space, lookup)
    layer_noise = sensitivities.matrix(queue, precisions)                 # [n, P]
    prefix = np.vstack([np.zeros(len(precisions)), np.cumsum(layer_noise, axis=0)])
    block_noise = prefix[None, :, :] - prefix[:, None, :]                 # [n+1, n+1, P]
    block_noise = np.maximum(block_noise[:n], 0.0)                        # rounding guard

    # Upper bound: the cheapest plan among those with the least noise any plan can have.
    least = layer_noise.min(axis=1)
    least_prefix = np.concatenate([[0.0], np.cumsum(least)])
    least_block = least_prefix[None, 1:] - least_prefix[:n, None]
    quiet = np.isclose(block_noise[:, 1:, :], least_block[:, :, None], rtol=1e-12,
                       atol=0.0)
    quiet = np.concatenate([np.zeros((n, 1, len(precisions)), bool), quiet], axis=1)
    upper = _cheapest_rest(blocks, quiet)[0]
    rest = _cheapest_rest(blocks, np.ones_like(quiet))
    slack = 1e-9 * max(1.0, abs(upper))                                   # keep ties

    # Labels per cut point; label ids count across cut points in order, so the labels of
    # cut point j have ids offset[j] .. offset[j+1]-1 and `back` holds the previous id.
    costs, noises = [np.zeros(1)], [np.zeros(1)]
    back, owner, prec = [np.array([-1])], [np.array([0])], [np.array([0])]
    offset = [0, 1]
    thinned = 0
    for j in range(1, n + 1):
        lo = blocks.first_start[j]
        # Only the labels of cut points a block ending at j may start from (a fusible run).
        w_cost, w_noise = np.concatenate(costs[lo:j]), np.concatenate(noises[lo:j])
        w_owner = np.concatenate(owner[lo:j])
        ids = np.arange(offset[lo], offset[j])
        parts = []
        for p in range(len(precisions)):
            c = w_cost + blocks.cost[w_owner, j, p]
            z = w_noise + block_noise[w_owner, j, p]
            keep = (z <= admit) & (c + rest[j] <= upper + slack)
            parts.append((c[keep], z[keep], ids[keep], w_owner[keep],
                          np.full(int(keep.sum()), p)))
        c, z, b, o, q = (np.concatenate(x) for x in zip(*parts))
        order = np.lexsort((z, c))                    # by cost, then noise; stable
        c, z, b, o, q = c[order], z[order], b[order], o[order], q[order]
        if len(z):
            running = np.minimum.accumulate(z)
            front = np.concatenate([[True], z[1:] < running[:-1]])
            c, z, b, o, q = c[front], z[front], b[front], o[front], q[front]
        if resolution is not None and len(z) > 1:
            # Cheapest label per noise bucket (labels are sorted by cost: first is cheapest).
            _, first = np.unique(np.floor(z / resolution), return_index=True)
            if len(first) < len(z):
                thinned += 1
                first.sort()
                c, z, b, o, q = c[first], z[first], b[first], o[first], q[first]
        costs.append(c)
        noises.append(z)
        back.append(b)
        owner.append(np.full(len(c), j))
        prec.append(q)
        offset.append(offset[-1] + len(c))
        if j % 8 == 0 or j == n:
            space.report(j / n, float(c[0]) if len(c) else float("nan"))
    labels = offset[-1]
    flat_back, flat_owner = np.concatenate(back), np.concatenate(owner)
    flat_prec, flat_noise = np.concatenate(prec), np.concatenate(noises)
    final = range(offset[n], offset[n + 1])
    exact = thinned == 0
    logger.info("accuracy-aware search: %d layers, %d precisions, %d labels, front of %d "
                "under the budget, %s, %.2f s", n, len(precisions), labels, len(final),
                "exact" if exact else f"thinned at {thinned} cut points",
                time.monotonic() - started)

    chosen: list[int] = []
    last_db = -math.inf
    for label in final:                      # cheapest first, noise strictly decreasing
        db = noise_to_sqnr_db(float(flat_noise[label]))
        if not chosen or db >= last_db + spacing_db:
            chosen.append(label)
            last_db = db
        if len(chosen) == candidates:
            break
    out: list[Candidate] = []
    for rank, label in enumerate(chosen):
        spans: list[Span] = []
        at = label
        while flat_back[at] >= 0:
            i, j = int(flat_owner[flat_back[at]]), int(flat_owner[at])
            p = int(flat_prec[at])
            mp = space.mps[int(blocks.mp_index[i, j, p])]
            spans.append(make_span(i, j, mp, precisions[p]))
            at = int(flat_back[at])
        spans.reverse()
        total_cost = float(sum(blocks.cost[s[0], s[1], precisions.index(_precision(s))]
                               for s in spans))
        noise = float(sum(layer_noise[layer, precisions.index(_precision(s))]
                          for s in spans for layer in range(s[0], s[1])))
        notes = {"cost_us": total_cost, "predicted_noise": noise,
                 "predicted_sqnr_db": noise_to_sqnr_db(noise), "rank": rank,
                 "budget": {"kind": budget.kind, "value": budget.value, "noise": limit},
                 "search": "pareto-dp" if exact else
                 f"pareto-dp thinned (resolution {resolution}; optimal for the budget "
                 f"tightened by at most {n * (resolution or 0.0):.3g})"}
        plan = spans_to_plan(queue, spans, "accuracy", notes)
        out.append(Candidate(plan, total_cost, noise, spans))
    return out


def _precision(span: Span) -> Precision:
    return Precision(span[3]) if len(span) == 4 else Precision.FP32


class AccuracyAware(Optimizer):
    """The accuracy-aware search through the optimizer hook: returns the best candidate.

    Options: sensitivities (path to the JSON), sqnr_db or noise (the budget), resolution.
        paleozoic tune m.onnx --precisions fp32,fp16,int8 \\
            --optimizer paleozoic.optimize.accuracy:AccuracyAware \\
            -O sensitivities=sens.json -O sqnr_db=30 -o plan.json
    """

    name = "accuracy"
    searches_precision = True

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("sensitivities", "sqnr_db", "noise", "resolution", "candidates", "spacing_db")

    def optimize(self, queue: LayerQueue, space: SearchSpace, cost: CostOracle) -> Plan:
        if "sensitivities" not in self.options:
            raise ValueError("the accuracy-aware search needs -O sensitivities=FILE.json")
        if ("sqnr_db" in self.options) == ("noise" in self.options):
            raise ValueError("give the budget as exactly one of -O sqnr_db=DB, -O noise=X")
        budget = (AccuracyBudget("sqnr_db", float(self.options["sqnr_db"]))
                  if "sqnr_db" in self.options
                  else AccuracyBudget("noise", float(self.options["noise"])))
        sens = Sensitivities.load(str(self.options["sensitivities"]))
        resolution = self.options.get("resolution")
        ranked = search_accuracy_aware(queue, space, cost, sens, budget,
                                       candidates=int(self.options.get("candidates", 8)),
                                       spacing_db=float(self.options.get("spacing_db", 0.0)),
                                       resolution=None if resolution is None
                                       else float(resolution))
        if not ranked:
            raise ValueError(f"no plan meets the budget ({budget.kind} {budget.value})")
        best = ranked[0].plan
        best.notes["candidates"] = [{"cost_us": c.cost_us, "predicted_noise": c.noise,
                                     "predicted_sqnr_db": c.sqnr_db,
                                     "blocks": [[s[0], s[1], s[2], _precision(s).value]
                                                for s in c.spans]}
                                    for c in ranked[1:]]
        return best
