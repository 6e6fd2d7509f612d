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


def _built(queue: LayerQueue, spans, deferred: bool):
    """A session of `spans` with the queue's layers, built with or without deferred
    preparation, and the runtime tensor of the queue's first output."""
    import contextlib

    import numpy as np

    from paleozoic.runner.graph import InputRecorder, build_runtime_graph
    from paleozoic.runner.sdk import runtime_module

    runtime = runtime_module("mock")
    session = runtime.Session()
    recorder = InputRecorder(session)
    layers = build_runtime_graph(queue, recorder, bind_weights=True)
    rng = np.random.default_rng(3)
    for tensor, info in zip(recorder.inputs, queue.inputs):
        session.set_input(tensor, rng.standard_normal(info.shape).astype(np.float32))
    output = layers[-1].output
    with runtime.DeferredPreparation() if deferred else contextlib.nullcontext():
        for t, (start, stop, mp) in enumerate(spans):
            session.compile_block(f"block{t}", stop - start > 1, mp, layers[start:stop])
    return session, output


def test_deferred_preparation_times_the_same_and_computes_the_same_when_run(queue) -> None:
    import numpy as np

    from paleozoic.runner.sdk import runtime_module

    n = len(queue.layers)
    # An op alone (a base op) and fused blocks, as a measured search builds them.
    spans = [(0, 1, 1), (1, n - 1, 8), (n - 1, n, 2)]
    usual, usual_out = _built(queue, spans, deferred=False)
    later, later_out = _built(queue, spans, deferred=True)
    with runtime_module("mock").CallLog(skip_compute=True):
        usual.run()
        later.run()  # timed without computing: nothing is prepared
    assert list(later.block_micros()) == list(usual.block_micros())
    assert all(us > 0 for us in later.block_micros())
    # What computes each op is known once prepared ("?" before).
    assert {text for _, text in later.implementations()} == {"?"}
    assert "?" not in {text for _, text in usual.implementations()}
    # The first forward that computes prepares the kernels it was compiled with.
    usual.run()
    later.run()
    expected = np.asarray(usual.get(usual_out))
    assert np.isfinite(expected).all() and np.abs(expected).max() > 0
    np.testing.assert_array_equal(np.asarray(later.get(later_out)), expected)
    assert later.implementations() == usual.implementations()
    assert list(later.block_micros()) == list(usual.block_micros())
    # Compiled after the context closed: prepared at compile again.
    assert "?" not in {text for _, text in _built(queue, spans, False)[0].implementations()}


def test_measured_blocks_time_as_blocks_prepared_at_compile(queue) -> None:
    from paleozoic.runner.sdk import runtime_module

    n = len(queue.layers)
    spans = [(0, 1, 1), (1, n, 32)]
    found = [t.micros for t in time_blocks(queue, spans, Bench())]
    session, _ = _built(queue, spans, deferred=False)
    with runtime_module("mock").CallLog(skip_compute=True):
        session.run()
    assert found == pytest.approx([float(us) for us in session.block_micros()], rel=1e-6)
