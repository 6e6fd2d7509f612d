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


def test_sparse_layers_round_trip_and_are_written_only_when_set(queue) -> None:
    plan = fuse_all(queue)
    assert '"sparse"' not in plan.to_json()  # plans without the knob are unchanged
    convs = [layer.name for layer in queue.layers if layer.kind == "Conv"]
    plan.blocks[0].sparse = convs
    again = Plan.from_json(plan.to_json())
    assert again.blocks[0].sparse == convs and again == plan
    again.validate(queue)


@pytest.mark.parametrize("pick, message", [
    (lambda q: ["ghost"], "sparse names 'ghost', which is not a layer of this block"),
    (lambda q: [q.layers[-1].name], "no sparse mode"),  # the Softmax
    (lambda q: [next(l.name for l in q.layers if l.kind == "Conv")] * 2, "twice"),
])
def test_sparse_validation_names_the_layer(queue, pick, message) -> None:
    plan = fuse_all(queue)
    plan.blocks[0].sparse = pick(queue)
    with pytest.raises(PlanError, match=message):
        plan.validate(queue)
    with pytest.raises(PlanError, match="must be a list"):
        Plan.from_json(plan.to_json().replace('"sparse": [', '"sparse": "x", "_": ['))


def test_sparse_is_refused_for_group_and_uneven_pads() -> None:
    from paleozoic.ops import KINDS

    conv = KINDS["Conv"]
    base = {"out_channels": 8, "kernel": [3, 3], "stride": [1, 1], "dilation": [1, 1]}
    assert conv.sparse_refused({**base, "pads": [1, 1, 1, 1], "groups": 1}) is None
    assert "groups" in conv.sparse_refused({**base, "pads": [1, 1, 1, 1], "groups": 2})
    assert "0,1,0,1" in conv.sparse_refused({**base, "pads": [0, 1, 0, 1], "groups": 1})
    assert KINDS["FullyConnected"].sparse_refused({"out_features": 4}) is None
