"""Minimal reproductions of what the fuzzer (test_fuzz.py, fuzz_graphs.py) found, plus a
check of the fuzzer's own onnxruntime reference for layers onnxruntime cannot run.

Known bugs stay here as strict xfails naming the cause; when one is fixed the xfail turns
into a failure (XPASS), the marker goes, and the fuzzer's generator gets the construct back
(see the note at each test)."""

from __future__ import annotations

import numpy as np
import pytest

from fuzz_graphs import reference_model
from helpers import np_lrn
from paleozoic.pipeline import load_queue, resolve_plan
from robust_util import one_node_model, ort_outputs, run_queue


def lrn_model(channels: int, size: int, alpha: float = 0.3, beta: float = 0.75,
              bias: float = 1.5):
    return one_node_model("LRN", [1, channels, 4, 3], size=size, alpha=alpha, beta=beta,
                          bias=bias)


@pytest.mark.parametrize("channels,size", [(5, 1), (5, 2), (5, 3), (5, 4), (1, 2), (3, 6),
                                           (6, 7)])
def test_reference_model_spells_lrn_as_onnx_defines_it(channels, size):
    """fuzz_graphs.reference_model: even sizes (refused by onnxruntime's kernel) become the
    ONNX definition in ops onnxruntime runs; odd ones stay LRN nodes."""
    model = lrn_model(channels, size)
    ref = reference_model(model)
    assert (ref is model) == bool(size % 2)
    x = np.random.default_rng(size).standard_normal((1, channels, 4, 3)).astype(np.float32) * 2
    (got,) = ort_outputs(ref, {"x": x})
    np.testing.assert_allclose(got, np_lrn(x, size, 0.3, 0.75, 1.5), rtol=1e-5, atol=1e-6)


# Found by the fuzzer: TVM's ONNX LRN converter pads size // 2 channels on both sides of
# its avg_pool3d window, so for an even size its result had C + 1 channels and importing
# failed inside TVM. The importer now hands TVM size + 1 and takes LRN's parameters from
# the ONNX node; the runtime's kernel implements ONNX's asymmetric even window.
@pytest.mark.parametrize("channels,size", [(5, 2), (5, 4), (1, 2)])
def test_lrn_even_size(channels, size):
    model = lrn_model(channels, size)
    queue = load_queue(model)
    x = np.random.default_rng(0).standard_normal((1, channels, 4, 3)).astype(np.float32)
    (ours,) = run_queue(queue, resolve_plan(queue, "per-layer"), [x])
    (ref,) = ort_outputs(reference_model(model), {"x": x})
    np.testing.assert_allclose(ours.reshape(ref.shape), ref, rtol=1e-3, atol=1e-4)
