"""Reshapes cost a copy on the device; most of the ones importers leave are no-ops."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from paleozoic.ir import Layer, LayerQueue
from paleozoic.ops import KINDS
from paleozoic.passes.rewrite import remove_forwarding, rewrite_pairs, sole_consumer


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


def _attrs_before(queue: LayerQueue, reshape: Layer, layer: Layer) -> dict[str, Any] | None:
    """The attributes under which `layer` computes the same numbers on the reshape's input
    as on its output (its kind's through_reshape), or None."""
    rule = KINDS[layer.kind].through_reshape
    if rule is None or len(layer.inputs) != 1:
        return None
    return rule(layer.op.attrs, queue.shape(reshape.inputs[0]), queue.shape(reshape.output))


def move_elementwise_before_reshapes(queue: LayerQueue) -> int:
    """Reshape -> element-wise layer -> reshape(s) becomes element-wise layer -> reshape ->
    reshape(s), which collapse_reshapes then merges (often into nothing). The
    fully-connected layers of a transformer or ConvNeXt MLP read rows, [tokens, features],
    and TVM restores the N-D shape after each, so an activation between two of them sat
    between two copies that undo each other."""
    changed = 0
    progress = True
    while progress:
        progress = False
        producers = queue.producers()
        consumers = queue.consumers()
        for layer in queue.layers:
            reshape = producers.get(layer.inputs[0]) if layer.inputs else None
            if reshape is None or reshape.kind != "Reshape" or \
                    sole_consumer(queue, reshape.output, consumers) is not layer:
                continue
            readers = consumers.get(layer.output, [])
            if layer.output in queue.outputs or not readers or \
                    any(r.kind != "Reshape" for r in readers):
                continue
            attrs = _attrs_before(queue, reshape, layer)
            if attrs is None:
                continue
            layer.op.attrs.update(attrs)
            _swap(queue, reshape, layer)
            changed += 1
            progress = True
            break
    return changed


def move_scales_before_channel_reshapes(queue: LayerQueue) -> int:
    """Reshape -> Scale becomes Scale -> Reshape when the reshape keeps the batch and channel
    axes (N and C first in both shapes): a per-channel affine computes the same numbers on
    either side. A 1-D convolution's bias (TVM adds it after the convolution, which runs in
    2-D between reshapes) then sits right after the convolution and folds into it, and the
    reshape meets the next 1-D layer's reshape, with which it collapses."""

    def move(reshape: Layer, layer: Layer) -> bool:
        before, after = queue.shape(reshape.inputs[0]), queue.shape(reshape.output)
        if len(before) < 2 or before[:2] != after[:2]:
            return False
        _swap(queue, reshape, layer)
        if layer.output in queue.outputs:  # the reshape now holds the graph output
            queue.outputs = [reshape.output if o == layer.output else o
                             for o in queue.outputs]
            queue.onnx_tensors.pop(layer.output, None)
        return True

    return rewrite_pairs(queue, "Scale", "Reshape", move)


def _swap(queue: LayerQueue, reshape: Layer, layer: Layer) -> None:
    """The layer reads the reshape's input and the reshape reads the layer: the layer's
    tensor takes the input's shape, the reshape's tensor holds the layer's values in the
    shape they had, and the layer's readers read that."""
    source = reshape.inputs[0]
    shape = queue.shape(source)
    layer.inputs = [source]
    queue.tensors[layer.output] = replace(queue.tensors[layer.output], shape=shape)
    for other in queue.layers:
        if other is not reshape:
            other.inputs = [reshape.output if n == layer.output else n for n in other.inputs]
    reshape.inputs = [layer.output]
    queue.onnx_tensors[reshape.output] = list(queue.onnx_tensors.get(layer.output, []))
    if not queue.onnx_tensors[reshape.output]:
        del queue.onnx_tensors[reshape.output]
    # The layer moves up to the reshape's place, the reshape right after it.
    at = queue.layers.index(reshape)
    queue.layers.remove(layer)
    queue.layers.insert(at, layer)
