"""Small helpers shared by the passes."""

from __future__ import annotations

from paleozoic.ir import Layer, LayerQueue


def sole_consumer(queue: LayerQueue, tensor: str) -> Layer | None:
    """The only layer reading `tensor`, if it is not also a graph output."""
    if tensor in queue.outputs:
        return None
    users = queue.consumers().get(tensor, [])
    return users[0] if len(users) == 1 else None


def remove_forwarding(queue: LayerQueue, layer: Layer, replacement: str) -> None:
    """Deletes `layer`, making its readers (and graph outputs) read `replacement`."""
    queue.layers.remove(layer)
    for other in queue.layers:
        other.inputs = [replacement if name == layer.output else name
                        for name in other.inputs]
    queue.outputs = [replacement if name == layer.output else name
                     for name in queue.outputs]
