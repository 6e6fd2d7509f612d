"""Precision as a third knob (issue 12, item 4): DP is exact over cuts, MPs and precisions;
greedy, annealing and the fixed plans emit precisions; oracles and optimizers written
before precisions existed still run unchanged."""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from fakes import EXAMPLES, PrecisionFake, TableFake, random_precision_table, random_table
from paleozoic.errors import OptimizerError
from paleozoic.ir import Plan, PlannedBlock
from paleozoic.ir.plan import Precision
from paleozoic.optimize import (
    CostLookup, Optimizer, SearchSpace, TableOracle, load_optimizer, plan_cost, run_optimizer,
    spans_to_plan,
)
from paleozoic.optimize.dp import solve
from paleozoic.optimize.oracle import price, span_parts

FP32, FP16, INT8 = Precision.FP32, Precision.FP16, Precision.INT8
ALL = (FP32, FP16, INT8)
MPS = (1, 4)


def cuttings(space: SearchSpace):
    n = space.n
    for cuts in itertools.product((False, True), repeat=n - 1):
        bounds = [0] + [c + 1 for c, cut in enumerate(cuts) if cut] + [n]
        blocks = list(zip(bounds, bounds[1:]))
        if all(space.allows(a, b) for a, b in blocks):
            yield blocks


def brute_force(cost, space: SearchSpace) -> float:
    """Every cutting times every (mp, precision) per block, enumerated in full."""
    best = np.inf
    for blocks in cuttings(space):
        for choice in itertools.product(space.choices, repeat=len(blocks)):
            best = min(best, sum(price(cost, a, b, mp, p)
                                 for (a, b), (mp, p) in zip(blocks, choice)))
    return best


@pytest.mark.parametrize("n", [1, 2, 4, 5])
@pytest.mark.parametrize("with_table", [True, False])
def test_dp_with_precisions_equals_brute_force(n: int, with_table: bool) -> None:
    table = random_precision_table(n, MPS, ALL, seed=n)
    cost = (TableOracle(table, MPS, precisions=ALL) if with_table
            else PrecisionFake(table, MPS, ALL))
    fusible = tuple(i != 2 for i in range(n))
    space = SearchSpace(n, fusible, MPS, precisions=ALL)
    total, spans = solve(CostLookup(space, cost), space)
    assert total == pytest.approx(brute_force(cost, space), rel=1e-9)
    assert sum(price(cost, *span_parts(s)) for s in spans) == pytest.approx(total, rel=1e-9)
    # fp32 spans keep the old three-value form; others carry their precision
    assert all(len(s) == 3 if span_parts(s)[3] == FP32 else len(s) == 4 for s in spans)


def test_fp32_only_space_is_unchanged() -> None:
    n = 8
    table = random_precision_table(n, MPS, ALL, seed=3)
    wide = TableOracle(table, MPS, precisions=ALL)
    narrow = TableOracle(table[..., 0], MPS)
    space = SearchSpace(n, (True,) * n, MPS)
    assert solve(CostLookup(space, wide), space) == solve(CostLookup(space, narrow), space)
    assert space.choices == tuple((mp, FP32) for mp in MPS)


def test_precisions_make_plans_faster_and_size_grows() -> None:
    n = 12
    table = random_precision_table(n, MPS, ALL, seed=4)
    cost = TableOracle(table, MPS, precisions=ALL)
    fp32 = SearchSpace(n, (True,) * n, MPS)
    every = fp32.with_precisions(ALL)
    assert solve(CostLookup(every, cost), every)[0] < solve(CostLookup(fp32, cost), fp32)[0]
    assert every.size() > fp32.size()
    one = SearchSpace(1, (True,), MPS, precisions=ALL)
    assert one.size() == len(MPS) * 3


def test_space_validates_precisions() -> None:
    assert SearchSpace(2, (True, True), precisions=("fp32", "int8")).precisions == (FP32, INT8)
    with pytest.raises(ValueError, match="most precise first"):
        SearchSpace(2, (True, True), precisions=(INT8, FP32))
    with pytest.raises(ValueError, match="among"):
        SearchSpace(2, (True, True), precisions=("bf16",))


def _precision_queue_oracle(queue, seed: int = 0) -> TableOracle:
    n = len(queue.layers)
    mps = tuple(range(1, 33))
    return TableOracle(random_precision_table(n, mps, ALL, seed), mps, name="fake",
                       precisions=ALL)


@pytest.mark.parametrize("name", ["dp", "greedy", "annealing"])
def test_searches_emit_precisions(queue, name: str) -> None:
    cost = _precision_queue_oracle(queue)
    space = SearchSpace.from_queue(queue, precisions=ALL)
    plan = run_optimizer(load_optimizer(name, seed=1), queue, cost, space)
    assert {b.precision for b in plan.blocks} - {FP32}  # the fake makes lower precision pay
    assert plan.notes["cost_us"] == pytest.approx(plan_cost(plan, queue, cost))
    exact = run_optimizer(load_optimizer("dp"), queue, cost, space).notes["cost_us"]
    assert plan.notes["cost_us"] >= exact - 1e-9
    again = Plan.from_json(plan.to_json())
    assert [b.precision for b in again.blocks] == [b.precision for b in plan.blocks]


@pytest.mark.parametrize("name", ["per-layer", "fuse-all"])
def test_fixed_plans_take_a_precision(queue, name: str) -> None:
    cost = _precision_queue_oracle(queue)
    space = SearchSpace.from_queue(queue, precisions=ALL)
    default = run_optimizer(load_optimizer(name), queue, cost, space)
    assert {b.precision for b in default.blocks} == {FP32}
    int8 = run_optimizer(load_optimizer(name, precision="int8"), queue, cost, space)
    assert {b.precision for b in int8.blocks} == {INT8}
    best = run_optimizer(load_optimizer(name, precision="best"), queue, cost, space)
    assert best.notes["cost_us"] <= min(default.notes["cost_us"], int8.notes["cost_us"])


def test_spans_to_plan_sets_precision(queue) -> None:
    n = len(queue.layers)
    plan = spans_to_plan(queue, [(0, 2, 4), (2, 5, 8, FP16), (5, n, 1, "int8")], "x")
    assert [b.precision for b in plan.blocks] == [FP32, FP16, INT8]


# ---- what was written before precisions keeps working --------------------------------
class OldStyle(Optimizer):
    """A plug-in written against the fp32-only hook: three-value spans, mps indices."""

    name = "old-style"

    def optimize(self, queue, space, cost):
        lookup = CostLookup(space, cost)
        spans = [(i, i + 1, space.mps[lookup.best(i, i + 1)[1]]) for i in range(space.n)]
        for start, stop, mp in spans:  # unpacks three values, as old code does
            cost.block_cost(start, stop, mp)
        return spans_to_plan(queue, spans, self.name)


@pytest.mark.parametrize("spec", ["dp", "greedy", "annealing", "per-layer", "fuse-all",
                                  f"{EXAMPLES / 'my_annealing.py'}:MyAnnealing"])
def test_old_protocol_oracle_still_works(queue, spec: str) -> None:
    n = len(queue.layers)
    mps = tuple(range(1, 33))
    old = TableFake(random_table(n, mps, seed=2), mps)  # block_cost(start, stop, mp) only
    optimizer = load_optimizer(spec, seed=1)
    plan = run_optimizer(optimizer, queue, old)
    assert {b.precision for b in plan.blocks} == {FP32}
    if not optimizer.searches_precision:
        return  # it is narrowed to fp32 (test_old_optimizers_run_on_the_fp32_part)
    with pytest.raises(OptimizerError, match="prices fp32 only, not int8"):
        run_optimizer(load_optimizer(spec), queue, old,
                      SearchSpace.from_queue(queue, precisions=(FP32, INT8)))


@pytest.mark.parametrize("optimizer", [OldStyle(), "my_annealing", "cpsat"])
def test_old_optimizers_run_on_the_fp32_part(queue, optimizer, caplog) -> None:
    if optimizer == "cpsat":
        pytest.importorskip("ortools")
        optimizer = load_optimizer(f"{EXAMPLES / 'cpsat.py'}:CpSat")
    elif optimizer == "my_annealing":
        optimizer = load_optimizer(f"{EXAMPLES / 'my_annealing.py'}:MyAnnealing")
    cost = _precision_queue_oracle(queue)
    space = SearchSpace.from_queue(queue, precisions=ALL)
    with caplog.at_level(logging.WARNING):
        plan = run_optimizer(optimizer, queue, cost, space)
    assert {b.precision for b in plan.blocks} == {FP32}
    assert "does not search precisions" in caplog.text
    with pytest.raises(OptimizerError, match="leaves out fp32"):
        run_optimizer(optimizer, queue, cost, space.with_precisions((INT8,)))


def test_plan_precision_outside_space_is_rejected(queue) -> None:
    class Emits(Optimizer):
        name = "emits"
        searches_precision = True

        def optimize(self, q, space, cost):
            return Plan([PlannedBlock("block0", [layer.name for layer in q.layers], 32,
                                      precision=INT8)])

    cost = _precision_queue_oracle(queue)
    with pytest.raises(OptimizerError, match="precision is not one of"):
        run_optimizer(Emits(), queue, cost, SearchSpace.from_queue(queue,
                                                                  precisions=(FP32, FP16)))


def test_unfused_block_with_layer_overrides_is_priced_per_layer(queue) -> None:
    cost = _precision_queue_oracle(queue)
    names = [layer.name for layer in queue.layers]
    plan = Plan([PlannedBlock("block0", names[:3], 2, fuse=False, precision=INT8,
                              layer_precision={names[1]: FP16}),
                 PlannedBlock("block1", names[3:], 2, precision=FP16)])
    expected = (cost.block_cost(0, 1, 2, INT8) + cost.block_cost(1, 2, 2, FP16)
                + cost.block_cost(2, 3, 2, INT8) + cost.block_cost(3, len(names), 2, FP16))
    assert plan_cost(plan, queue, cost) == pytest.approx(expected)
    plan.blocks[1].layer_precision = {names[4]: FP32}
    with pytest.raises(ValueError, match="one precision"):
        plan_cost(plan, queue, cost)


# ---- CLI -------------------------------------------------------------------------------
def test_cli_tune_precisions(small_cnn_path: Path, tmp_path: Path, queue,
                             monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    from paleozoic import cli

    fake = _precision_queue_oracle(queue, seed=5)
    monkeypatch.setattr("paleozoic.optimize.oracles.make_oracle",
                        lambda *args, **kwargs: fake)
    out = tmp_path / "plan.json"
    assert cli.main(["tune", str(small_cnn_path), "--precisions", "int8,fp32,fp16",
                     "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "precision" in text
    data = json.loads(out.read_text())
    assert {b["precision"] for b in data["blocks"]} - {"fp32"}


def test_cli_rejects_unknown_precision(small_cnn_path: Path, tmp_path: Path) -> None:
    from paleozoic import cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(["tune", str(small_cnn_path), "--precisions", "fp8", "-o",
                  str(tmp_path / "x.json")])
    assert exit_.value.code == 2


def test_cli_tunes_precision_with_the_device_model(small_cnn_path: Path, tmp_path: Path
                                                   ) -> None:
    pytest.importorskip("paleozoic.optimize.device_cost")
    from paleozoic import cli
    from paleozoic.ir import Plan
    from paleozoic.optimize.device_cost import DeviceModelOracle
    from paleozoic.pipeline import load_queue

    fp32, mixed = tmp_path / "fp32.json", tmp_path / "mixed.json"
    assert cli.main(["tune", str(small_cnn_path), "-o", str(fp32)]) == 0
    assert cli.main(["tune", str(small_cnn_path), "--precisions", "fp32,fp16,int8",
                     "-o", str(mixed)]) == 0
    oracle = DeviceModelOracle(load_queue(str(small_cnn_path)))
    fast, slow = Plan.load(mixed), Plan.load(fp32)
    assert {b.precision for b in fast.blocks} - {FP32}
    assert oracle.plan_cost(fast) < oracle.plan_cost(slow)


def test_device_model_table_per_precision_matches_block_costs(small_cnn_path: Path) -> None:
    pytest.importorskip("paleozoic.optimize.device_cost")
    from paleozoic.ir.plan import Precision
    from paleozoic.optimize.device_cost import DeviceModelOracle
    from paleozoic.pipeline import load_queue

    oracle = DeviceModelOracle(load_queue(str(small_cnn_path)))
    precisions = (FP32, Precision.FP16, INT8)
    table = oracle.cost_table([1, 4], precisions=precisions)
    n = len(oracle.queue.layers)
    assert table.shape == (n, n + 1, 2, 3)
    for start, stop in [(0, 1), (0, 3), (1, n)]:
        for k, mp in enumerate([1, 4]):
            for p, precision in enumerate(precisions):
                assert table[start, stop, k, p] == pytest.approx(
                    oracle.block_cost(start, stop, mp, precision), rel=1e-6)  # float us
    # The first layer is a conv: int8 beats fp16 beats fp32 on it alone.
    assert table[0, 1, 0, 2] < table[0, 1, 0, 1] < table[0, 1, 0, 0]
