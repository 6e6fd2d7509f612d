"""Exporter-style blocks (paleozoic_testing.blocks) end to end: compile, g++, run, compare
with onnxruntime, under per-layer and fuse-all; the symbolic-batch block at batch 1 and 3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic_testing.blocks import BLOCKS
from paleozoic.accuracy.inputs import random_inputs
from paleozoic.accuracy.verify import reference_outputs

STATIC = [name for name in BLOCKS if name != "dynamic_resnet_block"]


def _compare(model, out: Path, plan: str, batch: int | None = None) -> None:
    compile_model(model, out, plan=plan, batch=batch)
    build_session(out)
    shapes = {"data": (batch, 16, 16, 16)} if batch else None
    feeds = random_inputs(model, seed=1, shapes=shapes)
    ours = run_session(out, list(feeds.values())).outputs
    refs = reference_outputs(model, feeds)
    assert len(ours) == len(refs)
    for got, want in zip(ours, refs):
        want = want.reshape(got.shape)
        assert np.allclose(got, want, rtol=1e-3, atol=1e-5), float(np.abs(got - want).max())


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
@pytest.mark.parametrize("name", STATIC)
def test_block_matches_onnxruntime(name: str, plan: str, tmp_path: Path) -> None:
    _compare(BLOCKS[name](seed=0), tmp_path / "out", plan)


@pytest.mark.parametrize("batch", [1, 3])
def test_symbolic_batch_block(batch: int, tmp_path: Path) -> None:
    _compare(BLOCKS["dynamic_resnet_block"](seed=0), tmp_path / "out", "fuse-all", batch)
