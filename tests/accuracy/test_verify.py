"""paleozoic verify: the user's own data, the metrics, and how the verdict is reached (an
output outside rtol/atol of onnxruntime is judged on its error against float64)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from paleozoic.cli import main
from paleozoic.accuracy.verify import FP32_FLOOR, ULP, _judge_on_truth, compare, truth_limit


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from helpers import small_cnn_model

    folder = tmp_path_factory.mktemp("verify")
    path = folder / "small_cnn.onnx"
    onnx.save(small_cnn_model(), str(path))
    out = folder / "session"
    assert main(["compile", str(path), "-o", str(out)]) == 0
    assert main(["build", str(out)]) == 0
    return path, out


def test_user_data_and_json_report(built, tmp_path: Path, capsys) -> None:
    _, out = built
    x = (np.random.default_rng(5).standard_normal((1, 3, 16, 16)) * 50).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    report = tmp_path / "report.json"
    assert main(["verify", str(out), "--input", f"x={tmp_path / 'x.npy'}",
                 "--json", str(report), "--float64"]) == 0
    text = capsys.readouterr().out
    assert "inputs: user data" in text and "SQNR dB" in text and "float64" in text
    data = json.loads(report.read_text())
    (output,) = data["outputs"]
    assert data["passed"] and data["float64"] == "run"
    assert output["top1"] == 1.0 and output["cosine"] > 0.999999
    assert output["truth_error"] <= truth_limit(output["ort_truth_error"],
                                                output["ort_plain_truth_error"])
    # A folder of NAME.npy files is the same data.
    assert main(["verify", str(out), "--input", str(tmp_path)]) == 0


@pytest.mark.parametrize("spec, message", [
    ("y={npy}", "has no input of that name"),
    ("x={bad_shape}", "does not match the session's input shape"),
    ("x={missing}", "no such file"),
])
def test_bad_user_data_is_refused_by_name(built, tmp_path: Path, capsys, spec: str,
                                         message: str) -> None:
    _, out = built
    np.save(tmp_path / "ok.npy", np.zeros((1, 3, 16, 16), np.float32))
    np.save(tmp_path / "wrong.npy", np.zeros((1, 3, 8, 8), np.float32))
    spec = spec.format(npy=tmp_path / "ok.npy", bad_shape=tmp_path / "wrong.npy",
                       missing=tmp_path / "none.npy")
    assert main(["verify", str(out), "--input", spec]) == 2
    assert message in capsys.readouterr().err


def test_uniform_distribution_is_selectable(built, capsys) -> None:
    _, out = built
    assert main(["verify", str(out), "--distribution", "uniform", "--seed", "2"]) == 0
    assert "seeded uniform, seed 2" in capsys.readouterr().out


def test_metrics() -> None:
    ref = np.array([[0.1, 2.0, -1.0]], np.float32)
    ours = ref + np.float32(1e-3)
    check = compare("y", ours, ref)
    assert check.top1 == 1.0
    assert check.max_abs == pytest.approx(1e-3, rel=1e-3)
    want_sqnr = 10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / (3 * 1e-6))
    assert check.sqnr_db == pytest.approx(want_sqnr, abs=0.01)
    assert 0.999 < check.cosine < 1.0
    assert compare("y", np.roll(ref, 1, axis=1), ref).top1 == 0.0
    assert compare("y", np.full_like(ref, np.nan), ref).rule == "non-finite"


def _judged(ours: float, ort: float, plain: float) -> bool:
    truth = np.array([1.0, -2.0, 4.0])
    outputs = [np.float32(truth + e) for e in (ours, ort, plain)]
    check = compare("y", outputs[0], outputs[1])
    check.passed = False   # as when outside rtol/atol
    _judge_on_truth([check], [outputs[0]], [truth], [outputs[1]], [outputs[2]],
                    only_failed=True)
    assert check.rule == "float64" and "float64" in check.note
    return check.passed


def test_truth_decides_when_onnxruntime_disagrees() -> None:
    # Closer to the truth than onnxruntime: passes however far from onnxruntime.
    assert _judged(1e-3, 4e-3, 5e-3)
    # Within 2x the larger of onnxruntime's two errors: passes.
    assert _judged(9e-3, 5e-3, 1e-3)
    # Large against the truth while onnxruntime's two modes agree with each other: the
    # old noise rule could not see this; the truth does.
    assert not _judged(4e-2, 5e-3, 5e-3)


def test_fp32_floor_keeps_the_verdict_off_onnxruntime_luck() -> None:
    """Errors of a few fp32 units pass whatever onnxruntime's own (tiny) error was; above
    the floor, the 2x rule decides."""
    assert truth_limit(0.0, 0.0) == FP32_FLOOR == 16 * ULP
    assert truth_limit(1e-5, 2e-5) == pytest.approx(4e-5 + ULP)
    # 8 units at a largest value of 4 (the case's scale): onnxruntime exact, still a pass.
    assert _judged(4 * 8 * ULP, 0.0, 0.0)
    assert not _judged(4 * 20 * ULP, 0.0, 0.0)
