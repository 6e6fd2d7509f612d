"""Small helpers shared by the passes."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from paleozoic.ir import Layer, LayerQueue


def sole_consumer(queue: LayerQueue, tensor: str,
                  consumers: Mapping[str, list[Layer]] | None = None) -> Layer | None:
    """The only layer reading `tensor`, if it is not also a graph output (`consumers`: the
    queue's, when the caller has them at hand)."""
    if tensor in queue.outputs:
        return None
    users = (consumers if consumers is not None else queue.consumers()).get(tensor, [])
    return users[0] if len(users) == 1 else None


def rewrite_pairs(queue: LayerQueue, kind: str, producer_kind: str,
                  rewrite: Callable[[Layer, Layer], bool]) -> int:
    """Calls rewrite(producer, layer) for a `kind` layer whose input a `producer_kind` layer
    computes for it alone, until no pair is left that rewrite accepts (it returns False to
    leave a pair as it is); the queue is looked at afresh after each rewrite. Returns how
    many pairs were rewritten."""
    changed = 0
    progress = True
    while progress:  # a rewrite may make a pair out of layers the scan has passed
        progress = False
        producers, consumers = queue.producers(), queue.consumers()
        live = set(map(id, queue.layers))
        # The scan goes on after a rewrite instead of starting over: over a chain of k
        # pairs, starting over made it k scans of the queue (DenseNet's 242 Scale pairs).
        for layer in list(queue.layers):
            if layer.kind != kind or id(layer) not in live:
                continue
            before = producers.get(layer.inputs[0])
            if before is None or before.kind != producer_kind or \
                    sole_consumer(queue, before.output, consumers) is not layer:
                continue
            if rewrite(before, layer):
                changed += 1
                progress = True
                producers, consumers = queue.producers(), queue.consumers()
                live = set(map(id, queue.layers))
    return changed


def remove_forwarding(queue: LayerQueue, layer: Layer, replacement: str,
                      absorbed: bool = False) -> None:
    """Deletes `layer`, making its readers (and graph outputs) read `replacement`.

    absorbed=False: `layer` was a no-op (a reshape), so `replacement` already held its
    values. absorbed=True: the producer of `replacement` now computes what `layer` did (a
    folded bias), so it takes over the layer's ONNX nodes, and its tensor stands for the
    layer's ONNX tensors instead of its own earlier ones, which no longer exist."""
    queue.layers.remove(layer)
    moved = queue.onnx_tensors.pop(layer.output, [])
    if absorbed:
        producer = queue.producers().get(replacement)
        if producer is not None:
            # A Conv's own bias (TVM adds it as a second binding) is the same node twice.
            producer.onnx_nodes = list(dict.fromkeys(producer.onnx_nodes + layer.onnx_nodes))
        if moved:
            queue.onnx_tensors[replacement] = moved
        else:
            queue.onnx_tensors.pop(replacement, None)
    elif moved:
        queue.onnx_tensors[replacement] = queue.onnx_tensors.get(replacement, []) + moved
    for other in queue.layers:
        other.inputs = [replacement if name == layer.output else name
                        for name in other.inputs]
    queue.outputs = [replacement if name == layer.output else name
                     for name in queue.outputs]
