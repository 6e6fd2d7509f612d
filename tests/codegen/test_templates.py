"""Every layer kind of the registry has a template, a wrapper class, a pybind binding and a
kernel test, so adding a kind cannot silently skip one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from paleozoic import _runtime as rt
from paleozoic.codegen.environment import template_dir
from paleozoic.ops import KINDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_has_all_four_parts(kind: str) -> None:
    spec = KINDS[kind]
    template = template_dir() / "layers" / f"{spec.template}.cpp.j2"
    assert template.is_file()
    text = template.read_text()
    assert "macro construct" in text
    assert ("macro configure" in text) == bool(spec.weight_roles)
    header = (ROOT / "runtime_cpp/include/paleozoic/runtime.h").read_text()
    assert f"class {spec.cpp_class.removeprefix('pz::')} " in header
    assert hasattr(rt.Session, spec.binding)
    tests = "".join(p.read_text() for p in (ROOT / "tests/runtime").glob("test_*.py"))
    assert f".{spec.binding}(" in tests
