"""Passes: each rewrite keeps the numbers (checked against the unrewritten queue through a
numpy evaluation of the affected layers) and removes what it claims to."""

from __future__ import annotations

import numpy as np
import onnx

from paleozoic.frontend import import_onnx
from paleozoic.passes import (
    DEFAULT_PASSES, run_passes,
)
from paleozoic.passes.affine import fold_bias_into_producer, merge_scale_chains
from paleozoic.passes.reshape import collapse_reshapes, drop_flatten_before_fc


def test_default_pipeline_on_small_cnn(small_cnn: onnx.ModelProto) -> None:
    queue = run_passes(import_onnx(small_cnn))
    kinds = [layer.kind for layer in queue.layers]
    assert kinds == ["Conv", "BatchNorm", "Scale", "Active", "Pool", "Conv", "Add",
                     "GlobalAvgPool", "FullyConnected", "Softmax"]
    conv = queue.layers[0]
    assert "bias" in conv.weights  # the Add of the ONNX Conv bias folded back in
    fc = queue.layers[-2]
    assert "bias" in fc.weights
    # Weights no layer references are gone.
    referenced = {w for layer in queue.layers for w in layer.weights.values()}
    assert set(queue.weights) == referenced


def test_bias_fold_keeps_values(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    scale = queue.layers[1]
    beta = queue.weights[scale.weights["beta"]].copy()
    assert fold_bias_into_producer(queue) == 2
    np.testing.assert_array_equal(queue.weights[queue.layers[0].weights["bias"]], beta)


def test_merge_scale_chains_composes_affine_maps(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    # conv1's bias Scale and BN's Scale are not adjacent; make two adjacent Scales.
    first = next(l for l in queue.layers if l.kind == "Scale" and l.name.endswith("scale"))
    a1, b1 = (queue.weights[first.weights[r]].copy() for r in ("alpha", "beta"))
    x = np.linspace(-2, 2, a1.size).astype(np.float32)
    # Append a second Scale after `first` by hand.
    from paleozoic.ir import Layer, Operator, TensorInfo
    second = Layer("extra", Operator("Scale", {}), [first.output], "extra",
                   {"alpha": "extra.alpha", "beta": "extra.beta"})
    queue.weights["extra.alpha"] = np.full_like(a1, 2.0)
    queue.weights["extra.beta"] = np.full_like(a1, -1.0)
    queue.tensors["extra"] = TensorInfo("extra", queue.shape(first.output))
    index = queue.layers.index(first)
    for layer in queue.layers[index + 1:]:
        layer.inputs = ["extra" if n == first.output else n for n in layer.inputs]
    queue.layers.insert(index + 1, second)
    assert merge_scale_chains(queue) == 1
    a, b = (queue.weights[first.weights[r]] for r in ("alpha", "beta"))
    np.testing.assert_allclose(a * x + b, 2 * (a1 * x + b1) - 1, rtol=1e-6)
    assert all(layer.name != "extra" for layer in queue.layers)


def test_reshape_passes(small_cnn: onnx.ModelProto) -> None:
    queue = import_onnx(small_cnn)
    assert sum(layer.kind == "Reshape" for layer in queue.layers) == 1
    assert collapse_reshapes(queue) == 0  # the flatten changes the shape
    assert drop_flatten_before_fc(queue) == 1
    assert not any(layer.kind == "Reshape" for layer in queue.layers)


def test_pass_list_is_ordered() -> None:
    assert DEFAULT_PASSES[0] is collapse_reshapes
