"""Layers nothing reads: TVM binds every output of a node whether the graph uses it or not
(a Split's unused part, one output of a node whose outputs are separate layers), and a
layer whose output is neither read nor a graph output would only cost device time."""

from __future__ import annotations

from paleozoic.ir import LayerQueue


def drop_unread_layers(queue: LayerQueue) -> int:
    dropped = 0
    while True:
        read = {name for layer in queue.layers for name in layer.inputs} | set(queue.outputs)
        unread = [layer for layer in queue.layers if layer.output not in read]
        if not unread:
            return dropped
        for layer in unread:
            queue.layers.remove(layer)
            queue.onnx_tensors.pop(layer.output, None)
            queue.tensors.pop(layer.output, None)
        dropped += len(unread)
