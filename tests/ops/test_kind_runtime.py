"""Each registered kind builds its runtime layer from the registry alone
(LayerKind.build_runtime, config_roles): the output shape the runtime derives equals the
kind's own shape function, and config() takes the kind's weights in config_roles order.
Layers come from real queues, so attributes are as the frontend writes them."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ops import KINDS
from paleozoic.pipeline import load_queue
from paleozoic.testing.blocks import BLOCKS
from paleozoic.testing.zoo import load_zoo_model


@pytest.fixture(scope="module")
def samples():
    """One (queue, layer) per kind, from models that between them use every kind."""
    found = {}
    models = [load_zoo_model("inception_v1")] + [BLOCKS[name]() for name in (
        "detection_head", "shufflenet_v2_block", "googlenet_block", "mobilenet_v3_block",
        "efficientnet_b0_block", "resnet18_block")]
    for model in models:
        queue = load_queue(model)
        for layer in queue.layers:
            found.setdefault(layer.kind, (queue, layer))
    return found


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_builds_its_runtime_layer(kind: str, samples) -> None:
    from paleozoic import _runtime as rt

    assert kind in samples, f"no test model uses {kind}; add one to the fixture"
    queue, layer = samples[kind]
    spec = KINDS[kind]
    session = rt.Session()
    inputs = [session.input(name, list(queue.shape(name))) for name in layer.inputs]
    built = spec.build_runtime(session, layer.name, layer.op.attrs, inputs)
    assert tuple(built.output.shape) == tuple(queue.shape(layer.output))
    assert set(layer.weights) <= set(spec.config_roles)
    if spec.config_roles:
        built.config(*[queue.weights[layer.weights[role]] if role in layer.weights else None
                       for role in spec.config_roles])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_runtime_layer_declares_the_kinds_weights(kind: str, samples) -> None:
    """The wrapper's declared weights (pz::Layer::weightSpecs) are the registry's roles, in
    config order, with the same optional flags, and the queue's weights fit their shapes."""
    from paleozoic import _runtime as rt

    queue, layer = samples[kind]
    spec = KINDS[kind]
    session = rt.Session()
    inputs = [session.input(name, list(queue.shape(name))) for name in layer.inputs]
    built = spec.build_runtime(session, layer.name, layer.op.attrs, inputs)
    declared = built.weight_specs
    assert [(role, optional) for role, _, optional in declared] == \
        [(role, role in spec.optional_roles) for role in spec.config_roles]
    for role, shape, _ in declared:
        if role in layer.weights:
            assert queue.weights[layer.weights[role]].size == int(np.prod(shape)), role
