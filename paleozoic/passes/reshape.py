"""Reshapes cost a copy on the device; most of the ones importers leave are no-ops."""

from __future__ import annotations

from paleozoic.ir import LayerQueue
from paleozoic.passes.rewrite import remove_forwarding, sole_consumer


def collapse_reshapes(queue: LayerQueue) -> int:
    """Drops reshapes to the same shape and merges chains of reshapes into one."""
    changed = 0
    progress = True
    while progress:
        progress = False
        producers = queue.producers()
        for layer in list(queue.layers):
            if layer.kind != "Reshape":
                continue
            source = layer.inputs[0]
            if queue.shape(source) == queue.shape(layer.output) and not (
                    source in {t.name for t in queue.inputs} and layer.output in queue.outputs):
                remove_forwarding(queue, layer, source)
                changed += 1
                progress = True
                break
            before = producers.get(source)
            if before is not None and before.kind == "Reshape" and \
                    sole_consumer(queue, source) is layer:
                layer.inputs = list(before.inputs)
                layer.onnx_nodes = list(dict.fromkeys(before.onnx_nodes + layer.onnx_nodes))
                queue.layers.remove(before)
                queue.onnx_tensors.pop(before.output, None)  # no layer holds it any more
                changed += 1
                progress = True
                break
    return changed


def drop_flatten_before_fc(queue: LayerQueue) -> int:
    """FullyConnected reads its input flat per batch item, so a flatten before it is moot."""
    changed = 0
    producers = queue.producers()
    for layer in list(queue.layers):
        if layer.kind != "FullyConnected":
            continue
        before = producers.get(layer.inputs[0])
        if before is None or before.kind != "Reshape":
            continue
        source_shape = queue.shape(before.inputs[0])
        if queue.shape(before.output)[0] == source_shape[0] and \
                sole_consumer(queue, before.output) is layer:
            remove_forwarding(queue, before, before.inputs[0])
            changed += 1
    return changed
