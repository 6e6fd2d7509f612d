"""The workload builders: valid ONNX, run by onnxruntime, the standard parameter counts,
and a batch of two through a Paleozoic session (the batch-size knob)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import compile_build_compare, onnxruntime_outputs

from paleozoic_testing.workloads import WORKLOADS, _Graph, build, parameter_count

# Published parameter counts (torchvision / Keras), plus BatchNorm running statistics.
PARAMS = {"resnet18": 11.69e6, "resnet50": 25.56e6, "vgg16": 138.36e6, "vgg19": 143.67e6,
          "mobilenet_v2": 3.50e6, "alexnet": 61.10e6}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_is_valid_and_runs(name: str) -> None:
    model = build(name, seed=0)
    onnx.checker.check_model(model)
    assert model.opset_import[0].version == 13
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 224, 224]
    assert parameter_count(model) == pytest.approx(PARAMS[name], rel=0.02)
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    (logits,) = onnxruntime_outputs(model, {"data": x})
    assert logits.shape == (1, 1000)
    assert np.all(np.isfinite(logits)) and 0.1 < float(logits.std()) < 100.0


def test_builders_are_seeded() -> None:
    a, b, c = build("resnet18", seed=1), build("resnet18", seed=1), build("resnet18", seed=2)
    assert a.SerializeToString() == b.SerializeToString() != c.SerializeToString()


def test_batch_two_end_to_end(tmp_path: Path) -> None:
    """Batch size is the model's input shape: N = 2 through conv, BN, pooling and FC."""
    g = _Graph("batch2", seed=0, batch=2)
    x = g.maxpool(g.relu(g.bn(g.conv("data", 3, 8, 3, stride=4), 8)), 2, 2)
    model = g.model(g.classifier_head(x, 8, classes=10), classes=10)
    for plan in ("per-layer", "fuse-all"):
        compile_build_compare(model, tmp_path / plan, plan=plan)
