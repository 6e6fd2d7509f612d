"""debug --fix: a fusion fault fixed by taking the one faulty layer out of its fused block,
the refusal when even all-fp32 unfused misses the budget, and the atomic write."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from debug_helpers import corrupt_filter, write_plan
from test_analyse import BRANCH_FUSED

import paleozoic.accuracy.debug.runner as runner
from paleozoic.cli import main
from paleozoic.accuracy.debug import Budget, apply_changes, fix_plan, load_folder, measure
from paleozoic.accuracy.debug.data import load_batches
from paleozoic.accuracy.debug.fix import _Changes
from paleozoic.accuracy.debug.onnx_tensors import OnnxReference
from paleozoic.errors import BudgetError
from paleozoic.ir import Plan
from paleozoic.optimize import fusible_kinds
from paleozoic.pipeline import compile_model


@pytest.fixture
def fusion_fault(monkeypatch: pytest.MonkeyPatch):
    """The runtime computes b_conv wrongly (one filter negated) whenever it is fused with
    other layers: a stand-in for a fusion bug, the one fault an fp32 plan can fix."""
    original = runner._build_blocks

    def faulty(queue, plan, session, quantization=None):
        if any(b.fuse and len(b.layers) > 1 and "b_conv" in b.layers for b in plan.blocks):
            queue = copy.copy(queue)
            queue.weights = dict(queue.weights)
            w = queue.weights["b_conv.weight"].copy()
            w[0] *= -1.0
            queue.weights["b_conv.weight"] = w
        return original(queue, plan, session, quantization)

    monkeypatch.setattr(runner, "_build_blocks", faulty)


def _setup(tmp_path: Path, branch_path: Path, branch_data: Path):
    out = compile_model(branch_path, tmp_path / "s", plan="per-layer")
    write_plan(out, BRANCH_FUSED)
    folder = load_folder(out)
    batches, source = load_batches(folder, [str(branch_data)], seed=0)
    reference = OnnxReference(folder.model, folder.queue, only=folder.queue.outputs)
    return out, folder, batches, source, [reference.run(f) for f in batches]


def test_fusion_fault_fixed_by_unfusing_one_layer(tmp_path: Path, branch_path: Path,
                                                   branch_data: Path, fusion_fault) -> None:
    out, folder, batches, source, truths = _setup(tmp_path, branch_path, branch_data)
    budget = Budget("sqnr", 80.0)
    report = measure(folder, batches, source, budget=budget)
    assert report.first_jump == "mid" and not report.meets_budget
    assert report.first_jump_layer is None  # alone, b_conv is right: a fusion fault
    result = fix_plan(folder, report, batches, truths, budget)
    assert result.moves == ["b_conv: out of fused block mid"]
    blocks = [(b.name, b.layers, b.fuse) for b in result.plan.blocks]
    assert blocks == [("stem", ["stem_conv", "stem_relu", "stem_pool"], True),
                      ("mid", ["a_conv"], True), ("mid_1", ["b_conv"], False),
                      ("mid_2", ["a_relu", "join_add"], True), BRANCH_FUSED[2]]
    result.plan.validate(folder.queue, fusible_kinds())
    assert min(result.outputs.values()) > 120.0
    fixed = measure(folder, batches, source, budget=budget, plan=result.plan)
    assert fixed.meets_budget and fixed.first_jump is None


def test_cli_fix_writes_the_plan_atomically(tmp_path: Path, branch_path: Path,
                                            branch_data: Path, fusion_fault,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out, *_ = _setup(tmp_path, branch_path, branch_data)
    fixed, report = tmp_path / "fixed.json", tmp_path / "report.json"
    assert main(["debug", str(out), "--data", str(branch_data), "--budget-sqnr", "80",
                 "--fix", str(fixed), "--json", str(report)]) == 0
    text = capsys.readouterr().out
    assert "b_conv: out of fused block mid" in text
    plan = Plan.load(fixed)
    assert [b.name for b in plan.blocks][:2] == ["stem", "mid"]
    assert plan.notes["debug_fix"]["moves"] == ["b_conv: out of fused block mid"]
    data = json.loads(report.read_text())
    assert data["first_jump"] == "mid" and data["fix"]["moves"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "branch.onnx", "data", "fixed.json", "report.json", "s"]  # no temporary left
    # An existing file is kept without --force.
    before = fixed.read_text()
    assert main(["debug", str(out), "--data", str(branch_data), "--budget-sqnr", "80",
                 "--fix", str(fixed)]) == 6
    assert fixed.read_text() == before and "--force" in capsys.readouterr().err


def test_cannot_meet_budget_writes_nothing(tmp_path: Path, branch_path: Path,
                                           branch_data: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out, folder, batches, source, truths = _setup(tmp_path, branch_path, branch_data)
    corrupt_filter(out, "head_conv")  # wrong numbers no plan can mend
    folder = load_folder(out)
    budget = Budget("sqnr", 60.0)
    report = measure(folder, batches, source, budget=budget)
    with pytest.raises(BudgetError, match="even every layer in fp32 and unfused"):
        fix_plan(folder, report, batches, truths, budget)
    fixed, report_path = tmp_path / "fixed.json", tmp_path / "r.json"
    code = main(["debug", str(out), "--data", str(branch_data), "--budget-cosine",
                 "0.9999", "--fix", str(fixed), "--json", str(report_path)])
    assert code == 10
    assert "nothing written" in capsys.readouterr().err
    assert not fixed.exists() and not report_path.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_plan_already_meeting_the_budget_is_unchanged(tmp_path: Path, branch_path: Path,
                                                      branch_data: Path) -> None:
    out, folder, batches, source, truths = _setup(tmp_path, branch_path, branch_data)
    budget = Budget("cosine", 0.999999)
    report = measure(folder, batches, source, budget=budget)
    result = fix_plan(folder, report, batches, truths, budget)
    assert result.moves == [] and result.plan.to_dict()["blocks"] == \
        folder.plan.to_dict()["blocks"]


def test_apply_changes_splits_and_raises_precision(tmp_path: Path, branch_path: Path) -> None:
    from paleozoic.ir.plan import Precision

    out = compile_model(branch_path, tmp_path / "s", plan="per-layer")
    write_plan(out, BRANCH_FUSED)
    plan = load_folder(out).plan
    for block in plan.blocks:
        block.precision = Precision.INT8
    changed = apply_changes(plan, _Changes({"a_conv": Precision.FP16},
                                           {"join_add", "stem_conv"}))
    rows = [(b.name, b.layers, b.fuse, b.precision.value,
             {k: v.value for k, v in b.layer_precision.items()}) for b in changed.blocks]
    assert rows == [
        ("stem", ["stem_conv"], False, "int8", {}),
        ("stem_1", ["stem_relu", "stem_pool"], True, "int8", {}),
        ("mid", ["a_conv", "b_conv", "a_relu"], True, "int8", {"a_conv": "fp16"}),
        ("mid_1", ["join_add"], False, "int8", {}),
        ("head", BRANCH_FUSED[2][1], True, "int8", {})]
    assert np.all([b.mp == 4 for b in changed.blocks])
