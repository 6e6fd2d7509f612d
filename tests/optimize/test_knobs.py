"""The knobs around any optimizer (paleozoic.optimize.knobs), as API users call them."""

from __future__ import annotations

import pytest

from paleozoic.errors import OptimizerError
from paleozoic.frontend import import_onnx
from paleozoic.optimize import load_optimizer, run_optimizer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.knobs import refuse_knobs, tune_with_knobs
from paleozoic.optimize.measured import MeasuredOracle
from paleozoic.optimize.space import SearchSpace
from paleozoic.passes import run_passes
from paleozoic_testing.blocks import googlenet_block


@pytest.fixture
def queue():
    return run_passes(import_onnx(googlenet_block(seed=3)))


def test_without_knobs_the_plan_is_the_optimizers(queue) -> None:
    def make(sparse, dp):
        return DeviceModelOracle(queue, sparse=sparse, data_parallelism=dp)

    space = SearchSpace.from_queue(queue)
    alone = run_optimizer(load_optimizer("greedy"), queue, make((), 1), space)
    tuned = tune_with_knobs(load_optimizer("greedy"), queue, space, (), make)
    assert tuned.plan.to_json() == alone.to_json() and tuned.lines == []
    staged = tune_with_knobs(load_optimizer("greedy"), queue, space, ("concat", "dp"), make)
    assert staged.plan.notes["cost_us"] <= alone.notes["cost_us"]
    assert any(line.startswith("stages: ") for line in staged.lines)
    staged.plan.validate(queue)


def test_knobs_the_oracle_cannot_price_are_refused_before_searching(queue) -> None:
    def measured(sparse, dp):
        return MeasuredOracle(queue, sparse=sparse, data_parallelism=dp)

    with pytest.raises(OptimizerError, match="cannot time blocks that run at once"):
        refuse_knobs({"concat"}, measured, wall_clock=False)
    with pytest.raises(OptimizerError, match="nothing to measure"):
        refuse_knobs({"dp"}, measured, wall_clock=True)
    with pytest.raises(OptimizerError, match="unknown knob"):
        refuse_knobs({"bogus"}, measured, wall_clock=False)
    with pytest.raises(OptimizerError, match="both are the host, so there is nothing to"):
        refuse_knobs({"balance"}, measured, wall_clock=True)
    refuse_knobs({"balance"}, measured, wall_clock=False)
    refuse_knobs({"dp", "sparsity"}, measured, wall_clock=False)
