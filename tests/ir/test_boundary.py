"""The block boundary rule is the same in Python (paleozoic.ir.boundary) and C++
(pz::fusionBoundary, what a FusionLayer compiles): checked on every contiguous block of
graphs with branches, concats, a tensor read twice by one layer and a dead branch."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ir.boundary import block_boundary, read_counts
from paleozoic.runner.graph import build_runtime_graph
from paleozoic.pipeline import load_queue
from helpers import zoo_model


def _dead_branch_queue():
    from helpers import hand_built_queue

    rng = np.random.default_rng(0)
    return hand_built_queue([
        ("a", "Active", ["x"], {"function": "relu"}, {}),
        ("dead", "Active", ["a"], {"function": "sigmoid"}, {}),   # read by nobody
        ("twice", "Add", ["a", "a"], {}, {}),                     # reads a twice
        ("b", "Scale", ["twice"], {}, {"alpha": rng.random(4, dtype=np.float32),
                                       "beta": rng.random(4, dtype=np.float32)}),
        ("c", "Add", ["b", "twice"], {}, {}),
    ], (1, 4, 3, 3), outputs=["c"])


def _queues():
    yield "dead_branch", _dead_branch_queue()
    for name in ("squeezenet", "inception_v1"):
        yield name, load_queue(zoo_model(name))


@pytest.mark.parametrize("name, queue", list(_queues()), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_python_and_cpp_agree_on_every_block(name, queue) -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    runtime_layers = build_runtime_graph(queue, session, bind_weights=False)
    # The wrapper names a layer's output tensor after the layer.
    cpp_name = {layer.output: layer.name for layer in queue.layers}
    cpp_name.update({t.name: t.name for t in queue.inputs})
    reads, outputs = read_counts(queue.layers), set(queue.outputs)
    n = len(queue.layers)
    spans = [(a, b) for a in range(n) for b in range(a + 1, min(n, a + 12) + 1)]
    for a, b in spans:
        ins, outs = block_boundary(queue.layers[a:b], reads, outputs)
        cpp_ins, cpp_outs = rt.Session.fusion_boundary(runtime_layers[a:b])
        assert [cpp_name[t] for t in ins] == cpp_ins, (name, a, b)
        assert [cpp_name[t] for t in outs] == cpp_outs, (name, a, b)


def test_dead_branch_leaves_the_block() -> None:
    queue = _dead_branch_queue()
    ins, outs = block_boundary(queue.layers, read_counts(queue.layers), set(queue.outputs))
    assert ins == ["x"]
    assert outs == ["dead", "c"]
