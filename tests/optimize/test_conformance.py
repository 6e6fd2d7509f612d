"""One conformance test for every registered optimizer and the two examples: the plan is
valid, the same under the same seed, and the session emitted from it builds and matches
onnxruntime."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from fakes import EXAMPLES
from helpers import compile_build_compare
from paleozoic.optimize import BUILTIN_OPTIMIZERS, fusible_kinds, load_optimizer, run_optimizer

SPECS = [*BUILTIN_OPTIMIZERS, f"{EXAMPLES / 'cpsat.py'}:CpSat",
         f"{EXAMPLES / 'my_annealing.py'}:MyAnnealing"]


def _blocks(plan) -> list[tuple]:
    return [(b.name, tuple(b.layers), b.mp, b.fuse) for b in plan.blocks]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.rsplit(":", 1)[-1])
def test_optimizer_conformance(spec: str, queue, oracle, small_cnn: onnx.ModelProto,
                               tmp_path: Path) -> None:
    if spec.endswith("cpsat.py:CpSat"):
        pytest.importorskip("ortools")
    first = run_optimizer(load_optimizer(spec, seed=7), queue, oracle)
    first.validate(queue, fusible_kinds())
    again = run_optimizer(load_optimizer(spec, seed=7), queue, oracle)
    assert _blocks(first) == _blocks(again), "not deterministic under a seed"
    assert first.notes["cost_us"] == again.notes["cost_us"]
    report = compile_build_compare(small_cnn, tmp_path / "session", plan=first)
    assert report
