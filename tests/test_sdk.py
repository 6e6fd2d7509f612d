"""SDK selection (paleozoic.sdk): names, the folder's memory of its build, the error when
the oneDNN SDK was not built, and the CLI options that take an SDK."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from paleozoic import sdk
from paleozoic.cli import main
from paleozoic.errors import BuildError


def test_unknown_sdk_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown SDK 'cuda'"):
        sdk.check_sdk("cuda")
    assert sdk.cmake_target("mock") == "Paleozoic::runtime"
    assert sdk.cmake_target("onednn") == "Paleozoic::runtime_onednn"


def test_folder_remembers_its_sdk(tmp_path: Path) -> None:
    assert sdk.built_sdk(tmp_path) == "mock"  # never built: the mock, the default
    (tmp_path / "build").mkdir()
    sdk.remember_sdk(tmp_path, "onednn")
    assert sdk.built_sdk(tmp_path) == "onednn"


def test_missing_onednn_module_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def fake(name: str, *args: object) -> object:
        if name == "paleozoic._runtime_onednn":
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(BuildError, match=r"pip install 'paleozoic\[onednn\]'"):
        sdk.runtime_module("onednn")
    assert not sdk.sdk_available("onednn")
    assert sdk.sdk_available("mock")


def test_tune_sdk_needs_measured_costs(tmp_path: Path, small_cnn_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["tune", str(small_cnn_path), "-o", str(tmp_path / "plan.json"),
                 "--sdk", "onednn"])
    assert code != 0
    assert "needs --cost measured" in capsys.readouterr().err
    assert not (tmp_path / "plan.json").exists()
