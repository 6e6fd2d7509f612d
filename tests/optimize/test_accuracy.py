"""The accuracy-aware search (issue 12, item 5) against brute force over every plan: cuts,
MP and precision per block, on small queues with fake costs and sensitivities."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from fakes import NamesQueue, PrecisionFake, random_precision_table, random_sensitivities
from paleozoic.ir.plan import Precision
from paleozoic.optimize import CostLookup, SearchSpace, TableOracle, run_optimizer
from paleozoic.optimize.accuracy import (
    AccuracyAware, AccuracyBudget, Candidate, search_accuracy_aware,
)
from paleozoic.optimize.dp import solve
from paleozoic.optimize.oracle import price, span_parts
from paleozoic.optimize.sensitivities import Sensitivities, measure_sensitivities

FP32, FP16, INT8 = Precision.FP32, Precision.FP16, Precision.INT8
ALL = (FP32, FP16, INT8)


def every_plan(cost, space: SearchSpace, sens: Sensitivities, names: list[str],
               every_mp: bool):
    """(cost, noise) of every plan: every cutting into allowed blocks, every precision per
    block, and every MP per block (or the best MP per block and precision, which gives the
    same optima since noise does not depend on the MP)."""
    n = space.n
    for cuts in itertools.product((False, True), repeat=n - 1):
        bounds = [0] + [c + 1 for c, cut in enumerate(cuts) if cut] + [n]
        blocks = list(zip(bounds, bounds[1:]))
        if not all(space.allows(a, b) for a, b in blocks):
            continue
        for precisions in itertools.product(space.precisions, repeat=len(blocks)):
            noise = sum(sens.noise(names[layer], p)
                        for (a, b), p in zip(blocks, precisions) for layer in range(a, b))
            if every_mp:
                for mps in itertools.product(space.mps, repeat=len(blocks)):
                    yield sum(price(cost, a, b, mp, p) for (a, b), mp, p
                              in zip(blocks, mps, precisions)), noise
            else:
                yield sum(min(price(cost, a, b, mp, p) for mp in space.mps)
                          for (a, b), p in zip(blocks, precisions)), noise


def pareto_under(plans, budget: float) -> list[tuple[float, float]]:
    """The Pareto front of (cost, noise) points with noise <= budget, cheapest first."""
    front: list[tuple[float, float]] = []
    for c, z in sorted(p for p in plans if p[1] <= budget):
        if not front or z < front[-1][1]:
            front.append((c, z))
    return front


def setup(n: int, mps: tuple[int, ...], seed: int, with_table: bool = True,
          fusible: tuple[bool, ...] | None = None):
    queue = NamesQueue(n)
    names = [layer.name for layer in queue.layers]
    table = random_precision_table(n, mps, ALL, seed)
    cost = (TableOracle(table, mps, precisions=ALL) if with_table
            else PrecisionFake(table, mps, ALL))
    space = SearchSpace(n, fusible or (True,) * n, mps, precisions=ALL)
    return queue, names, cost, space, random_sensitivities(names, seed)


def check_candidates(ranked: list[Candidate], cost, space, sens, names, budget) -> None:
    for c in ranked:
        parts = [span_parts(s) for s in c.spans]
        assert parts[0][0] == 0 and parts[-1][1] == space.n
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
        assert all(space.allows(a, b) and mp in space.mps for a, b, mp, _ in parts)
        assert c.cost_us == pytest.approx(sum(price(cost, *p) for p in parts), rel=1e-12)
        assert c.noise == pytest.approx(sum(sens.noise(names[layer], p) for a, b, _, p
                                            in parts for layer in range(a, b)), rel=1e-9)
        assert c.noise <= budget * (1 + 1e-9)
        assert [b.precision for b in c.plan.blocks] == [p for *_, p in parts]
        assert c.plan.notes["cost_us"] == c.cost_us
    assert all(a.cost_us <= b.cost_us and a.noise > b.noise for a, b in zip(ranked, ranked[1:]))


@pytest.mark.parametrize("n, mps, every_mp", [(1, (1, 4), True), (3, (1, 4), True),
                                               (5, (1, 2, 8), True), (6, (1, 4), True),
                                               (7, (1, 2, 4), False)])
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_equals_brute_force(n: int, mps, every_mp: bool, seed: int) -> None:
    queue, names, cost, space, sens = setup(n, mps, seed, with_table=seed == 0)
    plans = list(every_plan(cost, space, sens, names, every_mp))
    noises = sorted({z for _, z in plans})
    # Budgets from "nothing but fp32" to "anything goes", through the interesting middle.
    budgets = [0.0] + [noises[int(q * (len(noises) - 1))] * f
                       for q in (0.02, 0.1, 0.3, 0.6) for f in (1.0, 1.001)] + [1.0]
    for limit in budgets:
        front = pareto_under(plans, limit)
        ranked = search_accuracy_aware(queue, space, cost, sens,
                                       AccuracyBudget("noise", limit), candidates=1000)
        assert ranked, f"budget {limit}: no plan, brute force has {front[0]}"
        assert ranked[0].cost_us == pytest.approx(front[0][0], rel=1e-9), f"budget {limit}"
        # the whole ranked list is the Pareto front under the budget
        assert [c.cost_us for c in ranked] == pytest.approx([c for c, _ in front], rel=1e-9)
        assert [c.noise for c in ranked] == pytest.approx([z for _, z in front], rel=1e-9)
        check_candidates(ranked, cost, space, sens, names, limit)


def test_exact_with_non_fusible_layers() -> None:
    n, mps = 7, (1, 4)
    fusible = (True, True, False, True, True, True, True)
    queue, names, cost, space, sens = setup(n, mps, 5, fusible=fusible)
    plans = list(every_plan(cost, space, sens, names, every_mp=False))
    limit = sorted(z for _, z in plans)[len(plans) // 20]
    ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget("noise", limit))
    assert ranked[0].cost_us == pytest.approx(pareto_under(plans, limit)[0][0], rel=1e-9)
    assert (2, 3) in [span_parts(s)[:2] for s in ranked[0].spans]
    check_candidates(ranked, cost, space, sens, names, limit)


def test_loose_budget_gives_the_fastest_all_int8_plan() -> None:
    # Make int8 the cheapest precision for every block: then the fastest plan of all is
    # the fastest all-int8 plan, and a budget that admits everything must find it.
    n, mps = 30, (1, 2, 4, 8)
    table = random_precision_table(n, mps, ALL, seed=3)
    table[..., 2] = np.minimum(table[..., 2], table[..., :2].min(axis=3) * 0.9)
    cost = TableOracle(table, mps, precisions=ALL)
    queue = NamesQueue(n)
    sens = random_sensitivities([layer.name for layer in queue.layers], seed=3)
    space = SearchSpace(n, (True,) * n, mps, precisions=ALL)
    ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget.sqnr(-100))
    int8 = space.with_precisions((INT8,))
    fastest_int8, spans = solve(CostLookup(int8, cost), int8)
    assert ranked[0].cost_us == pytest.approx(fastest_int8, rel=1e-12)
    assert {b.precision for b in ranked[0].plan.blocks} == {INT8}
    assert ranked[0].spans == spans


@pytest.mark.parametrize("with_table", [True, False])
def test_zero_budget_gives_the_fp32_optimum(with_table: bool) -> None:
    n, mps = 25, (1, 2, 4, 8)
    queue, names, cost, space, sens = setup(n, mps, 4, with_table)
    ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget("noise", 0.0))
    fp32 = space.with_precisions((FP32,))
    optimum, spans = solve(CostLookup(fp32, cost), fp32)
    assert len(ranked) == 1  # nothing is less noisy than no noise
    assert ranked[0].cost_us == pytest.approx(optimum, rel=1e-12)
    assert ranked[0].noise == 0.0 and ranked[0].spans == spans


def test_zero_budget_may_use_fp16_where_it_costs_no_noise() -> None:
    """The documented tie: a layer whose fp16 sensitivity is 0 may run in fp16 under a
    zero budget (it is as accurate as fp32 by the model); with equal cost fp32 is kept."""
    n, mps = 6, (1, 4)
    queue, names, cost, space, _ = setup(n, mps, 6)
    sens = random_sensitivities(names, 6, zero_fp16=names)   # fp16 free everywhere
    ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget("noise", 0.0))
    both = space.with_precisions((FP32, FP16))
    assert ranked[0].cost_us == pytest.approx(solve(CostLookup(both, cost), both)[0])
    assert ranked[0].noise == 0.0


def test_thinned_search_is_within_its_stated_bound() -> None:
    n, mps = 7, (1, 2, 4)
    queue, names, cost, space, sens = setup(n, mps, 8)
    plans = list(every_plan(cost, space, sens, names, every_mp=False))
    limit = sorted(z for _, z in plans)[len(plans) // 10]
    resolution = limit / 50
    ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget("noise", limit),
                                   resolution=resolution)
    tighter = pareto_under(plans, limit - n * resolution)[0][0]
    assert ranked[0].noise <= limit
    assert pareto_under(plans, limit)[0][0] - 1e-9 <= ranked[0].cost_us <= tighter + 1e-9
    assert "thinned" in ranked[0].plan.notes["search"] or ranked[0].cost_us == pytest.approx(
        pareto_under(plans, limit)[0][0])


def test_tiny_and_negative_budgets() -> None:
    queue, names, cost, space, sens = setup(4, (1, 2), 0)
    # 400 dB is a budget of 1e-40: only noise-free plans, i.e. all fp32
    ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget("sqnr_db", 400))
    assert ranked and ranked[0].noise == 0.0
    with pytest.raises(ValueError, match=">= 0"):
        search_accuracy_aware(queue, space, cost, sens, AccuracyBudget("noise", -1.0))


def test_spaced_candidates() -> None:
    queue, names, cost, space, sens = setup(20, (1, 2, 4), 2)
    budget = AccuracyBudget.sqnr(25)
    dense = search_accuracy_aware(queue, space, cost, sens, budget, candidates=10_000)
    spread = search_accuracy_aware(queue, space, cost, sens, budget, candidates=5,
                                   spacing_db=3.0)
    assert spread[0].spans == dense[0].spans
    assert all(b.sqnr_db >= a.sqnr_db + 3.0 for a, b in zip(spread, spread[1:]))
    for a, b in zip(spread, spread[1:]):  # b is the cheapest front plan 3 dB past a
        assert b.cost_us == min(c.cost_us for c in dense if c.sqnr_db >= a.sqnr_db + 3.0)


# ---- budgets, sensitivities -----------------------------------------------------------
def test_budget_kinds() -> None:
    assert AccuracyBudget.sqnr(30).noise() == pytest.approx(1e-3)
    assert AccuracyBudget("noise", 0.02).noise() == 0.02
    # cosine and top-1 need the caller's calibrated map
    assert AccuracyBudget("cosine", 0.999, to_noise=lambda c: 1 / c ** 2 - 1).noise() \
        == pytest.approx(1 / 0.999 ** 2 - 1)
    assert AccuracyBudget("top1", 0.99, to_noise=lambda a: (1 - a) * 0.1).noise() \
        == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="calibrated map"):
        AccuracyBudget("top1", 0.99).noise()
    with pytest.raises(ValueError, match="kind"):
        AccuracyBudget("psnr", 3.0).noise()  # type: ignore[arg-type]


def test_sensitivities_json_round_trip(tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    sens = random_sensitivities(names, 1)
    path = tmp_path / "sens.json"
    sens.save(path)
    again = Sensitivities.load(path)
    assert again.layers == sens.layers
    assert json.loads(path.read_text())["layers"]["a"].keys() == {"fp16", "int8"}
    assert again.noise("b", FP32) == 0.0
    queue = NamesQueue(2)
    with pytest.raises(ValueError, match="layer0 \\(fp16\\)"):
        again.matrix(queue, ALL)
    with pytest.raises(ValueError, match="finite noise power"):
        Sensitivities({"a": {"int8": -1.0}})
    with pytest.raises(ValueError, match="not a Paleozoic sensitivities"):
        Sensitivities.from_dict({"layers": {}})


def test_measure_sensitivities_asks_one_layer_at_a_time() -> None:
    queue = NamesQueue(4)
    asked = []

    class Probe:
        def output_noise(self, precisions):
            asked.append(dict(precisions))
            (name, precision), = precisions.items()
            return (1e-6 if precision == FP16 else 1e-3) * (1 + int(name[-1]))

    sens = measure_sensitivities(queue, Probe())
    assert len(asked) == 8 and all(len(a) == 1 for a in asked)
    assert sens.noise("layer2", INT8) == pytest.approx(3e-3)
    assert sens.model == "fake"


# ---- through the optimizer hook ---------------------------------------------------------
def test_accuracy_optimizer_through_run_optimizer(queue, tmp_path: Path) -> None:
    n = len(queue.layers)
    mps = tuple(range(1, 33))
    cost = TableOracle(random_precision_table(n, mps, ALL, 9), mps, precisions=ALL)
    sens = random_sensitivities([layer.name for layer in queue.layers], 9)
    path = tmp_path / "sens.json"
    sens.save(path)
    space = SearchSpace.from_queue(queue, precisions=ALL)
    plan = run_optimizer(AccuracyAware(sensitivities=str(path), sqnr_db=35), queue, cost,
                         space)
    ranked = search_accuracy_aware(queue, space, cost, sens, AccuracyBudget.sqnr(35))
    assert plan.notes["cost_us"] == pytest.approx(ranked[0].cost_us)
    assert plan.notes["predicted_sqnr_db"] >= 35
    assert len(plan.notes["candidates"]) == len(ranked) - 1
    unconstrained = run_optimizer(AccuracyAware(sensitivities=str(path), sqnr_db=-100),
                                  queue, cost, space)
    from paleozoic.optimize import load_optimizer
    dp = run_optimizer(load_optimizer("dp"), queue, cost, space)
    assert unconstrained.notes["cost_us"] == pytest.approx(dp.notes["cost_us"])
    assert math.isfinite(plan.notes["cost_us"])
