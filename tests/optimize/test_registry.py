"""Loading optimizers: built-in name, module:Class, file.py:Class, entry point, unknown."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from fakes import EXAMPLES
from paleozoic.errors import OptimizerError
from paleozoic.optimize import BUILTIN_OPTIMIZERS, Optimizer, load_optimizer
from paleozoic.optimize.dp import DynamicProgramming


def test_every_builtin_loads_by_name() -> None:
    for name in BUILTIN_OPTIMIZERS:
        optimizer = load_optimizer(name, seed=3)
        assert isinstance(optimizer, Optimizer) and optimizer.name == name
        assert optimizer.seed == 3


def test_module_class() -> None:
    assert isinstance(load_optimizer("paleozoic.optimize.dp:DynamicProgramming"),
                      DynamicProgramming)


def test_file_class() -> None:
    optimizer = load_optimizer(f"{EXAMPLES / 'my_annealing.py'}:MyAnnealing", iterations=5)
    assert optimizer.name == "my-annealing" and optimizer.options == {"iterations": 5}


def test_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    point = importlib.metadata.EntryPoint(
        name="third-party", value="paleozoic.optimize.greedy:Greedy",
        group="paleozoic.optimizers")

    def entry_points(**kwargs):
        assert kwargs == {"group": "paleozoic.optimizers"}
        return importlib.metadata.EntryPoints([point])

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert load_optimizer("third-party").name == "greedy"
    with pytest.raises(OptimizerError, match="third-party"):  # listed among known names
        load_optimizer("nope")


def test_unknown_name_lists_known() -> None:
    with pytest.raises(OptimizerError) as err:
        load_optimizer("simulated-anneling")
    for name in BUILTIN_OPTIMIZERS:
        assert name in str(err.value)


@pytest.mark.parametrize("spec, message", [
    ("no.such.module:X", "cannot import module"),
    ("paleozoic.optimize.dp:Missing", "has no attribute 'Missing'"),
    ("paleozoic.optimize.base:spans_to_plan", "not a subclass"),
    ("missing_file.py:X", "no such file"),
])
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(OptimizerError, match=message):
        load_optimizer(spec)


def test_unknown_option_is_an_error() -> None:
    with pytest.raises(OptimizerError, match="no option"):
        load_optimizer("dp", iterations=3)


def test_bad_file_reports_import_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(OptimizerError, match="boom"):
        load_optimizer(f"{bad}:X")
