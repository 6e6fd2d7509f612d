"""The knob table of benchmarks/paper_eval.py (paper Table 4) reflects the code: a knob is
marked supported only when tests that exercise it exist."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _knobs() -> list:
    spec = importlib.util.spec_from_file_location("paper_eval", ROOT / "benchmarks/paper_eval.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["paper_eval"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.KNOBS


def test_supported_knobs_name_existing_tests() -> None:
    for knob, _cnrt, _cnml, ours, tests, _note in _knobs():
        assert (ours == "yes") == bool(tests), f"{knob}: 'yes' needs tests, and only then"
        for test_id in tests:
            path, _, name = test_id.partition("::")
            source = (ROOT / path).read_text()
            assert re.search(rf"^def {name}\(", source, re.M), f"{knob}: {test_id} missing"


def test_unsupported_knobs_are_unused_in_codegen() -> None:
    """Sparsity, unsupported, is in no template."""
    templates = "".join(p.read_text() for p in (ROOT / "templates").rglob("*.j2"))
    assert "sparsity" not in templates.lower()
