"""Layers next to what they read: a step the SDK can merge into its producer (an
activation, an affine or element-wise layer after a convolution, the Mul of a gate x * g(x)
such as SiLU or HardSwish) is one fused primitive only when it directly follows the layer
computing its input. TVM sometimes binds it later, after unrelated layers (another branch's
layers: ShuffleNetV2's ReLUs after the other branch's, a second HardSwish's ops before the
first's Mul), so the run is broken. Such a layer moves up to just after its inputs' last
producer: the queue stays in dependency order and nothing else changes."""

from __future__ import annotations

from paleozoic.ir import LayerQueue

# Kinds a fusion can append to the layer before them (post-ops on the oneDNN SDK).
MERGEABLE = frozenset({"Active", "Unary", "Scale", "BatchNorm", "Add", "Binary"})


def move_layers_after_their_inputs(queue: LayerQueue) -> int:
    moved = 0
    position = {layer.output: i for i, layer in enumerate(queue.layers)}
    for layer in list(queue.layers):
        if layer.kind not in MERGEABLE:
            continue
        i = position[layer.output]
        ready = max((position.get(name, -1) for name in layer.inputs), default=-1) + 1
        if ready < i:
            queue.layers.insert(ready, queue.layers.pop(i))
            for k in range(ready, i + 1):
                position[queue.layers[k].output] = k
            moved += 1
    return moved
