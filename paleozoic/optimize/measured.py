"""Measurement as a cost oracle: run blocks through the runtime and read their timing.

What it measures is the runtime's reported device time (`Session.block_micros()`, the SDK
notifiers around each block). On the CPU mock that clock is the simulated device clock,
which is deterministic, so `repeats` only costs wall time there; on the oneDNN SDK
(`sdk="onednn"`) it is the wall-clock time of each block's forwards, and the minimum over
repeats is kept.

Each measurement builds a fresh `_runtime.Session` (the SDK compiles a layer only once per
session): the layers before the block are compiled alone on one core so the block's inputs
exist, the block is compiled at its MP, everything runs, and the block's own entry of
block_micros() is kept. Results are cached per (start, stop, mp). `measure_plan` times every
block of a whole plan in one session.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np

from paleozoic.ir import LayerQueue
from paleozoic.optimize.oracle import Span

logger = logging.getLogger(__name__)

Observer = Callable[[int, int, int, float], None]


class MeasuredOracle:
    name = "measured"

    def __init__(self, queue: LayerQueue, repeats: int = 3, sdk: str = "mock") -> None:
        from paleozoic.sdk import check_sdk

        if repeats < 1:
            raise ValueError(f"repeats must be at least 1, got {repeats}")
        self.queue = queue
        self.repeats = repeats
        self.sdk = check_sdk(sdk)
        self.cache: dict[Span, float] = {}
        self.observers: list[Observer] = []   # called with (start, stop, mp, micros)
        self.sessions = 0                     # how many sessions were built and run

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        key = (start, stop, mp)
        if key not in self.cache:
            prefix = [(i, i + 1, 1) for i in range(start)]
            self._measure(prefix + [key], timed={len(prefix)})
        return self.cache[key]

    def cost_table(self, mps: Sequence[int]) -> np.ndarray | None:
        return None  # n^2 * |mps| runtime sessions is not cheap

    def measure_plan(self, spans: Sequence[Span]) -> list[float]:
        """Times every block of a plan (spans covering the queue) in one session."""
        missing = {t for t, span in enumerate(spans) if tuple(span) not in self.cache}
        if missing:
            self._measure([tuple(s) for s in spans], timed=missing)
        return [self.cache[tuple(s)] for s in spans]

    def _measure(self, spans: list[Span], timed: set[int]) -> None:
        from paleozoic.optimize.device_cost import InputRecorder, build_runtime_graph
        from paleozoic.sdk import runtime_module

        session = runtime_module(self.sdk).Session()
        recorder = InputRecorder(session)
        layers = build_runtime_graph(self.queue, recorder, bind_weights=True)
        rng = np.random.default_rng(0)
        for tensor, info in zip(recorder.inputs, self.queue.inputs):
            session.set_input(tensor, rng.standard_normal(info.shape).astype(np.float32))
        for t, (start, stop, mp) in enumerate(spans):
            session.compile_block(f"block{t}", stop - start > 1, mp, layers[start:stop])
        best = [float("inf")] * len(spans)
        for _ in range(self.repeats):
            session.run()
            best = [min(b, float(m)) for b, m in zip(best, session.block_micros())]
        self.sessions += 1
        for t in sorted(timed):
            span = spans[t]
            self.cache[span] = best[t]
            logger.debug("measured %s: %.2f us", span, best[t])
            for observer in list(self.observers):
                observer(*span, best[t])
