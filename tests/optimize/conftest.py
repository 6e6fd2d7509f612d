"""Fixtures for optimizer tests: the small_cnn queue and a cost oracle for it."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.ir import LayerQueue
from paleozoic.passes import run_passes

sys.path.insert(0, str(Path(__file__).parent))  # for fakes.py

from fakes import AnalyticFake  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "optimizers"


def device_model_oracle(queue: LayerQueue):
    """The real DeviceModelOracle when it is available, else None."""
    try:
        from paleozoic.optimize.device_cost import DeviceModelOracle
    except ImportError:
        return None
    return DeviceModelOracle(queue)


@pytest.fixture
def queue(small_cnn: onnx.ModelProto) -> LayerQueue:
    return run_passes(import_onnx(small_cnn))


@pytest.fixture
def oracle(queue: LayerQueue):
    """The device model if it has landed, otherwise the analytic fake."""
    return device_model_oracle(queue) or AnalyticFake(queue)
