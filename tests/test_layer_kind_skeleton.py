"""The layer-kind skeleton in docs/layer-kind-skeleton (the files docs/adding-a-layer-kind.md
tells a contributor to copy) stays in step with the code it imitates: its registry entry
works, its converter registers through the real decorators, its template renders with the
code generator's filters, and its wrapper class compiles against the wrapper's headers."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from paleozoic.codegen.environment import make_environment
from paleozoic.codegen.escape import Code
from paleozoic.frontend.convert import registry
from paleozoic.ops import KINDS, ShapeError

ROOT = Path(__file__).resolve().parents[1]
SKELETON = ROOT / "docs" / "layer-kind-skeleton"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"skeleton_{name}", SKELETON / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_registry_entry() -> None:
    kind = _load("example_kind").EXAMPLE
    assert kind.name not in KINDS  # the skeleton is not registered
    assert kind.complete_attrs({}) == {"axis": 1}
    assert kind.output_shape({}, [(1, 4, 5, 5)]) == (1, 4, 5, 5)
    with pytest.raises(ShapeError, match="axis 1 is not an axis"):
        kind.output_shape({}, [(4,)])


def test_converter_registers_its_onnx_operator_and_relax_converter(monkeypatch) -> None:
    converters: dict = {}
    onnx: dict = {}
    monkeypatch.setattr(registry, "converter",
                        lambda op: lambda fn: converters.setdefault(op, fn))
    monkeypatch.setattr(registry, "onnx_ops", onnx.update)
    module = _load("example_converter")
    assert onnx == {"Example": registry.OnnxOp("Example", weights=(1,))}
    assert converters == {"relax.nn.prelu": module.convert_example}


def test_template_renders() -> None:
    env = make_environment()
    macros = env.from_string((SKELETON / "example.cpp.j2").read_text()).module
    defaults = {"axis": 1}
    layer = SimpleNamespace(cpp_class="pz::ExampleLayer", ident="leaky", name="leaky",
                            inputs=["conv1.output()"], attrs={"axis": 3},
                            given=lambda name: layer.attrs[name] != defaults[name],
                            weight=lambda role: Code(f'weights.get("leaky.{role}", {{8}})'))
    assert str(macros.construct(layer)) == \
        'pz::ExampleLayer leaky{"leaky", conv1.output(), /*axis=*/3};'
    layer.attrs = {"axis": 1}  # the default is left out
    assert str(macros.construct(layer)) == 'pz::ExampleLayer leaky{"leaky", conv1.output()};'
    assert str(macros.configure(layer)) == 'leaky.configLayer(weights.get("leaky.slope", {8}));'


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_wrapper_class_compiles() -> None:
    runtime = ROOT / "runtime_cpp"
    result = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
         f"-I{SKELETON}", f"-I{runtime / 'wrapper'}", f"-I{runtime / 'include'}",
         f"-I{runtime / 'sdk' / 'include'}", str(SKELETON / "example_layer.cpp")],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
