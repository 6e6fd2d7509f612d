"""Blocks timed cut out of their queue: the same device time as in place, many to a session."""

from __future__ import annotations

import onnx
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.ir import LayerQueue
from paleozoic.passes import run_passes
from paleozoic.runner.block_bench import Bench, cut_out, time_blocks, time_in_place

pytest.importorskip("paleozoic.optimize.device_cost")


@pytest.fixture
def queue(small_cnn: onnx.ModelProto) -> LayerQueue:
    return run_passes(import_onnx(small_cnn))


def test_cut_out_blocks_cost_what_the_device_model_says(queue) -> None:
    from paleozoic.optimize.device_cost import DeviceModelOracle

    model = DeviceModelOracle(queue)
    n = len(queue.layers)
    spans = [(0, 1, 1), (0, n, 32), (1, min(n, 5), 8), (n - 1, n, 2), (1, min(n, 5), 8)]
    found = time_blocks(queue, spans, Bench())
    for span, timing in zip(spans, found):
        assert timing.micros == pytest.approx(model.block_cost(*span), rel=1e-4), span
        assert timing.gap_micros == 0.0 and not timing.remeasured  # the mock's clock
    # In its place, after the layers before it: the same time.
    assert time_in_place(queue, spans[2], Bench()).micros == pytest.approx(found[2].micros)


def test_cut_out_renames_everything_and_keeps_the_outputs_read_later(queue) -> None:
    part = cut_out(queue, 1, 3, "b7.")
    assert all(layer.name.startswith("b7.") for layer in part.layers)
    assert all(info.name.startswith("b7.") for info in part.inputs)
    later = {t for layer in queue.layers[3:] for t in layer.inputs} | set(queue.outputs)
    kept = {layer.output for layer in queue.layers[1:3]} & later
    assert {name.removeprefix("b7.") for name in part.outputs} == kept
    assert set(part.weights) >= {w for layer in part.layers for w in layer.weights.values()}


def test_a_block_reading_integers_is_not_cut_out(queue) -> None:
    from dataclasses import replace

    first = queue.layers[0].inputs[0]
    queue.tensors[first] = replace(queue.tensors[first], dtype="int64")
    assert cut_out(queue, 0, 1, "b0.") is None
    assert cut_out(queue, 1, 2, "b0.") is not None
