"""Pruning for the SDK's sparse mode (cnmlSparseMode_t): the weights of convolutions and
fully connected layers zeroed by magnitude, in pairs of output channels as Cambricon's
tools prune (Cambricon Caffe's `sparseFilter`: output channels 2i and 2i+1 at the same
input channel and kernel position are zeroed together, by the larger of their two
magnitudes) or one weight at a time. The MLU100's sparse mode exists on convolutions and
fully connected layers only, not on grouped or depthwise convolutions, and so does this.
Works on the ONNX file: the pruned model is a model like any other, which onnxruntime
runs as the reference."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import PaleozoicError
from paleozoic.frontend.loader import LoadedModel
from paleozoic.ops.sparsity import Sparsity, pair_magnitudes, sparsity_of

logger = logging.getLogger(__name__)

PATTERNS = ("pairs", "unstructured")


class PruneError(PaleozoicError):
    """A sparsity option that does not fit the model (a layer it does not have, a value
    outside [0, 1))."""

    exit_code = 2


@dataclass(frozen=True)
class Target:
    """A weight the sparse mode applies to: the node reading it and the weight's output
    channel axis (a filter's 0, a MatMul's or an untransposed Gemm's 1)."""

    node: str
    op_type: str
    initializer: str
    axis: int


def targets(model: onnx.ModelProto) -> list[Target]:
    """The graph's convolutions (one group) and fully connected layers (Gemm, MatMul by a
    2-D constant) whose weight is an initializer, in graph order."""
    inits = {init.name: init for init in model.graph.initializer}
    found = []
    for index, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Conv" and attrs.get("group", 1) == 1 and len(node.input) > 1:
            weight, axis = node.input[1], 0
        elif node.op_type == "Gemm" and len(node.input) > 1:
            weight, axis = node.input[1], 0 if attrs.get("transB", 0) else 1
        elif node.op_type == "MatMul":
            weight, axis = node.input[1], 1
        else:
            continue
        init = inits.get(weight)
        if init is None or (node.op_type == "MatMul" and len(init.dims) != 2):
            continue
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        found.append(Target(name, node.op_type, weight, axis))
    return found


def _smallest(magnitude: np.ndarray, sparsity: float) -> np.ndarray:
    """A mask of the round(sparsity x size) smallest entries (ties by position)."""
    count = int(math.floor(sparsity * magnitude.size + 0.5))
    order = np.argsort(magnitude, axis=None, kind="stable")
    mask = np.zeros(magnitude.size, dtype=bool)
    mask[order[:count]] = True
    return mask.reshape(magnitude.shape)


def prune_pairs(weight: np.ndarray, sparsity: float, axis: int) -> np.ndarray:
    """A copy of `weight` with the `sparsity` fraction of its output-channel pairs of
    smallest magnitude zeroed, both weights of each."""
    zero = _smallest(pair_magnitudes(weight, axis), sparsity)
    channels = weight.shape[axis]
    zero = np.repeat(zero, 2, axis=0)[:channels]
    moved = np.moveaxis(weight, axis, 0)
    out = np.where(zero.reshape(moved.shape), 0, moved).astype(weight.dtype)
    return np.moveaxis(out, 0, axis)


def prune_unstructured(weight: np.ndarray, sparsity: float) -> np.ndarray:
    """A copy of `weight` with the `sparsity` fraction of its weights of smallest
    magnitude zeroed."""
    return np.where(_smallest(np.abs(weight), sparsity), 0, weight).astype(weight.dtype)


def parse_sparsity(text: str) -> tuple[float | None, dict[str, float]]:
    """`0.5`, `conv1=0.8,fc6=0.9` or both (`0.5,fc6=0.9`): the default for every layer and
    the per-layer values."""
    default: float | None = None
    per_layer: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, _, value = item.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            raise PruneError(f"--sparsity {text!r}: {value!r} is not a number; give a "
                             f"fraction such as 0.5 or LAYER=0.8") from None
        if not 0.0 <= number < 1.0:
            raise PruneError(f"--sparsity {text!r}: {number} is outside [0, 1): it is the "
                             f"fraction of weights (or pairs) to zero")
        if name:
            per_layer[name] = number
        elif default is not None:
            raise PruneError(f"--sparsity {text!r}: two values for every layer")
        else:
            default = number
    if default is None and not per_layer:
        raise PruneError("--sparsity is empty; give a fraction such as 0.5 or LAYER=0.8")
    return default, per_layer


@dataclass(frozen=True)
class Pruned:
    target: Target
    sparsity: float
    before: Sparsity
    after: Sparsity


def prune(loaded: LoadedModel, default: float | None, per_layer: dict[str, float],
          pattern: str = "pairs") -> tuple[onnx.ModelProto, list[Pruned]]:
    """The model with its targets' weights pruned (`per_layer` by node name, `default` for
    the others; a target with neither is left as it is), and what changed per target. A
    weight two nodes read is pruned once, at the larger of their sparsities."""
    if pattern not in PATTERNS:
        raise PruneError(f"pattern {pattern!r}: expected one of {', '.join(PATTERNS)}")
    found = targets(loaded.proto)
    names = {t.node for t in found}
    unknown = sorted(set(per_layer) - names)
    if unknown:
        listed = ", ".join(sorted(names)[:12]) + (", ..." if len(names) > 12 else "")
        raise PruneError(f"{loaded.source}: no convolution or fully connected layer named "
                         f"{', '.join(unknown)} (sparse mode applies to: {listed or 'none'})")
    wanted: dict[str, tuple[float, Target]] = {}
    for target in found:
        value = per_layer.get(target.node, default)
        if value is None:
            continue
        if target.initializer not in wanted or wanted[target.initializer][0] < value:
            wanted[target.initializer] = (value, target)
    out = onnx.ModelProto()
    out.CopyFrom(loaded.proto)
    report = []
    for init in out.graph.initializer:
        array = (np.asarray(loaded.weights[init.name]) if init.name in loaded.weights
                 else numpy_helper.to_array(init))
        if init.name in wanted:
            value, target = wanted[init.name]
            before = sparsity_of(array, target.axis)
            array = (prune_pairs(array, value, target.axis) if pattern == "pairs"
                     else prune_unstructured(array, value))
            report.append(Pruned(target, value, before, sparsity_of(array, target.axis)))
            logger.info("%s: %s pruned to %.2f", target.node, init.name, value)
        elif init.name not in loaded.weights:
            continue  # its data is in the proto already
        init.CopyFrom(numpy_helper.from_array(array, init.name))
    return out, report
