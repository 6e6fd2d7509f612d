"""`paleozoic debug` on the command line: the report, --layers, --json, and errors that
name the file, exit non-zero and write nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from debug_helpers import DIGITS

from paleozoic.cli import main
from paleozoic.pipeline import compile_model


@pytest.fixture
def digits_session(tmp_path: Path) -> Path:
    return compile_model(DIGITS / "digits_cnn.onnx", tmp_path / "s", plan="fuse-all")


def test_report_and_json(digits_session: Path, digits_data: Path, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.json"
    assert main(["debug", str(digits_session), "--data", str(digits_data), "--json",
                 str(report)]) == 0
    text = capsys.readouterr().out
    assert "output logits: SQNR 13" in text and "no jump" in text
    assert "/2/Conv" not in text  # layers collapsed by default
    assert all(len(line) <= 80 for line in text.splitlines())
    data = json.loads(report.read_text(), parse_constant=_not_json)
    assert data["batches"] == 16 and data["first_jump"] is None
    assert data["blocks"][0]["layers"][2]["onnx_nodes"] == ["/2/Conv"]
    # The first conv matches onnxruntime exactly or to fp32 rounding, by the build (see
    # test_digits_fp32_levels); exact, its SQNR is written "inf".
    first = data["blocks"][0]["layers"][0]["sqnr_db"]
    assert first == "inf" or (isinstance(first, float) and first > 140.0)
    assert main(["debug", str(digits_session), "--layers"]) == 0  # seeded data
    text = capsys.readouterr().out
    assert "ONNX node: /2/Conv" in text and "standard-normal data, seed 0" in text


def _not_json(constant: str) -> None:
    raise AssertionError(f"{constant} is not JSON: a strict reader refuses the report")


def test_a_report_writes_infinities_as_strings() -> None:
    from paleozoic.accuracy.debug.analyse import _json_safe

    safe = _json_safe({"sqnr_db": math.inf, "layers": [{"sqnr_db": -math.inf}, math.nan, 1.5]})
    assert safe == {"sqnr_db": "inf", "layers": [{"sqnr_db": "-inf"}, "nan", 1.5]}
    json.dumps(safe, allow_nan=False)


def _no_output(tmp_path: Path) -> list[str]:
    return ["--json", str(tmp_path / "r.json")]


def test_folder_without_session_json(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["debug", str(empty), *_no_output(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{empty}: no session.json" in err and "paleozoic compile" in err
    assert not (tmp_path / "r.json").exists()


def test_missing_data_file(digits_session: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.npy"
    assert main(["debug", str(digits_session), "--data", str(missing),
                 *_no_output(tmp_path)]) == 2
    assert f"{missing}: no such file or folder" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_wrong_input_shape(digits_session: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((1, 1, 7, 7), np.float32))
    assert main(["debug", str(digits_session), "--data", str(bad),
                 *_no_output(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "(1, 1, 7, 7)" in err and "(1, 1, 8, 8)" in err
    assert not (tmp_path / "r.json").exists()


def test_fix_needs_a_budget(digits_session: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["debug", str(digits_session), "--fix", str(tmp_path / "p.json")]) == 10
    assert "--budget-sqnr" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_budgets_exclude_each_other(digits_session: Path) -> None:
    with pytest.raises(SystemExit):
        main(["debug", str(digits_session), "--budget-sqnr", "30", "--budget-cosine", "0.9"])
