"""Every layer kind of the registry has its template snippet (construct, and configure
exactly when the kind has weights) and a wrapper factory, checked by loading the template
and the extension, not by searching their text. The wrapper class behind each binding is
built and checked against the kind in tests/ops/test_kind_runtime.py, and every emitted
session compiles against the wrapper in the e2e tests."""

from __future__ import annotations

import pytest

from paleozoic import _runtime as rt
from paleozoic.codegen.environment import make_environment
from paleozoic.ops import KINDS


@pytest.fixture(scope="module")
def env():
    return make_environment()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_has_its_template_and_binding(kind: str, env) -> None:
    spec = KINDS[kind]
    module = env.get_template(f"layers/{spec.template}.cpp.j2").module
    assert callable(getattr(module, "construct", None))
    assert callable(getattr(module, "configure", None)) == bool(spec.config_roles)
    assert spec.binding in {kind for kind, _, _ in rt.Session.layer_kinds()}
    assert spec.cpp_class.startswith("pz::") and spec.cpp_class.endswith("Layer")
