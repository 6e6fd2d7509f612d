"""GridSample as a host layer (HostGridSample): every mode (bilinear, nearest) x padding
(zeros, border, reflection) x align_corners, at positions reaching past the border,
against onnxruntime and against a float64 evaluation (paleozoic.accuracy.truth), on both SDKs;
cubic and 5-D sampling are refused by name."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from paleozoic.errors import PaleozoicError
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.host import grid_sampler
from paleozoic.accuracy.verify import reference_outputs

SDKS = [s for s in ("mock", "onednn") if sdk_available(s)]
COMBOS = list(itertools.product(("bilinear", "nearest"), ("zeros", "border", "reflection"),
                                (0, 1)))


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("mode, padding, align", COMBOS)
def test_grid_sample_matches_onnxruntime_and_float64(mode, padding, align, sdk) -> None:
    model = grid_sampler(mode, padding, align)
    rng = np.random.default_rng(1)
    feeds = {"x": rng.normal(0, 3, (2, 3, 5, 7)).astype(np.float32),
             "q": rng.normal(0, 2, (2, 4, 4, 6)).astype(np.float32)}
    queue = load_queue(model)
    assert "HostGridSample" in [layer.kind for layer in queue.layers]
    (got,) = PlanRunner(queue, resolve_plan(queue, "fuse-all"), sdk=sdk).run(
        list(feeds.values())).values()
    (ort,) = reference_outputs(model, feeds)
    truth = Float64Reference(model).run(feeds)[0]
    scale = float(np.abs(truth).max())
    ours, theirs = float(np.abs(got - truth).max()), float(np.abs(ort - truth).max())
    if mode == "nearest":  # a position a rounding away from a tie may pick the other pixel
        assert np.mean(got == ort) > 0.99
    else:
        assert ours <= max(2 * theirs, 1e-6 * scale), (ours, theirs)


def _single(mode: str, data_rank: int = 4) -> onnx.ModelProto:
    spatial = [3] * (data_rank - 2)
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode)
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, *spatial]),
        helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, *spatial, data_rank - 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, *spatial])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model


def test_cubic_sampling_is_refused_naming_the_mode() -> None:
    with pytest.raises(PaleozoicError, match=r"GridSample mode 'bicubic'"):
        load_queue(_single("cubic"))


def test_volumetric_sampling_is_refused() -> None:
    with pytest.raises(PaleozoicError, match=r"GridSample of NCDHW data: only 4-D"):
        load_queue(_single("linear", data_rank=5))
