"""Model-guided measurement: which blocks the device model sends to the board."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.optimize import SearchSpace
from paleozoic.optimize.screen import cheapest_plan, guided_table, near_optimal

pytest.importorskip("paleozoic.optimize.device_cost")


def _brute_force(table: np.ndarray, space: SearchSpace) -> float:
    """The cheapest plan by enumerating every set of cuts (small queues only)."""
    n, best = space.n, np.inf
    for mask in range(1 << (n - 1)):
        cuts = [0] + [i for i in range(1, n) if mask >> (i - 1) & 1] + [n]
        spans = list(zip(cuts, cuts[1:]))
        if all(space.allows(a, b) for a, b in spans):
            best = min(best, sum(table[a, b].min() for a, b in spans))
    return best


def test_the_models_optimum_is_kept_and_ranked_first(queue, oracle) -> None:
    mps = (1, 2, 4, 8, 16, 32)
    space = SearchSpace.from_queue(queue, mps=mps)
    table = oracle.cost_table(mps)
    plan = cheapest_plan(np.where(np.isfinite(table), table, np.inf), space)
    exact = sum(table[block] for block in plan)
    assert exact == pytest.approx(_brute_force(table, space))
    strict = near_optimal(table, space, tolerance=0.0)
    assert set(plan) <= set(strict)
    loose = near_optimal(table, space, tolerance=0.2)
    assert set(strict) <= set(loose) and len(loose) > len(strict)
    for start, stop, k in loose:  # no block the space forbids, no MP far off its best
        assert space.allows(start, stop)
        assert table[start, stop, k] <= table[start, stop].min() * 1.2 + 1e-9


def test_guided_table_measures_few_blocks_and_holds_the_boards_best_plan(queue, oracle) -> None:
    """A board whose times stray from the model (some blocks 40% slower, others 30%
    faster, fixed per block): the table returned holds a plan of measured blocks that no
    plan over the blocks it measured beats, at least as cheap as the built-in ones given."""
    mps = (1, 2, 4, 8, 16, 32)
    space = SearchSpace.from_queue(queue, mps=mps)
    model = oracle.cost_table(mps)
    rng = np.random.default_rng(3)
    board = model * rng.choice([0.7, 1.0, 1.4], size=model.shape)
    asked: list[tuple[int, int, int]] = []

    def measure(blocks):
        asked.extend(blocks)
        return {b: float(board[b]) for b in blocks}

    per_layer = [(i, i + 1, len(mps) - 1) for i in range(space.n)]
    table = guided_table(model, space, measure, always=per_layer)
    assert len(asked) == len(set(asked))  # each block once
    measured = np.isfinite(table)
    assert measured.sum() == len(asked) < np.isfinite(model).sum() // 4
    assert np.array_equal(table[measured], board[measured])
    best = cheapest_plan(table, space)
    total = sum(table[b] for b in best)
    assert total <= sum(board[b] for b in per_layer) + 1e-9
    assert total == pytest.approx(_brute_force(table, space))
