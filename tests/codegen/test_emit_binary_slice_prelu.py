"""Codegen of the Binary, Slice and PRelu kinds and the relu1 activation: the wrapper and raw
templates, and both forms of a hand-built session (the frontend does not emit these kinds
yet) built with g++, bit-identical to each other and close to numpy."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from helpers import hand_built_queue, head_middle_tail_plan, wrapper_and_raw_outputs
from paleozoic.codegen.emit import session_files
from paleozoic.ir import LayerQueue, Model, Plan
from paleozoic.optimize import fuse_all, per_layer

X_SHAPE = (1, 4, 8, 8)
SLOPE = np.array([0.25, -0.5, 1.5, 0.0], np.float32)
ALPHA = 0.1

# (name, kind, inputs, attrs, weights)
LAYERS = [
    ("prelu1", "PRelu", ["x"], {}, {"slope": SLOPE}),
    ("leaky", "PRelu", ["prelu1"], {}, {"slope": np.full(4, ALPHA, np.float32)}),
    ("sl_hw", "Slice", ["leaky"], {"begin": [0, 0, 0, 1], "end": [1, 4, 8, 8],
                                   "step": [1, 1, 2, 2]}, {}),
    ("gap", "GlobalAvgPool", ["sl_hw"], {}, {}),
    ("gate", "Active", ["gap"], {"function": "sigmoid"}, {}),
    ("scaled", "Binary", ["sl_hw", "gate"], {"op": "mul"}, {}),          # BroadcastMult
    ("odd", "Slice", ["scaled"], {"begin": [0, 1, 0, 0], "end": [1, 4, 4, 4],
                                  "step": [1, 2, 1, 1]}, {}),
    ("even", "Slice", ["scaled"], {"begin": [0, 0, 0, 0], "end": [1, 4, 4, 4],
                                   "step": [1, 2, 1, 1]}, {}),
    ("diff", "Binary", ["odd", "even"], {"op": "sub"}, {}),              # Sub
    ("den", "Active", ["even"], {"function": "sigmoid"}, {}),
    ("ratio", "Binary", ["diff", "den"], {"op": "div"}, {}),             # RealDiv
    ("clip", "Active", ["ratio"], {"function": "relu1"}, {}),
    ("bias", "Slice", ["gap"], {"begin": [0, 0, 0, 0], "end": [1, 1, 1, 1],
                                "step": [1, 1, 1, 1]}, {}),
    ("shift", "Binary", ["clip", "bias"], {"op": "add"}, {}),            # BroadcastAdd
    ("row", "Slice", ["scaled"], {"begin": [0, 0, 0, 0], "end": [1, 1, 4, 4],
                                  "step": [1, 1, 1, 1]}, {}),
    ("plus", "Binary", ["shift", "row"], {"op": "sub"}, {}),             # BroadcastSub
    ("total", "Binary", ["plus", "odd"], {"op": "add"}, {}),             # Add
    ("sq", "Binary", ["total", "total"], {"op": "mul"}, {}),             # Mult
]


def hand_queue() -> LayerQueue:
    return hand_built_queue(LAYERS, X_SHAPE, ["sq"])


def reference(x: np.ndarray) -> np.ndarray:
    def prelu(v, slope):
        return np.where(v >= 0, v, slope[None, :, None, None] * v)

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    sl_hw = prelu(prelu(x, SLOPE), np.full(4, ALPHA, np.float32))[:, :, 0:8:2, 1:8:2]
    gap = sl_hw.mean(axis=(2, 3), keepdims=True)
    scaled = sl_hw * sigmoid(gap)
    odd, even = scaled[:, 1:4:2], scaled[:, 0:4:2]
    clip = np.clip((odd - even) / sigmoid(even), 0, 1)
    total = clip + gap[:, :1] - scaled[:, :1] + odd
    return total * total


def mixed_plan(queue: LayerQueue) -> Plan:
    return head_middle_tail_plan(queue, 6, 5)


def test_wrapper_form_constructs_the_new_kinds() -> None:
    queue = hand_queue()
    text = session_files(Model.build(queue, per_layer(queue)), "t")[0]["session.cpp"]
    assert 'pz::PReluLayer prelu1{"prelu1", x};' in text
    assert 'prelu1.configLayer(weights.get("prelu1.slope", {4}));' in text
    assert ('pz::SliceLayer sl_hw{"sl_hw", leaky.output(), /*begin=*/{0, 0, 0, 1}, '
            '/*end=*/{1, 4, 8, 8}, /*step=*/{1, 1, 2, 2}};') in text
    assert ('pz::BinaryLayer scaled{"scaled", sl_hw.output(), gate.output(), '
            'pz::Binary::kMul};') in text
    assert 'pz::BinaryLayer ratio{"ratio", diff.output(), den.output(), pz::Binary::kDiv};' in text
    assert 'pz::BinaryLayer sq{"sq", total.output(), total.output(), pz::Binary::kMul};' in text
    assert 'pz::ActiveLayer clip{"clip", ratio.output(), pz::Active::kRelu1};' in text


def test_raw_form_makes_the_same_sdk_calls_and_frees_them() -> None:
    queue = hand_queue()
    for plan in (per_layer(queue), fuse_all(queue)):
        text = session_files(Model.build(queue, plan), "t", "raw")[0]["session.cpp"]
        for call in ("cnmlCreateBroadcastMultOp(&scaled_op", "cnmlCreateSubOp(&diff_op",
                     "cnmlCreateRealDivOp(&ratio_op", "cnmlCreateBroadcastAddOp(&shift_op",
                     "cnmlCreateBroadcastSubOp(&plus_op", "cnmlCreateAddOp(&total_op",
                     "cnmlCreateMultOp(&sq_op", "cnmlCreatePreluOp(&prelu1_op",
                     "cnmlCreateNdStridedSliceOp(&sl_hw_op", "CNML_ACTIVE_RELU1"):
            assert call in text, call
        if not plan.blocks[0].fuse:
            assert "cnmlComputeBroadcastMultOpForward_V4(scaled_op" in text
            assert "cnmlComputeNdStridedSliceOpForward_V2(sl_hw_op" in text
            assert "cnmlComputePreluOpForward_V4(prelu1_op" in text
        ops = len(re.findall(r"CHECK\(cnmlCreate\w*Op\(&", text)) - text.count(
            "cnmlCreateFusionOp(")
        assert ops == len(queue.layers) == text.count("cnmlDestroyBaseOp(")
        assert text.count("cnmlCreateTensor_V2(") == text.count("cnmlDestroyTensor(")
        assert (text.count("cnmlCreateNdStridedSliceOpParam(")
                == text.count("cnmlDestroyNdStridedSliceOpParam(") == 5)
        assert text.count("cnmlBindConstData_V2(") == 2


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all", "mixed"])
def test_wrapper_and_raw_sessions_agree_bit_for_bit(plan: str, tmp_path: Path) -> None:
    queue = hand_queue()
    chosen = {"per-layer": per_layer, "fuse-all": fuse_all, "mixed": mixed_plan}[plan](queue)
    model = Model.build(queue, chosen)
    feed = (np.random.default_rng(0).standard_normal(X_SHAPE) * 2).astype(np.float32)
    (ours,), (raw,) = wrapper_and_raw_outputs(model, tmp_path, feed)
    assert ours.shape == (1, 2, 4, 4)
    assert np.array_equal(ours, raw)
    np.testing.assert_allclose(ours, reference(feed), rtol=1e-5, atol=1e-6)
