"""Common subexpressions: exporters repeat work that depends only on the inputs (HuggingFace
encoders turn the attention mask into the same additive bias in every layer, a `Where` each,
which runs on the host and cuts the fused block around it). A layer of the same kind,
attributes, inputs and weight values as an earlier one is that layer: its readers read the
earlier output instead."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from paleozoic.ir import Layer, LayerQueue


def _canonical(value: Any) -> Any:
    """A hashable, exact stand-in for an attribute value (arrays by their bytes)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, hashlib.sha1(value.tobytes()).hexdigest())
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_canonical(v) for v in value))
    if isinstance(value, float) and value != value:
        return ("nan",)  # NaN equals NaN here: the same constant
    return value


def _key(queue: LayerQueue, layer: Layer, digests: dict[str, str]) -> tuple:
    weights = []
    for role, name in sorted(layer.weights.items()):
        if name not in digests:
            array = np.asarray(queue.weights[name])
            digests[name] = hashlib.sha1(
                array.dtype.str.encode() + repr(array.shape).encode() + array.tobytes()
            ).hexdigest()
        weights.append((role, digests[name]))
    out = queue.tensors[layer.output]
    return (layer.kind, _canonical(layer.op.attrs), tuple(layer.inputs), tuple(weights),
            layer.precision, out.shape, out.dtype)


def merge_duplicate_layers(queue: LayerQueue) -> int:
    """Drops each layer that repeats an earlier one (see the module's docstring); a layer
    whose output is a graph output stays, so the session keeps every output tensor."""
    seen: dict[tuple, Layer] = {}
    digests: dict[str, str] = {}
    renamed: dict[str, str] = {}
    outputs = set(queue.outputs)
    kept: list[Layer] = []
    for layer in queue.layers:
        layer.inputs = [renamed.get(name, name) for name in layer.inputs]
        key = _key(queue, layer, digests)
        first = seen.get(key)
        if first is None or layer.output in outputs:
            seen.setdefault(key, layer)
            kept.append(layer)
            continue
        renamed[layer.output] = first.output
        first.onnx_nodes = list(dict.fromkeys(first.onnx_nodes + layer.onnx_nodes))
        same = queue.onnx_tensors.pop(layer.output, [])
        queue.onnx_tensors[first.output] = list(dict.fromkeys(
            queue.onnx_tensors.get(first.output, []) + same))
        queue.tensors.pop(layer.output, None)
    dropped = len(queue.layers) - len(kept)
    queue.layers[:] = kept
    return dropped
