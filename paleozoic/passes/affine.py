"""Per-channel affine layers: merge chains of Scales, fold pure biases into Conv / Deconv / FC."""

from __future__ import annotations

import numpy as np

from paleozoic.ir import Layer, LayerQueue
from paleozoic.ops import KINDS
from paleozoic.passes.rewrite import remove_forwarding, rewrite_pairs, sole_consumer


def merge_scale_chains(queue: LayerQueue) -> int:
    """Scale(a2, b2) after Scale(a1, b1) is Scale(a1*a2, b1*a2 + b2): one pass over memory.

    Exporters that spell BatchNorm as Mul + Add (DenseNet, Inception-v2) leave such chains.
    """

    def merge(first: Layer, layer: Layer) -> bool:
        a1, b1 = (queue.weights[first.weights[r]] for r in ("alpha", "beta"))
        a2, b2 = (queue.weights[layer.weights[r]] for r in ("alpha", "beta"))
        queue.weights[first.weights["alpha"]] = (a1 * a2).astype(np.float32)
        queue.weights[first.weights["beta"]] = (b1 * a2 + b2).astype(np.float32)
        remove_forwarding(queue, layer, first.output, absorbed=True)
        return True

    return rewrite_pairs(queue, "Scale", "Scale", merge)


def fold_bias_into_producer(queue: LayerQueue) -> int:
    """A Scale with alpha == 1 right after a layer whose kind has an optional bias (Conv,
    Deconv, FullyConnected: one value per output channel, axis 1) becomes that bias."""
    changed = 0
    producers, consumers = queue.producers(), queue.consumers()
    for layer in list(queue.layers):
        if layer.kind != "Scale":
            continue
        producer = producers.get(layer.inputs[0])
        if producer is None or "bias" not in KINDS[producer.kind].optional_roles:
            continue
        if sole_consumer(queue, producer.output, consumers) is not layer:
            continue
        alpha = queue.weights[layer.weights["alpha"]]
        if not np.all(alpha == 1.0):
            continue
        beta = queue.weights[layer.weights["beta"]]
        key = f"{producer.name}.bias"
        old = queue.weights.get(producer.weights.get("bias", ""), 0.0)
        queue.weights[key] = (old + beta).astype(np.float32)
        producer.weights["bias"] = key
        remove_forwarding(queue, layer, producer.output, absorbed=True)
        producers, consumers = queue.producers(), queue.consumers()
        changed += 1
    return changed
