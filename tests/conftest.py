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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--exhaustive", action="store_true",
                     help="also run the tests marked exhaustive: cases that repeat what a "
                          "default case covers on a larger model (run before closing an issue)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Deselected, not skipped: the default run's summary stays a list of real refusals.
    if config.getoption("--exhaustive"):
        return
    kept, left = [], []
    for item in items:
        (left if item.get_closest_marker("exhaustive") else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


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
