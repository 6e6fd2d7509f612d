"""End to end on the nine classic CNNs of the onnx wheel, under both built-in plans:
compile, build with g++, run, compare with onnxruntime (rtol 1e-3, atol 1e-5)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from helpers import compile_build_compare
from paleozoic.testing.zoo import ZOO_MODELS, load_zoo_model

_cache: dict[str, onnx.ModelProto] = {}


def zoo_model(name: str) -> onnx.ModelProto:
    """Keeps one model at a time: VGG-19 alone holds 575 MB of weights."""
    if name not in _cache:
        _cache.clear()
        _cache[name] = load_zoo_model(name, seed=0)
    return _cache[name]


@pytest.mark.slow
@pytest.mark.parametrize("name, plan", [(name, plan) for name in ZOO_MODELS
                                        for plan in ("per-layer", "fuse-all")])
def test_zoo_model_matches_onnxruntime(name: str, plan: str, tmp_path: Path) -> None:
    report = compile_build_compare(zoo_model(name), tmp_path / "session", plan=plan)
    assert "total device time" in report
