"""Dynamic programming equals brute force on small queues (n <= 10, MP in {1, 2, 4, 8})."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fakes import TableFake, random_table
from paleozoic.optimize import CostLookup, SearchSpace, TableOracle
from paleozoic.optimize.dp import solve

MPS = (1, 2, 4, 8)


def cuttings(n: int, space: SearchSpace):
    """Every way to cut n layers into allowed blocks, as lists of (start, stop)."""
    for cuts in itertools.product((False, True), repeat=n - 1):
        bounds = [0] + [c + 1 for c, cut in enumerate(cuts) if cut] + [n]
        blocks = list(zip(bounds, bounds[1:]))
        if all(space.allows(a, b) for a, b in blocks):
            yield blocks


def brute_force(cost, space: SearchSpace, every_mp: bool) -> float:
    """Minimum over all cuttings and (if every_mp) all MP assignments, enumerated fully."""
    best = np.inf
    for blocks in cuttings(space.n, space):
        if every_mp:
            for mps in itertools.product(space.mps, repeat=len(blocks)):
                best = min(best, sum(cost.block_cost(a, b, mp)
                                     for (a, b), mp in zip(blocks, mps)))
        else:
            best = min(best, sum(min(cost.block_cost(a, b, mp) for mp in space.mps)
                                 for a, b in blocks))
    return best


def check(cost, space: SearchSpace, every_mp: bool) -> None:
    total, spans = solve(CostLookup(space, cost), space)
    assert total == pytest.approx(brute_force(cost, space, every_mp), rel=1e-6)
    assert sum(cost.block_cost(*s) for s in spans) == pytest.approx(total, rel=1e-6)
    assert [s[0] for s in spans][0] == 0 and spans[-1][1] == space.n
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("with_table", [True, False])
def test_dp_equals_full_brute_force(n: int, with_table: bool) -> None:
    table = random_table(n, MPS, seed=n)
    cost = TableOracle(table, MPS) if with_table else TableFake(table, MPS)
    check(cost, SearchSpace(n, (True,) * n, MPS), every_mp=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dp_equals_brute_force_n10(seed: int) -> None:
    n = 10
    cost = TableOracle(random_table(n, MPS, seed), MPS)
    check(cost, SearchSpace(n, (True,) * n, MPS), every_mp=False)


def test_dp_respects_non_fusible_layers() -> None:
    n = 9
    fusible = (True, True, False, True, True, True, False, True, True)
    space = SearchSpace(n, fusible, MPS)
    cost = TableOracle(random_table(n, MPS, 7) * 0.1, MPS)  # fusing pays a lot
    total, spans = solve(CostLookup(space, cost), space)
    for start, stop, _ in spans:
        assert stop - start == 1 or all(fusible[start:stop])
    assert (2, 3) in [(s, e) for s, e, _ in spans] and (6, 7) in [(s, e) for s, e, _ in spans]
    check(cost, space, every_mp=False)


def test_dp_with_device_model_matches_brute_force(queue) -> None:
    from paleozoic.optimize.device_cost import DeviceModelOracle

    cost = DeviceModelOracle(queue)
    space = SearchSpace.from_queue(queue, mps=MPS)
    assert space.n <= 10
    check(cost, space, every_mp=space.n <= 6)
