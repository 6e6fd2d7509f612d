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


@pytest.fixture
def queue(small_cnn: onnx.ModelProto) -> LayerQueue:
    return run_passes(import_onnx(small_cnn))


@pytest.fixture
def oracle(queue: LayerQueue):
    """The analytic device model (the mock SDK's, through pybind)."""
    from paleozoic.optimize.device_cost import DeviceModelOracle

    return DeviceModelOracle(queue)
