"""Every built-in optimizer keeps host layers (paleozoic.ops.host) out of fused blocks on
a model that has them (the BERT-style encoder: host casts of ids and mask), and the device
model prices a host layer (its copies), so plans cost it."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ir.plan import Precision
from paleozoic.ops import KINDS
from paleozoic.optimize import load_optimizer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.run import run_optimizer
from paleozoic.optimize.space import SearchSpace
from paleozoic.pipeline import load_queue
from paleozoic_testing.bert import BERT_INPUTS, bert_model


@pytest.fixture(scope="module")
def queue():
    return load_queue(bert_model(seed=0), input_shapes={n: (2, 16) for n in BERT_INPUTS})


@pytest.mark.parametrize("name", ["per-layer", "fuse-all", "greedy", "dp", "annealing"])
def test_host_layers_never_share_a_fused_block(queue, name: str) -> None:
    host = {layer.name for layer in queue.layers if KINDS[layer.kind].host}
    assert host
    oracle = DeviceModelOracle(queue)
    options = {"budget_s": 2.0, "seed": 0} if name == "annealing" else {}
    plan = run_optimizer(load_optimizer(name, **options), queue, oracle,
                         SearchSpace.from_queue(queue, precisions=(Precision.FP32,
                                                                   Precision.FP16)))
    for block in plan.blocks:
        if block.fuse and len(block.layers) > 1:
            assert not host & set(block.layers), (name, block)


def test_host_layer_cost_is_its_copies(queue) -> None:
    """launch + the bytes of float and int32 tensors it moves over the host link (int64
    and uint8 tensors stay on the host), at the profile's host_link_gbps."""
    from paleozoic import _runtime as rt

    rt.reset_device_profile()
    profile = rt.device_profile()
    oracle = DeviceModelOracle(queue)
    on_device = ("float32", "int32")
    seen = set()
    for i, layer in enumerate(queue.layers):
        if not KINDS[layer.kind].host:
            continue
        moved = sum(4 * int(np.prod(queue.tensors[t].shape)) for t in [*layer.inputs, layer.output]
                    if queue.tensors[t].dtype in on_device)
        seen.add(moved > 0)
        want = profile["launch_us"] + moved / (profile["host_link_gbps"] * 1e3)
        assert oracle.block_cost(i, i + 1, 1) == pytest.approx(want, rel=1e-5), layer.name
    # Every host layer of this model moves something since merge_host_copies folded the
    # mask's int64-only reshapes into its cast.
    assert seen == {True}
