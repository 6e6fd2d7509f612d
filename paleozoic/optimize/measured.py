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

Wall-clock timings (the oneDNN SDK) are noisy, and a search that takes the cheapest of many
noisy costs picks the lucky ones: each session runs once untimed (first-touch page faults,
primitive caches), then `repeats` times, and a block's cost is its median. With
`max_block` the oracle has a cost table, so DP asks for n^2 blocks no more: every allowed
block of up to `max_block` layers is timed in its context, many blocks per session (a
session times as many non-overlapping candidate blocks as fit), plus the blocks of the
per-layer and fuse-all plans at each MP, so the table always holds both built-in plans and
the search can only match or beat them on its own measurements. Longer blocks cost inf.
MPs above the machine's cores are the cores' count (the SDK caps the threads); they cost
the same, and the search's ties go to the smaller MP. Each table entry also carries the
per-block wall time a forward spends outside the SDK's timed forwards (launches, queue
syncs between blocks; `block_gap_us`), as the measured sum of many small blocks otherwise
undercounts a plan that cuts often.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable, Collection, Sequence

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize.oracle import Span

logger = logging.getLogger(__name__)

Observer = Callable[[int, int, int, float], None]

# The lead a searched plan needs over the built-in ones as whole forwards (confirm).
CONFIRM_MARGIN = 0.03


class MeasuredOracle:
    name = "measured"

    def __init__(self, queue: LayerQueue, repeats: int = 3, sdk: str = "mock",
                 max_block: int | None = None, sparse: Collection[str] = (),
                 data_parallelism: int = 1) -> None:
        from paleozoic.runner.sdk import check_sdk

        if repeats < 1:
            raise ValueError(f"repeats must be at least 1, got {repeats}")
        if max_block is not None and max_block < 1:
            raise ValueError(f"max_block must be at least 1, got {max_block}")
        self.queue = queue
        self.repeats = repeats
        self.max_block = max_block
        self.sparse = frozenset(sparse)  # layers built in the SDK's sparse mode
        # Groups of frames the measured forwards run at once (on a CPU SDK the batch runs
        # as one whatever it is; on the mock it changes the simulated time).
        self.data_parallelism = data_parallelism
        self.sdk = check_sdk(sdk)
        self.cache: dict[Span, float] = {}
        self.observers: list[Observer] = []   # called with (start, stop, mp, micros)
        self.sessions = 0                     # how many sessions were built and run
        # Per session, the wall time of a forward outside its blocks' SDK time, per block
        # (the runtime's launches, queue syncs, host copies between blocks).
        self.gaps: list[float] = []

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        key = (start, stop, mp)
        if key not in self.cache:
            prefix = [(i, i + 1, 1) for i in range(start)]
            self._measure(prefix + [key], timed={len(prefix)})
        return self.cache[key]

    def cost_table(self, mps: Sequence[int]) -> np.ndarray | None:
        """[n, n+1, len(mps)] costs (see the module notes); None without max_block, as n^2 *
        |mps| sessions is not cheap."""
        if self.max_block is None:
            return None
        from paleozoic.optimize.oracle import plan_spans
        from paleozoic.optimize.plans import fuse_all, per_layer
        from paleozoic.optimize.space import SearchSpace

        space = SearchSpace.from_queue(self.queue)
        n = space.n
        cores = os.cpu_count() or 1
        for mp in sorted({min(mp, cores) for mp in mps}):
            for make in (per_layer, fuse_all):
                spans = [s[:3] for s in plan_spans(make(self.queue, mp=mp), self.queue)]
                self.measure_plan(spans)
            for length in range(2, self.max_block + 1):
                needed = {start for start in range(n - length + 1)
                          if space.allows(start, start + length)
                          and (start, start + length, mp) not in self.cache}
                while needed:  # one session per greedy tiling of what is left
                    spans, timed, i = [], set(), 0
                    while i < n:
                        if i in needed:
                            needed.discard(i)
                            timed.add(len(spans))
                            spans.append((i, i + length, mp))
                            i += length
                        else:
                            spans.append((i, i + 1, mp))
                            i += 1
                    self._measure(spans, timed)
        # Each block also costs the runtime's work around it, which its SDK time leaves
        # out: without it, a plan of many small blocks looks as cheap as one of few.
        gap = self.block_gap_us()
        table = np.full((n, n + 1, len(mps)), np.inf)
        for k, mp in enumerate(mps):
            for (start, stop, at), us in self.cache.items():
                if at == min(mp, cores):
                    table[start, stop, k] = us + gap
        return table

    def block_gap_us(self) -> float:
        """The median per-block time a forward spends outside its blocks (0 on the mock)."""
        return float(np.median(self.gaps)) if self.gaps else 0.0

    def measure_plan(self, spans: Sequence[Span]) -> list[float]:
        """Times every block of a plan (spans covering the queue) in one session."""
        missing = {t for t, span in enumerate(spans) if tuple(span) not in self.cache}
        if missing:
            self._measure([tuple(s) for s in spans], timed=missing)
        return [self.cache[tuple(s)] for s in spans]

    def confirm(self, plan: Plan, mp: int, rounds: int = 3,
                margin: float = CONFIRM_MARGIN) -> Plan:
        """The searched plan against per-layer and fuse-all at `mp`, each timed as whole
        forwards: a table of blocks timed in context still misprices a whole plan (cache
        state, layouts at block edges), so `tune --cost measured` on a wall-clock SDK keeps
        the fastest of the three as measured here. Every candidate's session is compiled
        once, then `rounds` rounds run each `repeats` times in turn, so drift on a shared
        machine hits all of them; a candidate's time is its median forward in us.

        The searched plan is kept only when it beats the faster built-in plan by more than
        `margin`: two sessions of the same plan, timed in turns in one process, differ by
        up to 2.3% here (benchmarks/results/backends.md, run 5: VGG-19 83.6 vs 85.5 ms;
        their buffers land elsewhere), so a smaller lead is not evidence, and ZFNet's DP
        plan, kept on a lead that small, ran 4% slower than fuse-all when timed again.

        Returns the plan kept, its notes' "whole_plan_us" holding every candidate's time (a
        built-in plan identical to the searched one, MPs above the cores counting as the
        cores, is not timed twice: the searched plan's "same_as" names it). Plans with
        blocks outside fp32 are returned as they are: the oracle times fp32 only."""
        from paleozoic.optimize.oracle import plan_cost, plan_spans
        from paleozoic.optimize.plans import fuse_all, per_layer

        if any(b.precision.value != "fp32" or b.layer_precision for b in plan.blocks):
            return plan
        cores = os.cpu_count() or 1

        def key(p: Plan) -> tuple:
            return tuple((s, e, min(m, cores), f) for s, e, m, f in plan_spans(p, self.queue))

        candidates = {plan.strategy: plan}
        for make in (fuse_all, per_layer):
            builtin = make(self.queue, mp=mp)
            if key(builtin) == key(plan):
                plan.notes["same_as"] = builtin.strategy
            else:
                candidates[builtin.strategy] = builtin
        sessions = {}
        for name, candidate in candidates.items():
            spans = plan_spans(candidate, self.queue)
            sessions[name] = self._session([s[:3] for s in spans], fused=[s[3] for s in spans])
        walls: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(rounds):
            for name, session in sessions.items():
                session.run()  # untimed: its caches after the others ran
                for _ in range(self.repeats):
                    start = time.perf_counter()
                    session.run()
                    walls[name].append((time.perf_counter() - start) * 1e6)
        us = {name: float(np.median(w)) for name, w in walls.items()}
        builtins = [name for name in candidates if candidates[name] is not plan]
        best = plan.strategy
        if builtins:
            fastest = min(builtins, key=us.__getitem__)
            if us[plan.strategy] >= us[fastest] * (1.0 - margin):
                best = fastest
        logger.info("whole-plan timings: %s; keeping %s",
                    ", ".join(f"{n} {t:,.1f} us" for n, t in us.items()), best)
        chosen = candidates[best]
        if chosen is not plan:
            chosen.notes["cost_us"] = plan_cost(chosen, self.queue, self)
            chosen.notes["oracle"] = self.name
        chosen.notes["whole_plan_us"] = us
        return chosen

    def _session(self, spans: list[Span], fused: Sequence[bool] | None = None):
        """A runtime session of the queue with `spans` compiled as blocks (fused when longer
        than a layer, unless `fused` says otherwise) and random standard-normal inputs."""
        from paleozoic.runner.graph import InputRecorder, build_runtime_graph
        from paleozoic.runner.sdk import runtime_module

        session = runtime_module(self.sdk).Session()
        recorder = InputRecorder(session)
        layers = build_runtime_graph(self.queue, recorder, bind_weights=True,
                                     sparse=self.sparse)
        rng = np.random.default_rng(0)
        for tensor, info in zip(recorder.inputs, self.queue.inputs):
            session.set_input(tensor, rng.standard_normal(info.shape).astype(np.float32))
        for t, (start, stop, mp) in enumerate(spans):
            fuse = fused[t] if fused is not None else stop - start > 1
            block = session.compile_block(f"block{t}", fuse, mp, layers[start:stop])
            block.data_parallelism = self.data_parallelism
        return session

    def _measure(self, spans: list[Span], timed: set[int]) -> None:
        # Blocks after the last timed one would only add compile and run time.
        spans = spans[:max(timed) + 1]
        session = self._session(spans)
        if self.sdk != "mock":  # the mock's clock is its device model: nothing to warm
            session.run()  # untimed: first touches, caches
        runs, gaps = [], []
        for _ in range(self.repeats):
            start = time.perf_counter()
            session.run()
            wall = (time.perf_counter() - start) * 1e6
            runs.append([float(m) for m in session.block_micros()])
            gaps.append((wall - sum(runs[-1])) / len(spans))
        best = [float(v) for v in np.median(np.asarray(runs), axis=0)]
        if self.sdk != "mock":  # the mock's block times are its device model's, not wall
            self.gaps.append(max(0.0, float(np.median(gaps))))
        self.sessions += 1
        for t in sorted(timed):
            span = spans[t]
            self.cache[span] = best[t]
            logger.debug("measured %s: %.2f us", span, best[t])
            for observer in list(self.observers):
                observer(*span, best[t])
