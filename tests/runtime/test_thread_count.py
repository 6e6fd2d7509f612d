"""Small ops run on one thread whatever their MP (executor.cpp, threadsForWork): that may
change only time, never numbers. The mock's kernels give the same bits at MP 1 and MP 2,
per layer and fused, for models whose ops fall on both sides of the threshold."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.pipeline import load_queue
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic_testing.bert import bert_model
from paleozoic_testing.blocks import BLOCKS
from paleozoic_testing.recurrent import recurrent_stack
from paleozoic_testing.sequence import encoder_layer
from paleozoic.accuracy.inputs import random_inputs

MODELS = {
    "efficientnet_b0_block": BLOCKS["efficientnet_b0_block"],
    "regnety_stages": BLOCKS["regnety_stages"],
    "encoder_layer": encoder_layer,
    "bert": lambda: bert_model(seq=16),
    "gru": lambda: recurrent_stack("GRU", direction="bidirectional", layers=1)[0],
}


@pytest.mark.parametrize("name", list(MODELS))
def test_mock_bits_do_not_depend_on_mp(name):
    model = MODELS[name]()
    queue = load_queue(model)
    feeds = random_inputs(model, 0)
    ordered = [feeds[n] for n in queue.onnx_input_names]
    for make in (per_layer, fuse_all):
        one = PlanRunner(queue, make(queue, mp=1)).run(ordered)
        two = PlanRunner(queue, make(queue, mp=2)).run(ordered)
        for tensor in one:
            np.testing.assert_array_equal(one[tensor], two[tensor])
