"""Plans: JSON round trip without loss, and validation errors that name the block."""

from __future__ import annotations

import onnx
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.ir import Plan, PlanError, PlannedBlock
from paleozoic.optimize import fuse_all, per_layer
from paleozoic.passes import run_passes


@pytest.fixture
def queue(small_cnn: onnx.ModelProto):
    return run_passes(import_onnx(small_cnn))


def test_round_trip(queue) -> None:
    plan = fuse_all(queue)
    plan.blocks[0].mp = 7
    plan.notes = {"cost": 12.5}
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert again.to_json() == plan.to_json()


def test_builtin_plans_are_valid(queue) -> None:
    for plan in (per_layer(queue), fuse_all(queue)):
        plan.validate(queue)
    assert len(per_layer(queue).blocks) == len(queue.layers)
    assert [b.mp for b in fuse_all(queue).blocks] == [32]


def _names(queue) -> list[str]:
    return [layer.name for layer in queue.layers]


@pytest.mark.parametrize("mutate, message", [
    (lambda n: [PlannedBlock("a", n[:3], 1), PlannedBlock("b", n[3:], 0)],
     "block 'b': mp 0 is outside 1..32"),
    (lambda n: [PlannedBlock("a", n[:3], 1), PlannedBlock("b", n[3:], 33)],
     "mp 33 is outside"),
    (lambda n: [PlannedBlock("a", n[:3], 1), PlannedBlock("b", n[4:], 1)],
     "out of order"),
    (lambda n: [PlannedBlock("a", n[:3], 1), PlannedBlock("b", n[2:], 1)],
     "already in block 'a'"),
    (lambda n: [PlannedBlock("a", n[:-1], 1)], "missing from"),
    (lambda n: [PlannedBlock("a", n + ["ghost"], 1)], "'ghost' is not in the model"),
    (lambda n: [PlannedBlock("a", n[:2], 1), PlannedBlock("a", n[2:], 1)], "used twice"),
    (lambda n: [PlannedBlock("a-b", n, 1)], "C\\+\\+ identifier"),
    (lambda n: [], "no blocks"),
])
def test_validation_errors(queue, mutate, message) -> None:
    plan = Plan(mutate(_names(queue)))
    with pytest.raises(PlanError, match=message):
        plan.validate(queue)


def test_non_fusible_kind_must_stand_alone(queue) -> None:
    plan = fuse_all(queue)
    softmax = next(layer.kind for layer in queue.layers if layer.kind == "Softmax")
    with pytest.raises(PlanError, match="cannot join a fusion op"):
        plan.validate(queue, fusible={softmax: False})


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON"),
    ('{"format": "other"}', "not a Paleozoic plan"),
    ('{"format": "paleozoic-plan", "version": 9}', "version 9"),
    ('{"format": "paleozoic-plan", "version": 1, "blocks": [{"name": "b"}]}',
     "missing field"),
    ('{"format": "paleozoic-plan", "version": 1, "blocks": '
     '[{"name": "b", "layers": [], "mp": "4"}]}', "mp must be an integer"),
])
def test_bad_plan_files(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        Plan.from_json(text, "plan.json")


def test_precision_round_trips_and_defaults_to_fp32():
    from paleozoic.ir.plan import Plan, PlannedBlock, Precision
    plan = Plan([PlannedBlock("b0", ["a", "b"], mp=4, precision=Precision.INT8,
                              layer_precision={"b": Precision.FP16})])
    again = Plan.from_json(plan.to_json())
    assert again.blocks[0].precision is Precision.INT8
    assert again.blocks[0].precision_of("b") is Precision.FP16
    assert again.blocks[0].precision_of("a") is Precision.INT8
    data = plan.to_dict()
    del data["blocks"][0]["precision"]
    assert Plan.from_dict(data).blocks[0].precision is Precision.FP32


def test_bad_precision_is_refused_by_block_and_layer():
    import pytest
    from paleozoic.ir.plan import Plan, PlanError, PlannedBlock
    data = Plan([PlannedBlock("b0", ["a"], mp=1)]).to_dict()
    data["blocks"][0]["precision"] = "int4"
    with pytest.raises(PlanError, match=r"block 0 \('b0'\): precision 'int4' is not one of"):
        Plan.from_dict(data)
    data["blocks"][0]["precision"] = "fp16"
    data["blocks"][0]["layer_precision"] = {"a": "bf16"}
    with pytest.raises(PlanError, match=r"layer 'a': precision 'bf16'"):
        Plan.from_dict(data)
