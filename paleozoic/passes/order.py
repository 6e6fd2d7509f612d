"""Gates next to their products: x * g(x) (SiLU, HardSwish, squeeze-and-excite's scale) is
one SDK step when its Mul directly follows the ops computing g(x) (the oneDNN SDK makes
such a run one eltwise_swish or eltwise_hardswish, a post-op of the convolution computing
x). TVM sometimes binds the Mul later, after unrelated layers (a second branch's gate), so
the run is broken; moving a Mul up to just after its inputs' last producer keeps the queue
in dependency order and changes nothing else."""

from __future__ import annotations

from paleozoic.ir import LayerQueue


def move_products_after_their_inputs(queue: LayerQueue) -> int:
    moved = 0
    position = {layer.output: i for i, layer in enumerate(queue.layers)}
    for layer in list(queue.layers):
        if layer.kind != "Binary" or layer.op.attrs["op"] != "mul":
            continue
        i = queue.layers.index(layer)
        ready = max((position.get(name, -1) for name in layer.inputs), default=-1) + 1
        if ready < i:
            queue.layers.insert(ready, queue.layers.pop(i))
            position = {other.output: k for k, other in enumerate(queue.layers)}
            moved += 1
    return moved
