"""Each registered kind builds its runtime layer from the registry alone
(LayerKind.build_runtime, config_roles): the output shape the runtime derives equals the
kind's own shape function, and config() takes the kind's weights in config_roles order.
Layers come from real queues, so attributes are as the frontend writes them."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ops import KINDS
from paleozoic.pipeline import load_queue
from paleozoic_testing.bert import bert_model
from paleozoic_testing.blocks import BLOCKS
from paleozoic_testing.host import (
    compare_select,
    grid_sampler,
    hf_masked_softmax,
    integer_ops,
    topk_classifier,
    token_pool_causal_mask,
    topk_gather_head,
    uint8_classifier,
)
from paleozoic_testing.recurrent import recurrent_stack
from paleozoic_testing.sequence import encoder_layer, pooled_classifier, vit_block
from helpers import zoo_model


@pytest.fixture(scope="module")
def samples():
    """One (queue, layer) per kind, from models that between them use every kind."""
    found = {}
    models = [zoo_model("inception_v1")] + [BLOCKS[name]() for name in (
        "detection_head", "shufflenet_v2_block", "googlenet_block", "mobilenet_v3_block",
        "efficientnet_b0_block", "resnet18_block")] + [encoder_layer(), vit_block(),
                                                 uint8_classifier(), bert_model(seq=16),
                                                 hf_masked_softmax(), topk_classifier(),
                                                 pooled_classifier(), compare_select(),
                                                 topk_gather_head(), integer_ops(),
                                                 token_pool_causal_mask(),
                                                 grid_sampler()] + [
        recurrent_stack(op, direction="bidirectional", layers=1)[0]
        for op in ("LSTM", "GRU", "RNN")]
    for model in models:
        queue = load_queue(model)
        for layer in queue.layers:
            found.setdefault(layer.kind, (queue, layer))
    return found


def _built_alone(queue, layer):
    """A fresh session and `layer` of `queue` built on it by its kind's build_runtime, its
    inputs the session's inputs of their shapes and types."""
    from paleozoic import _runtime as rt

    session = rt.Session()
    inputs = [session.input(name, list(queue.shape(name)), queue.tensors[name].dtype)
              for name in layer.inputs]
    return session, KINDS[layer.kind].build_runtime(session, layer.name, layer.op.attrs,
                                                    inputs)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_builds_its_runtime_layer(kind: str, samples) -> None:
    assert kind in samples, f"no test model uses {kind}; add one to the fixture"
    queue, layer = samples[kind]
    spec = KINDS[kind]
    _session, built = _built_alone(queue, layer)
    assert tuple(built.output.shape) == tuple(queue.shape(layer.output))
    roles = spec.declared_roles(layer.op.attrs)
    assert set(layer.weights) <= set(roles)
    if roles:
        built.config(*[queue.weights[layer.weights[role]] if role in layer.weights else None
                       for role in roles])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_runtime_layer_declares_the_kinds_weights(kind: str, samples) -> None:
    """The wrapper's declared weights (pz::Layer::weightSpecs) are the registry's roles, in
    config order, with the same optional flags, and the queue's weights fit their shapes."""
    queue, layer = samples[kind]
    spec = KINDS[kind]
    _session, built = _built_alone(queue, layer)
    declared = built.weight_specs
    assert [(role, optional) for role, _, optional in declared] == \
        [(role, role in spec.optional_roles) for role in spec.declared_roles(layer.op.attrs)]
    for role, shape, _ in declared:
        if role in layer.weights:
            assert queue.weights[layer.weights[role]].size == int(np.prod(shape)), role


def test_python_and_cpp_registries_agree() -> None:
    """Every LayerKind has a wrapper factory (pz::layerFactories) of its binding name, with its
    input count and its runtime attributes in the same order, and the wrapper has no kind
    the Python registry lacks."""
    import dataclasses

    from paleozoic import _runtime as rt

    cpp = {kind: (inputs, list(params)) for kind, inputs, params in rt.Session.layer_kinds()}
    assert set(cpp) == {spec.binding for spec in KINDS.values()}
    for spec in KINDS.values():
        runtime = [f.name for f in dataclasses.fields(spec.attrs)
                   if f.metadata.get("runtime", True)]
        assert cpp[spec.binding] == (spec.arity, runtime), spec.name


def test_registry_builder_errors_name_the_layer() -> None:
    from paleozoic import _runtime as rt

    s = rt.Session()
    x = s.input("x", [1, 3, 8, 8])
    with pytest.raises(rt.Error, match="c1: a conv layer has no attribute 'padding'; it takes "
                                       "out_channels, kernel"):
        s.conv("c1", x, out_channels=4, kernel=(3, 3), padding=(1, 1, 1, 1))
    with pytest.raises(rt.Error, match="c2: attribute 'kernel' must hold 2 integers, got 3"):
        s.conv("c2", x, 4, (3, 3, 3))
    with pytest.raises(rt.Error, match="c3: needs attribute 'out_channels'"):
        s.conv("c3", x, kernel=(3, 3))
    with pytest.raises(rt.Error, match="c4: attribute 'kernel' given twice"):
        s.conv("c4", x, 4, (3, 3), kernel=(3, 3))
    with pytest.raises(rt.Error, match="p1: attribute 'ceil_mode' must be true or false"):
        s.pool("p1", x, "max", (2, 2), ceil_mode=1)
    with pytest.raises(rt.Error, match="cat: a concat layer takes a list of input tensors"):
        s.concat("cat", x, 1)
    with pytest.raises(AttributeError, match="Session has no attribute 'gelu'"):
        s.gelu("g", x)
