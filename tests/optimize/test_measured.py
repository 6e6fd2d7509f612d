"""The measurement oracle: runtime-reported device time, cached per (start, stop, mp) and by
block contents; model-guided on the mock."""

from __future__ import annotations

import numpy as np
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


def test_cost_table_holds_short_blocks_and_built_in_plans(queue) -> None:
    """With max_block: every allowed block up to max_block layers and the blocks of the
    per-layer and fuse-all plans are priced (as block_cost prices them alone), others inf;
    DP on that table is no worse than either built-in plan."""
    from paleozoic.optimize import SearchSpace
    from paleozoic.optimize.base import CostLookup
    from paleozoic.optimize.dp import solve
    from paleozoic.optimize.measured import MeasuredOracle
    from paleozoic.optimize.oracle import plan_spans
    from paleozoic.optimize.plans import fuse_all, per_layer

    cost = MeasuredOracle(queue, repeats=1, max_block=3)
    mps = (1, 2)
    table = cost.cost_table(mps)
    space = SearchSpace.from_queue(queue, mps=mps)
    n = space.n
    assert table.shape == (n, n + 1, 2)
    built_in = {s[:3] for make in (per_layer, fuse_all) for mp in mps
                for s in plan_spans(make(queue, mp=mp), queue)}
    alone = MeasuredOracle(queue, repeats=1)
    for start in range(n):
        for stop in range(start + 1, n + 1):
            for k, mp in enumerate(mps):
                priced = space.allows(start, stop) and (
                    stop - start <= 3 or (start, stop, mp) in built_in)
                assert np.isfinite(table[start, stop, k]) == priced, (start, stop, mp)
    for span in [(0, 2, 2), (3, 6, 1)]:
        if space.allows(*span[:2]):
            assert table[span[0], span[1], mps.index(span[2])] == pytest.approx(
                alone.block_cost(*span), rel=1e-4)
    total, _ = solve(CostLookup(space, cost), space)
    for make in (per_layer, fuse_all):
        for mp in mps:
            spans = plan_spans(make(queue, mp=mp), queue)
            assert total <= sum(table[s, e, mps.index(m)] for s, e, m, _ in spans) + 1e-6


@pytest.mark.parametrize("lead, kept", [(0.05, "annealing"), (0.02, "fuse-all"),
                                        (-0.10, "fuse-all")])
def test_confirm_keeps_a_searched_plan_only_on_a_clear_lead(queue, monkeypatch, lead: float,
                                                            kept: str) -> None:
    """Whole-forward check of a measured search (fake sessions on a fake clock): the
    searched plan must beat the faster built-in plan by more than the 3% margin (the spread
    between two sessions of one plan); per-layer, slowest here, never wins."""
    from paleozoic.optimize import measured
    from paleozoic.optimize.plans import fuse_all, per_layer

    clock = [0.0]
    forward_s = {"fuse-all": 1.0, "per-layer": 1.5, "annealing": 1.0 - lead}

    class FakeSession:
        def __init__(self, seconds: float, blocks: int) -> None:
            self.seconds, self.blocks = seconds, blocks

        def run(self) -> None:
            clock[0] += self.seconds

        def block_micros(self) -> list[float]:  # the table's costs of a built-in plan kept
            return [self.seconds * 1e6 / self.blocks] * self.blocks

    searched = per_layer(queue, mp=1)  # any plan unlike both built-ins at MP 2
    searched.blocks[0].fuse, searched.strategy = True, "annealing"
    searched.blocks[0].layers += searched.blocks[1].layers
    del searched.blocks[1]
    plans = {"fuse-all": fuse_all(queue, mp=2), "per-layer": per_layer(queue, mp=2),
             "annealing": searched}

    def fake_session(queue_, spans, bench, fused=None):
        for name, plan in plans.items():
            if [s[:3] for s in plan_spans(plan, queue)] == spans:
                return FakeSession(forward_s[name], len(spans))
        return FakeSession(1.0, len(spans))  # a block priced for the plan kept

    monkeypatch.setattr(measured, "plan_session", fake_session)
    monkeypatch.setattr(measured.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(measured.os, "cpu_count", lambda: 2)
    oracle = measured.MeasuredOracle(queue, repeats=2)
    chosen = oracle.confirm(searched, mp=2)
    assert chosen.strategy == kept
    assert chosen.notes["whole_plan_us"] == pytest.approx(
        {name: s * 1e6 for name, s in forward_s.items()})
    if chosen is not searched:  # priced from the oracle's table, as run_optimizer does
        assert chosen.notes["cost_us"] > 0


def test_guided_measurement_finds_the_model_optimum_and_a_warm_store_measures_nothing(
        queue, oracle, tmp_path) -> None:
    """On the mock the board is the device model, so a guided search must land on the
    model's own optimum (same plan as DP on the device model) while measuring a small part
    of the table; a second run over the same store file measures no block again."""
    from paleozoic.optimize import SearchSpace
    from paleozoic.optimize.base import CostLookup
    from paleozoic.optimize.dp import solve
    from paleozoic.optimize.measured import MeasuredOracle
    from paleozoic.optimize.measurements import MeasurementStore

    mps = (1, 2, 4, 8, 16, 32)
    space = SearchSpace.from_queue(queue, mps=mps)
    path = tmp_path / "timings.jsonl"
    guided = MeasuredOracle(queue, guided=True, store=MeasurementStore(path))
    calls: list[tuple[int, int]] = []
    guided.measuring = lambda done, total: calls.append((done, total))
    table = guided.cost_table(mps)
    assert 0 < guided.measured < np.isfinite(oracle.cost_table(mps)).sum() // 4
    # Progress from nothing to every layer of the blocks timed, one call per session.
    assert calls[0][0] == 0 and len(calls) == guided.sessions + 1
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert calls[-1][0] == calls[-1][1] >= guided.measured
    assert {total for _, total in calls} == {calls[-1][1]}
    assert solve(CostLookup(space, guided), space) == pytest.approx(
        solve(CostLookup(space, oracle), space))
    again = MeasuredOracle(queue, guided=True, store=MeasurementStore(path))
    assert np.array_equal(again.cost_table(mps), table)
    assert again.measured == 0 and again.sessions == 0


def test_guidance_is_refused_for_a_board_the_model_does_not_describe(queue) -> None:
    from paleozoic.optimize.measured import MeasuredOracle

    with pytest.raises(ValueError, match="describes the mock"):
        MeasuredOracle(queue, sdk="onednn", guided=True)


def test_sessions_are_bounded_by_layers_blocks_and_weight_bytes(monkeypatch) -> None:
    from paleozoic.optimize import measured

    monkeypatch.setattr(measured, "SESSION_LAYERS", 10)
    monkeypatch.setattr(measured, "SESSION_BLOCKS", 3)
    monkeypatch.setattr(measured, "SESSION_WEIGHT_BYTES", 100)
    weight_bytes = [0] * 30
    weight_bytes[20] = 60  # layer 20 holds a large filter; layer 25 one past the bound
    weight_bytes[25] = 150
    spans = [(0, 12, 1),                                  # longer than a session: alone
             (0, 4, 1), (4, 8, 1), (8, 10, 1), (10, 11, 1),  # 10 layers, then 1 more
             (0, 2, 1), (2, 4, 1), (4, 6, 1),             # three blocks at the most
             (19, 21, 1), (19, 21, 2), (20, 21, 4),       # 60 bytes each: one per session
             (25, 26, 1), (26, 27, 1)]                    # 150 bytes: alone
    groups = measured._sessions_of(spans, 1, weight_bytes)
    assert [s for g in groups for s in g] == spans  # each once, in order
    assert groups == [[(0, 12, 1)], [(0, 4, 1), (4, 8, 1), (8, 10, 1)],
                      [(10, 11, 1), (0, 2, 1), (2, 4, 1)], [(4, 6, 1), (19, 21, 1)],
                      [(19, 21, 2)], [(20, 21, 4)], [(25, 26, 1)], [(26, 27, 1)]]
    assert all(sum(weight_bytes[i] for a, b, _ in g for i in range(a, b)) <= 100
               for g in groups if len(g) > 1)
