"""Session folders for the debugger's tests: small onnx.helper models compiled under a
plan, and a way to corrupt one layer's filter in weights.bin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from debug_helpers import DIGITS, branch_model


@pytest.fixture
def branch_path(tmp_path: Path) -> Path:
    path = tmp_path / "branch.onnx"
    onnx.save(branch_model(), str(path))
    return path


@pytest.fixture
def branch_data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for i in range(4):
        np.save(folder / f"{i}.npy", rng.standard_normal((1, 3, 12, 12)).astype(np.float32))
    return folder


@pytest.fixture
def digits_data(tmp_path: Path) -> Path:
    """16 single-image batches of the digits calibration split."""
    folder = tmp_path / "digits"
    folder.mkdir()
    images = np.load(DIGITS / "digits_data.npz")["calib_x"][:16]
    for i, image in enumerate(images):
        np.save(folder / f"{i:02d}.npy", image[None])
    return folder
