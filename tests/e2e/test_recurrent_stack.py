"""LSTM and GRU stacks (paleozoic_testing.recurrent.recurrent_stack: two recurrent nodes
with PyTorch's Transpose/Reshape between them and a MatMul head on Y_h) in every direction
and layout, imported, run per layer and fused on the runtime, and compared with the float64
truth and onnxruntime (which runs layout 0 only: its CPU kernels refuse layout=1); one
emitted session of each kind compiled with g++ and run."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from helpers import built_session_outputs, plan_outputs
from paleozoic.pipeline import load_queue
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.recurrent import recurrent_stack
from paleozoic.accuracy.verify import reference_outputs

logger = logging.getLogger(__name__)


def _error(ours: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(np.asarray(ours).reshape(truth.shape) - truth).max())


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_stack_matches_truth_and_onnxruntime(op: str, direction: str, layout: int) -> None:
    model, feeds = recurrent_stack(op, direction=direction, layout=layout, steps=21,
                                   hidden=13, initial_h=layout == 1,
                                   linear_before_reset=int(direction == "reverse"), seed=4)
    truth = Float64Reference(model).run(feeds)
    ort = reference_outputs(model, feeds) if layout == 0 else None
    queue = load_queue(model)
    assert sum(layer.kind in ("Lstm", "Gru") for layer in queue.layers) == 2
    for plan in ("per-layer", "fuse-all"):
        outs = plan_outputs(queue, plan, list(feeds.values()))
        for k, (ours, t) in enumerate(zip(outs, truth)):
            error = _error(ours, t)
            logger.info("%s %s layout %d %s output %d: vs float64 %.2e", op, direction,
                        layout, plan, k, error)
            assert error < 1e-6
            if ort is not None:
                assert _error(ours, t) <= max(2 * _error(ort[k], t), 2e-7)


@pytest.mark.parametrize("op, plan, precision", [("LSTM", "fuse-all", None),
                                                  ("GRU", "per-layer", "fp16")])
def test_emitted_session(tmp_path, op: str, plan: str, precision: str | None) -> None:
    model, feeds = recurrent_stack(op, direction="bidirectional", layout=0, steps=21,
                                   hidden=13, linear_before_reset=1, seed=5)
    source, ours = built_session_outputs(model, tmp_path / "out", list(feeds.values()),
                                         plan=plan, precision=precision)
    cls = "pz::LstmLayer" if op == "LSTM" else "pz::GruLayer"
    assert source.count(cls) == 2 and "pz::RnnDirection::kBidirectional" in source
    assert len(source.splitlines()) < 120  # the steps are built by the layer, not unrolled
    truth = Float64Reference(model).run(feeds)
    ort = reference_outputs(model, feeds)
    for k, (o, t) in enumerate(zip(ours, truth)):
        logger.info("%s session %s %s output %d: vs float64 %.2e (onnxruntime %.2e)", op,
                    plan, precision or "fp32", k, _error(o, t), _error(ort[k], t))
        assert _error(o, t) < (1e-6 if precision is None else 3e-3)
