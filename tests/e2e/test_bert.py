"""A BERT-style encoder (paleozoic_testing.bert) with int64 token ids, token types and an
attention mask, its sequence axis symbolic in the model and fixed by input_shapes: run under
per-layer and fuse-all plans and compared with onnxruntime and the float64 truth, with a
mask that really masks; one emitted session built with g++ and run."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from helpers import built_session_outputs, plan_outputs
from paleozoic.ops import KINDS
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.bert import bert_inputs, bert_model
from paleozoic.accuracy.verify import reference_outputs

logger = logging.getLogger(__name__)
SHAPES = {"input_ids": (2, 16), "token_type_ids": (2, 16), "attention_mask": (2, 16)}


def _relative(x: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(x.reshape(truth.shape) - truth).max() / np.abs(truth).max())


@pytest.fixture(scope="module")
def bert():
    model = bert_model(seed=0, layers=2)
    feeds = bert_inputs(seed=0)
    assert (feeds["attention_mask"] == 0).any() and (feeds["attention_mask"] == 1).any()
    truth = Float64Reference(model).run(feeds)
    ort = reference_outputs(model, feeds)
    queue = load_queue(model, input_shapes=SHAPES)
    return model, feeds, truth, ort, queue


def test_symbolic_length_is_fixed_and_folded(bert) -> None:
    model, _, _, _, queue = bert
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[1].dim_param == "seq"
    assert [(t.name, t.shape, t.dtype) for t in queue.inputs] == \
        [(name, (2, 16), "int64") for name in SHAPES]
    kinds = [layer.kind for layer in queue.layers]
    # The position ids (Shape, Gather, Slice on a constant) folded away: two embedding
    # lookups by run-time ids, each behind a host cast to int32.
    assert kinds.count("Gather") == 2
    assert {KINDS[k].host for k in kinds} == {True, False}


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_runtime_matches_onnxruntime_and_float64(bert, plan: str) -> None:
    _, feeds, truth, ort, queue = bert
    outputs = plan_outputs(queue, plan, [feeds[t.name] for t in queue.inputs])
    for ours, want, exact in zip(outputs, ort, truth):
        error, ort_error = _relative(ours, exact), _relative(want, exact)
        logger.info("bert %s: vs float64 %.2e (onnxruntime %.2e)", plan, error, ort_error)
        assert error <= 2.0 * ort_error + 1e-7
        np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-5)


def test_mask_really_masks(bert) -> None:
    """The padded tokens change nothing the kept ones see: changing a padded id leaves the
    kept positions' outputs equal, and dropping the mask changes them."""
    _, feeds, _, _, queue = bert
    runner = PlanRunner(queue, resolve_plan(queue, "fuse-all"))
    order = [t.name for t in queue.inputs]
    base = next(iter(runner.run([feeds[n] for n in order]).values()))
    row = 0
    kept = int(feeds["attention_mask"][row].sum())
    changed = {k: v.copy() for k, v in feeds.items()}
    changed["input_ids"][row, kept:] = (changed["input_ids"][row, kept:] + 1) % 50
    again = next(iter(runner.run([changed[n] for n in order]).values()))
    np.testing.assert_allclose(again[row, :kept], base[row, :kept], rtol=1e-5, atol=1e-6)
    unmasked = {**feeds, "attention_mask": np.ones_like(feeds["attention_mask"])}
    open_ = next(iter(runner.run([unmasked[n] for n in order]).values()))
    assert np.abs(open_[row, :kept] - base[row, :kept]).max() > 1e-3


def test_emitted_session(bert, tmp_path) -> None:
    model, feeds, truth, ort, _ = bert
    source, outputs = built_session_outputs(model, tmp_path / "out",
                                            [feeds[name] for name in SHAPES], plan="fuse-all",
                                            input_shapes=SHAPES)
    assert 'pz::Tensor input_ids{"input_ids", {2, 16}, pz::ElementType::kInt64};' in source
    assert "pz::GatherV2Layer" in source and "pz::HostCastLayer" in source
    for ours, want, exact in zip(outputs, ort, truth):
        assert _relative(ours, exact) <= 2.0 * _relative(want, exact) + 1e-7
        np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-5)
