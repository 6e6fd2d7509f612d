"""The measurement oracle: runtime-reported device time, cached per (start, stop, mp)."""

from __future__ import annotations

import pytest

from paleozoic.optimize import Optimizer, load_optimizer, plan_spans, run_optimizer

pytest.importorskip("paleozoic.optimize.device_cost")


def test_measured_matches_model_and_caches(queue) -> None:
    from paleozoic.optimize.device_cost import DeviceModelOracle
    from paleozoic.optimize.measured import MeasuredOracle

    measured, model = MeasuredOracle(queue, repeats=2), DeviceModelOracle(queue)
    for span in [(0, 1, 1), (0, 4, 8), (3, 7, 2), (9, 10, 4)]:
        assert measured.block_cost(*span) == pytest.approx(model.block_cost(*span), rel=1e-4)
    sessions = measured.sessions
    measured.block_cost(0, 4, 8)
    assert measured.sessions == sessions  # cached
    assert measured.cost_table((1, 2)) is None


class Listens(Optimizer):
    name = "listens"

    def __init__(self) -> None:
        super().__init__()
        self.heard: list[tuple] = []

    def optimize(self, queue, space, cost):
        return load_optimizer("greedy").optimize(queue, space, cost)

    def after_measure(self, start: int, stop: int, mp: int, micros: float) -> None:
        self.heard.append((start, stop, mp, micros))


def test_after_measure_hook(queue) -> None:
    from paleozoic.optimize.measured import MeasuredOracle

    cost = MeasuredOracle(queue, repeats=1)
    optimizer = Listens()
    plan = run_optimizer(optimizer, queue, cost, None)
    assert optimizer.heard and cost.observers == []
    assert cost.measure_plan([s[:3] for s in plan_spans(plan, queue)])
