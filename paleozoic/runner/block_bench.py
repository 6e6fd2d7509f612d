"""Timing blocks of a queue on their own: each block cut out of the queue with its own
inputs, many blocks in one runtime Session, one run timing them all.

A block timed in its place needs the layers before it to run so its inputs exist, so its
measurement grows with its start; cut out, it costs its own layers only, and any number of
blocks (overlapping in the queue or not, at any MP) share one session build and one run.
A cut-out block is the layers of the span reading fresh session inputs in place of the
tensors the layers before it would produce, and writing the same outputs as in place (the
tensors read after it, or the queue's outputs). Its inputs are standard-normal float32: a
block that reads a tensor of another type (indices, masks) has no fair stand-in for its
values and is left to the caller (`cut_out` returns None).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
import time
from dataclasses import dataclass, replace

import numpy as np

from paleozoic.ir import LayerQueue
from paleozoic.ir.boundary import block_boundary, read_counts
from paleozoic.ir.layer import TensorInfo
from paleozoic.runner.graph import InputRecorder, build_runtime_graph

Span = tuple[int, int, int]  # start, stop, mp


@dataclass(frozen=True)
class Timing:
    """A block's median device time over the repeats, and the wall time a forward spent
    outside the SDK's timed forwards, per block (launches, syncs)."""

    micros: float
    gap_micros: float


def cut_out(queue: LayerQueue, start: int, stop: int, prefix: str) -> LayerQueue | None:
    """queue.layers[start:stop] as a queue of its own, every layer and tensor name prefixed
    (so that many cut-out blocks share a session); None when it reads a non-float tensor."""
    block = queue.layers[start:stop]
    inputs, outputs = block_boundary(block, read_counts(queue.layers), set(queue.outputs))
    if any(queue.tensors[name].dtype != "float32" for name in inputs):
        return None

    def named(tensor: str) -> str:
        return tensor if tensor in queue.weights else prefix + tensor

    layers = [replace(layer, name=prefix + layer.name, inputs=[named(t) for t in layer.inputs],
                      output=named(layer.output)) for layer in block]
    tensors = {named(name): replace(info, name=named(name))
               for name, info in queue.tensors.items()
               if name in inputs or any(name == layer.output for layer in block)}
    return LayerQueue(layers=layers,
                      inputs=[TensorInfo(named(n), queue.tensors[n].shape) for n in inputs],
                      outputs=[named(n) for n in outputs], tensors=tensors,
                      weights=queue.weights, source=queue.source)


def time_blocks(queue: LayerQueue, spans: Sequence[Span], sdk: str, repeats: int,
                sparse: Collection[str] = (), data_parallelism: int = 1,
                seed: int = 0) -> list[Timing | None]:
    """Each span of `spans` cut out and timed, all in one session: the median of `repeats`
    runs of each (after one untimed run on a wall-clock SDK). None for a span cut_out
    refuses."""
    from paleozoic.runner.sdk import runtime_module

    session = runtime_module(sdk).Session()
    rng = np.random.default_rng(seed)
    placed: list[int] = []  # the spans given a block, in block order
    for t, (start, stop, mp) in enumerate(spans):
        prefix = f"b{t}."
        part = cut_out(queue, start, stop, prefix)
        if part is None:
            continue
        recorder = InputRecorder(session)
        layers = build_runtime_graph(part, recorder, bind_weights=True,
                                     sparse={prefix + name for name in sparse})
        for tensor, info in zip(recorder.inputs, part.inputs):
            session.set_input(tensor, rng.standard_normal(info.shape).astype(np.float32))
        block = session.compile_block(f"block{t}", stop - start > 1, mp, layers)
        block.data_parallelism = data_parallelism
        placed.append(t)
    found: list[Timing | None] = [None] * len(spans)
    if not placed:
        return found
    if sdk != "mock":  # the mock's clock is its device model: nothing to warm
        session.run()
    runs, gaps = [], []
    for _ in range(repeats):
        begin = time.perf_counter()
        session.run()
        wall = (time.perf_counter() - begin) * 1e6
        runs.append([float(m) for m in session.block_micros()])
        gaps.append((wall - sum(runs[-1])) / len(placed))
    medians = np.median(np.asarray(runs), axis=0)
    gap = 0.0 if sdk == "mock" else max(0.0, float(np.median(gaps)))
    for b, t in enumerate(placed):
        found[t] = Timing(float(medians[b]), gap)
    return found

