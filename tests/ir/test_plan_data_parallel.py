"""The plan's data parallelism: written only when set, and refused where the SDK would
refuse it (cores, batch, recurrent steps), naming the block or layer."""

from __future__ import annotations

import onnx
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.ir import Plan, PlanError
from paleozoic.ir.plan import data_parallelism_choices, with_data_parallelism
from paleozoic.optimize import fuse_all, per_layer
from paleozoic.passes import run_passes


def batched(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with a symbolic batch axis on its inputs and outputs."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    return model


@pytest.fixture
def queue4(small_cnn: onnx.ModelProto):
    return run_passes(import_onnx(batched(small_cnn), batch=4))


def test_round_trip_writes_the_field_only_when_set(queue4) -> None:
    plan = per_layer(queue4)
    assert "data_parallelism" not in plan.to_json()  # plans without the knob are unchanged
    plan.data_parallelism = 4
    again = Plan.from_json(plan.to_json())
    assert again.data_parallelism == 4 and again == plan
    again.validate(queue4)
    with pytest.raises(PlanError, match="data_parallelism must be an integer"):
        Plan.from_json(plan.to_json().replace('"data_parallelism": 4', '"data_parallelism": "4"'))


def test_choices_are_the_batch_divisors(queue4) -> None:
    assert data_parallelism_choices(queue4) == [1, 2, 4]


@pytest.mark.parametrize("dp, mp, message", [
    (2, 32, r"block 'block0': mp 32 x data_parallelism 2 needs 64 cores.*at most 16"),
    (3, 1, r"data_parallelism 3 does not divide the batch 4 \(input 'x'\)"),
    (0, 1, r"data_parallelism 0 is outside 1..32"),
])
def test_refusals_name_the_fix(queue4, dp, mp, message) -> None:
    plan = fuse_all(queue4)
    plan.blocks[0].mp = mp
    plan.data_parallelism = dp
    with pytest.raises(PlanError, match=message):
        plan.validate(queue4)


def test_with_data_parallelism_lowers_mps_to_fit(queue4) -> None:
    plan = with_data_parallelism(fuse_all(queue4), 4)
    assert plan.data_parallelism == 4 and [b.mp for b in plan.blocks] == [8]
    plan.validate(queue4)


def test_recurrent_models_keep_one_group() -> None:
    # Batch-first, batch 4: the batch would split, but a recurrent layer's steps are ops on
    # slices of the sequence, which the SDK would split along time.
    from paleozoic_testing.recurrent import recurrent_stack

    model, _ = recurrent_stack("LSTM", layout=1, batch=4)
    queue = run_passes(import_onnx(model))
    assert data_parallelism_choices(queue) == [1]
    plan = per_layer(queue)
    plan.data_parallelism = 2
    with pytest.raises(PlanError, match=r"\(Lstm\) runs its steps as ops over slices"):
        plan.validate(queue)
