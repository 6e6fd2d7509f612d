"""run_optimizer: plans are validated (errors name the optimizer and the block), queue
mutations are caught, the plan gets its notes."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import random_table
from paleozoic.errors import OptimizerError
from paleozoic.ir import Plan, PlannedBlock
from paleozoic.optimize import (
    Optimizer, SearchSpace, TableOracle, load_optimizer, plan_cost, run_optimizer,
)


class Returns(Optimizer):
    """An optimizer whose plan is what its `make` option makes of the queue."""

    name = "returns"

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("make",)

    def optimize(self, queue, space, cost):
        return self.options["make"](queue)


def names(queue) -> list[str]:
    return [layer.name for layer in queue.layers]


def mutating(how):
    """A `make` for Returns that does `how` to the queue, then plans it as one block."""
    def make(queue) -> Plan:
        how(queue)
        return Plan([PlannedBlock("block0", names(queue), 1)])
    return make


@pytest.mark.parametrize("make, message", [
    (lambda q: Plan([PlannedBlock("block0", names(q)[:3], 1),
                     PlannedBlock("block1", names(q)[2:], 1)]), "block 'block1'.*already in"),
    (lambda q: Plan([PlannedBlock("block0", names(q), 33)]), "block 'block0'.*mp 33"),
    (lambda q: Plan([PlannedBlock("block0", names(q)[:4], 1)]), "covers 4 of"),
    (lambda q: Plan([PlannedBlock("block0", names(q)[1:2] + names(q)[:1] + names(q)[2:], 2)]),
     "block 'block0'.*out of order"),
    (lambda q: "not a plan", "returned str"),
])
def test_invalid_plans_name_optimizer_and_block(queue, oracle, make, message) -> None:
    with pytest.raises(OptimizerError, match=message) as err:
        run_optimizer(Returns(make=make), queue, oracle)
    assert "optimizer 'returns'" in str(err.value)


def test_mp_outside_search_space(queue, oracle) -> None:
    space = SearchSpace.from_queue(queue, mps=(1, 2, 4))
    make = lambda q: Plan([PlannedBlock("block0", names(q), 3)])  # noqa: E731
    with pytest.raises(OptimizerError, match="block 'block0'.*search space"):
        run_optimizer(Returns(make=make), queue, oracle, space)


def _first_weight(queue) -> np.ndarray:
    return queue.weights[sorted(queue.weights)[0]]


@pytest.mark.parametrize("how", [
    lambda q: setattr(q.layers[0], "precision", "int8"),
    lambda q: q.layers[0].op.attrs.update(groups=2),
    lambda q: q.layers.pop(),
    lambda q: q.weights.update({sorted(q.weights)[0]: np.zeros(3, np.float32)}),
], ids=["knob", "attribute", "layer", "weight-replaced"])
def test_queue_mutation_is_caught(queue, oracle, how) -> None:
    with pytest.raises(OptimizerError, match="optimizer 'returns'.*modified the model"):
        run_optimizer(Returns(make=mutating(how)), queue, oracle)


def test_weight_write_is_caught(queue, oracle) -> None:
    # Some imported weights are read-only views of the ONNX initializers; which one sorts
    # first depends on the layer names, so make it one the optimizer could write into.
    first = min(queue.weights)
    queue.weights[first] = queue.weights[first].copy()

    def write(q) -> None:
        _first_weight(q)[...] = 0.0

    before = _first_weight(queue).copy()
    with pytest.raises(OptimizerError, match="write into the model's weights"):
        run_optimizer(Returns(make=mutating(write)), queue, oracle)
    assert np.array_equal(_first_weight(queue), before)
    assert _first_weight(queue).flags.writeable  # restored after the run


def test_failure_names_optimizer(queue, oracle) -> None:
    def boom(q):
        raise KeyError("oops")

    with pytest.raises(OptimizerError, match="optimizer 'returns'.*KeyError"):
        run_optimizer(Returns(make=boom), queue, oracle)


def test_notes_and_strategy(queue, oracle) -> None:
    plan = run_optimizer(load_optimizer("greedy"), queue, oracle)
    assert plan.strategy == "greedy"
    assert plan.notes["oracle"] == oracle.name
    assert plan.notes["cost_us"] == pytest.approx(plan_cost(plan, queue, oracle))
    assert [b.name for b in plan.blocks] == [f"block{i}" for i in range(len(plan.blocks))]
    assert all(b.fuse == (len(b.layers) > 1) for b in plan.blocks)


@pytest.mark.parametrize("name", ["greedy", "annealing"])
def test_search_respects_non_fusible(name: str) -> None:
    n, mps = 12, (1, 2, 4, 8)
    fusible = tuple(i not in (3, 8) for i in range(n))
    space = SearchSpace(n, fusible, mps)
    table = random_table(n, mps, seed=5) * 0.1
    from paleozoic.optimize.base import CostLookup

    lookup = CostLookup(space, TableOracle(table, mps))
    if name == "greedy":
        from paleozoic.optimize.greedy import greedy_spans
        spans = greedy_spans(lookup, space)
    else:
        from paleozoic.optimize.annealing import SimulatedAnnealing, _Costs
        spans, _ = SimulatedAnnealing(iterations=5000)._anneal(
            space, _Costs(lookup), [(i, i + 1, 1) for i in range(n)])
    for start, stop, _ in spans:
        assert stop - start == 1 or all(fusible[start:stop])


def test_annealing_improves_on_greedy_random_tables() -> None:
    """A rugged random landscape: annealing from greedy never ends worse than greedy and
    lands near the exact optimum (the 1 % target is for real models: benchmarks/)."""
    from paleozoic.optimize.annealing import SimulatedAnnealing, _Costs
    from paleozoic.optimize.base import CostLookup
    from paleozoic.optimize.dp import solve
    from paleozoic.optimize.greedy import greedy_spans

    n, mps = 40, (1, 2, 4, 8)
    space = SearchSpace(n, (True,) * n, mps)
    cost = TableOracle(random_table(n, mps, seed=11), mps)
    exact, _ = solve(CostLookup(space, cost), space)
    start = greedy_spans(CostLookup(space, cost), space)
    _, found = SimulatedAnnealing(seed=1, iterations=100_000)._anneal(
        space, _Costs(CostLookup(space, cost)), start)
    assert exact - 1e-9 <= found <= min(exact * 1.05, sum(cost.block_cost(*s) for s in start))
