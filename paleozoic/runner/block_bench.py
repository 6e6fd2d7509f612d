"""Timing blocks of a queue on a board: cut out of the queue, many blocks in one runtime
Session, one run timing them all.

A block timed in its place needs the layers before it to run so its inputs exist, so its
measurement grows with its start; cut out, it costs its own layers only, and any number of
blocks (overlapping in the queue or not, at any MP) share one session build and one run.
A cut-out block is the layers of the span reading fresh session inputs in place of the
tensors the layers before it would produce, and writing the same outputs as in place (the
tensors read after it, or the queue's outputs). Its inputs are standard-normal float32: a
block that reads a tensor of another type (indices, masks) has no fair stand-in for its
values, so it is timed in its place instead (`time_in_place`).

On a wall-clock SDK a block whose repeats spread more than `Bench.noise` is not trusted:
the session runs its repeats again (twice at most) and the median of all runs is kept.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paleozoic.ir import LayerQueue
from paleozoic.ir.boundary import block_boundary, read_counts
from paleozoic.ir.layer import Layer, TensorInfo
from paleozoic.runner.graph import InputRecorder, build_runtime_graph

Span = tuple[int, int, int]  # start, stop, mp
Batch = list[Span]            # the blocks of one session

# Relative spread (max - min) / median of a block's repeats past which they are run again.
NOISE = 0.2
EXTRA_ROUNDS = 2


@dataclass(frozen=True)
class Bench:
    """How blocks are timed: on which SDK, with how many timed runs, which layers in the
    SDK's sparse mode, how many groups of frames at once, and the noise limit."""

    sdk: str = "mock"
    repeats: int = 1
    sparse: frozenset[str] = field(default_factory=frozenset)
    data_parallelism: int = 1
    noise: float = NOISE

    @property
    def wall_clock(self) -> bool:
        return self.sdk != "mock"  # the mock's clock is its device model's


@dataclass(frozen=True)
class Timing:
    """A block's median device time over the repeats, the wall time a forward spent
    outside the SDK's timed forwards per block (launches, syncs), and whether its repeats
    disagreed enough to be run again."""

    micros: float
    gap_micros: float = 0.0
    remeasured: bool = False


def cut_out(queue: LayerQueue, start: int, stop: int, prefix: str,
            reads: Mapping[str, int] | None = None) -> LayerQueue | None:
    """queue.layers[start:stop] as a queue of its own, every layer and tensor name prefixed
    (so that many cut-out blocks share a session); None when it reads a non-float tensor.
    `reads`: read_counts(queue.layers), when the caller has it."""
    block = queue.layers[start:stop]
    reads = read_counts(queue.layers) if reads is None else reads
    inputs, outputs = block_boundary(block, reads, set(queue.outputs))
    if any(queue.tensors[name].dtype != "float32" for name in inputs):
        return None

    def named(tensor: str) -> str:
        return tensor if tensor in queue.weights else prefix + tensor

    layers = [_renamed(layer, prefix + layer.name, [named(t) for t in layer.inputs],
                       named(layer.output)) for layer in block]
    tensors = {}
    for name in (*inputs, *(layer.output for layer in block)):
        info = queue.tensors[name]
        tensors[named(name)] = TensorInfo(named(name), info.shape, info.dtype)
    return LayerQueue(layers=layers,
                      inputs=[TensorInfo(named(n), queue.tensors[n].shape) for n in inputs],
                      outputs=[named(n) for n in outputs], tensors=tensors,
                      weights=queue.weights, source=queue.source)


def _renamed(layer: Layer, name: str, inputs: list[str], output: str) -> Layer:
    # dataclasses.replace, less its field-by-field rebuild: a measured search cuts out
    # hundreds of thousands of layers.
    copy = object.__new__(Layer)
    copy.__dict__.update(layer.__dict__, name=name, inputs=inputs, output=output)
    return copy


def time_blocks(queue: LayerQueue, spans: Sequence[Span], bench: Bench,
                seed: int = 0) -> list[Timing]:
    """Each span of `spans` timed: those cut_out takes all in one session, the others each
    in its place."""
    from paleozoic.runner.sdk import runtime_module

    session = runtime_module(bench.sdk).Session()
    rng = np.random.default_rng(seed)
    placed: list[int] = []  # the spans given a block of the session, in block order
    reads = read_counts(queue.layers)
    with _building(bench):
        for t, (start, stop, mp) in enumerate(spans):
            prefix = f"b{t}."
            part = cut_out(queue, start, stop, prefix, reads)
            if part is None:
                continue
            recorder = InputRecorder(session)
            layers = build_runtime_graph(part, recorder, bind_weights=True,
                                         sparse={prefix + name for name in bench.sparse})
            for tensor, info in zip(recorder.inputs, part.inputs):
                session.set_input(tensor, _block_input(rng, info.shape, bench))
            block = session.compile_block(f"block{t}", stop - start > 1, mp, layers)
            block.data_parallelism = bench.data_parallelism
            placed.append(t)
    found: dict[int, Timing] = {}
    if placed:
        found.update(zip(placed, _timed(session, range(len(placed)), bench)))
    for t, span in enumerate(spans):
        if t not in found:
            found[t] = time_in_place(queue, span, bench)
    return [found[t] for t in range(len(spans))]


def _building(bench: Bench) -> contextlib.AbstractContextManager:
    """Where a session to time is built: on the mock, whose timed forwards compute nothing
    (_timed), its ops prepare their kernels only if a forward ever computes (packing a
    block's weights was a seventh of timing it); elsewhere as usual."""
    if bench.wall_clock:
        return contextlib.nullcontext()
    from paleozoic.runner.sdk import runtime_module

    return runtime_module(bench.sdk).DeferredPreparation()


def _block_input(rng: np.random.Generator, shape: tuple[int, ...], bench: Bench) -> np.ndarray:
    """A cut-out block's input: standard normal where the clock is a CPU's, which values can
    slow (denormals, saturation); zeros on the mock, whose timed runs compute nothing
    (_timed): drawing a DenseNet's wide inputs took a fifth of its blocks' measuring."""
    if bench.wall_clock:
        return rng.standard_normal(shape).astype(np.float32)
    return np.zeros(shape, np.float32)


def time_in_place(queue: LayerQueue, span: Span, bench: Bench) -> Timing:
    """`span` timed in its place, the layers before it run one by one to make its inputs."""
    start = span[0]
    session = plan_session(queue, [(i, i + 1, 1) for i in range(start)] + [span], bench)
    return _timed(session, [start], bench)[0]


def plan_session(queue: LayerQueue, spans: Sequence[Span], bench: Bench,
                 fused: Sequence[bool] | None = None) -> Any:
    """A runtime session of the queue with `spans` compiled as blocks (fused when longer
    than a layer, unless `fused` says otherwise) and standard-normal inputs."""
    from paleozoic.runner.sdk import runtime_module

    session = runtime_module(bench.sdk).Session()
    recorder = InputRecorder(session)
    layers = build_runtime_graph(queue, recorder, bind_weights=True, sparse=bench.sparse)
    rng = np.random.default_rng(0)
    for tensor, info in zip(recorder.inputs, queue.inputs):
        session.set_input(tensor, rng.standard_normal(info.shape).astype(np.float32))
    with _building(bench):
        for t, (start, stop, mp) in enumerate(spans):
            fuse = fused[t] if fused is not None else stop - start > 1
            block = session.compile_block(f"block{t}", fuse, mp, layers[start:stop])
            block.data_parallelism = bench.data_parallelism
    return session


def _timed(session: Any, blocks: Sequence[int], bench: Bench) -> list[Timing]:
    """The Timings of the session's `blocks` (indices into its block_micros) over
    bench.repeats runs, run again while a block's repeats spread past bench.noise."""
    if not bench.wall_clock:
        # The mock's clock is its device model's, whatever the numbers: its forwards run
        # checked and timed but without computing them (the SDK's skip-compute mode), as
        # a board's runs cost its microseconds, not a CPU's emulation of them.
        from paleozoic.runner.sdk import runtime_module

        with runtime_module(bench.sdk).CallLog(skip_compute=True):
            return _timed_runs(session, blocks, bench)
    session.run()  # untimed: first touches, caches
    return _timed_runs(session, blocks, bench)


def _timed_runs(session: Any, blocks: Sequence[int], bench: Bench) -> list[Timing]:
    runs: list[list[float]] = []
    gaps: list[float] = []
    unsettled = np.zeros(len(blocks), dtype=bool)
    for round_ in range(1 + (EXTRA_ROUNDS if bench.wall_clock else 0)):
        for _ in range(bench.repeats):
            begin = time.perf_counter()
            session.run()
            wall = (time.perf_counter() - begin) * 1e6
            micros = [float(m) for m in session.block_micros()]
            runs.append([micros[b] for b in blocks])
            gaps.append((wall - sum(micros)) / len(micros))
        times = np.asarray(runs)
        spread = (times.max(axis=0) - times.min(axis=0)) / np.maximum(np.median(times, 0), 1e-9)
        noisy = spread > bench.noise
        if round_ == 0:
            unsettled = noisy
        if bench.repeats < 3 or not noisy.any():
            break
    medians = np.median(np.asarray(runs), axis=0)
    gap = max(0.0, float(np.median(gaps))) if bench.wall_clock else 0.0
    return [Timing(float(m), gap, bool(u)) for m, u in zip(medians, unsettled)]
