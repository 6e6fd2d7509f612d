"""`paleozoic tune --accuracy-budget` on the trained digits CNN: sensitivities through the
runtime, the plan written meets its budget when run on held-out images, and budgets no plan
meets or missing inputs are refused with nothing written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from paleozoic.accuracy.tune import compare, outputs_on
from paleozoic.calibration.file import load_calibration
from paleozoic.calibration.params import layer_quantization
from paleozoic.cli import main
from paleozoic.errors import BudgetError
from paleozoic.ir import Plan
from paleozoic.pipeline import load_queue

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits"
MODEL = str(DIGITS / "digits_cnn.onnx")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("accuracy_tune")
    data = np.load(DIGITS / "digits_data.npz")
    out = {}
    for name, images in (("calib", data["calib_x"][:48]), ("holdout", data["test_x"][:64])):
        folder = root / name
        folder.mkdir()
        for i, image in enumerate(images):
            np.save(folder / f"{i:03d}.npy", image[None].astype(np.float32))
        out[name] = folder
    assert main(["calibrate", MODEL, "--data", str(out["calib"]), "-o",
                 str(root / "calib.json")]) == 0
    out["calib.json"] = root / "calib.json"
    return out


def test_compare_pools_over_batches() -> None:
    ref = [np.array([3.0, 4.0, 0.0], np.float32), np.array([0.0, 0.0, 5.0], np.float32)]
    ours = [np.array([3.0, 4.0, 1.0], np.float32), np.array([0.0, 0.0, 5.0], np.float32)]
    m = compare(ours, ref, (1, 3))
    assert m.sqnr_db == pytest.approx(10 * math.log10(50.0 / 1.0))
    assert m.top1 == 1.0
    assert m.cosine == pytest.approx(50.0 / math.sqrt(50.0 * 51.0))


@pytest.mark.parametrize("budget,metric,target", [("sqnr=35", "sqnr_db", 35.0),
                                                  ("top1=0.99", "top1", 0.99)])
def test_the_plan_written_meets_its_budget_on_held_out_data(folders, tmp_path: Path,
                                                            budget, metric, target) -> None:
    plan_path, sens = tmp_path / "plan.json", tmp_path / "sens.json"
    assert main(["tune", MODEL, "--calibration", str(folders["calib.json"]), "--data",
                 str(folders["calib"]), "--holdout", str(folders["holdout"]),
                 "--accuracy-budget", budget, "--sensitivities", str(sens),
                 "-o", str(plan_path)]) == 0
    plan = Plan.load(plan_path)
    assert plan.strategy == "accuracy-aware"
    assert plan.notes["measured"][metric] >= target
    assert json.loads(sens.read_text())  # kept for the next run
    # Run again here, independently of the tuner, on the held-out images.
    queue = load_queue(MODEL)
    quantization = layer_quantization(queue, load_calibration(folders["calib.json"], queue))
    batches = [[np.load(p)] for p in sorted(folders["holdout"].glob("*.npy"))]
    from paleozoic.accuracy.tune import uniform_plan
    got = compare(outputs_on(queue, plan, quantization, batches),
                  outputs_on(queue, uniform_plan(queue), quantization, batches), (1, 10))
    assert getattr(got, metric) >= target
    # Faster than fp32 under the device model: it did use reduced precision.
    assert {b.precision.value for b in plan.blocks} - {"fp32"}


def test_knobs_around_the_accuracy_checked_plan_keep_its_numbers(folders, tmp_path: Path,
                                                                   capsys) -> None:
    plan_path = tmp_path / "plan.json"
    assert main(["tune", MODEL, "--calibration", str(folders["calib.json"]), "--data",
                 str(folders["calib"]), "--holdout", str(folders["holdout"]),
                 "--accuracy-budget", "sqnr=35", "--knobs", "sparsity,dp,balance",
                 "-o", str(plan_path)]) == 0
    out = capsys.readouterr().out
    assert "sparse mode: 0 of 0 layer(s)" in out and "data parallelism: 1" in out
    assert "load balance:" in out
    plan = Plan.load(plan_path)
    assert plan.strategy == "accuracy-aware" and plan.notes["measured"]["sqnr_db"] >= 35
    queue = load_queue(MODEL)
    converted = {name for name in [queue.inputs[0].name, *queue.outputs]
                 if any(b.precision.value != "fp32" for b in plan.blocks)}
    assert set(plan.preprocess) <= converted
    # The knobs changed no number: the plan without them gives the same bits.
    quantization = layer_quantization(queue, load_calibration(folders["calib.json"], queue))
    batches = [[np.load(p)] for p in sorted(folders["holdout"].glob("*.npy"))[:8]]
    bare = Plan.from_dict({**plan.to_dict(), "preprocess": {}})
    for ours, theirs in zip(outputs_on(queue, plan, quantization, batches),
                            outputs_on(queue, bare, quantization, batches)):
        assert np.array_equal(ours, theirs)


def test_a_budget_no_plan_meets_is_refused_and_nothing_written(folders, tmp_path: Path,
                                                               capsys) -> None:
    plan_path = tmp_path / "plan.json"
    code = main(["tune", MODEL, "--calibration", str(folders["calib.json"]), "--data",
                 str(folders["calib"]), "--accuracy-budget", "top1=1.5", "-o", str(plan_path)])
    assert code == BudgetError.exit_code and not plan_path.exists()
    # fp32 matches itself exactly, so only an impossible agreement is out of reach.
    assert "even the most accurate plan misses top1 >= 1.5" in capsys.readouterr().err


def test_accuracy_budget_needs_calibration_and_data(tmp_path: Path, capsys) -> None:
    code = main(["tune", MODEL, "--accuracy-budget", "sqnr=30", "-o", str(tmp_path / "p")])
    assert code != 0 and "--accuracy-budget needs --calibration" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tune", MODEL, "--accuracy-budget", "psnr=30", "-o", str(tmp_path / "p")])
