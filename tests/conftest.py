"""Shared fixtures: small hand-built ONNX models (zoo models: helpers.zoo_model)."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for tests/helpers.py

# Tests import paleozoic._runtime directly too: load it the library's way first, so the
# process runs with the runtimes' OpenMP wait policy (paleozoic.runner.sdk.runtime_module).
from paleozoic.runner.sdk import runtime_module  # noqa: E402

runtime_module()


@pytest.fixture
def small_cnn() -> onnx.ModelProto:
    """Conv(bias) -> BN -> Relu -> MaxPool -> residual Add -> GAP -> Flatten -> Gemm -> Softmax."""
    from helpers import small_cnn_model

    return small_cnn_model()


@pytest.fixture
def small_cnn_path(tmp_path: Path, small_cnn: onnx.ModelProto) -> Path:
    path = tmp_path / "small_cnn.onnx"
    onnx.save(small_cnn, str(path))
    return path
