"""Measurement as a cost oracle: run blocks through the runtime and read their timing.

What it measures is the runtime's reported device time (`Session.block_micros()`, the SDK
notifiers around each block). On the CPU mock that clock is the simulated device clock,
which is deterministic, so one run is enough there (`repeats` defaults to 1); on the oneDNN
SDK (`sdk="onednn"`) it is the wall-clock time of each block's forwards: each session runs
once untimed (first-touch page faults, primitive caches), then `repeats` times, and a
block's cost is its median, as a search that takes the cheapest of many noisy costs
otherwise picks the lucky ones.

A block is measured cut out of the queue (paleozoic.runner.block_bench): its layers alone,
reading fresh inputs, many blocks to one session, so a measurement costs the block's own
layers whatever its place (a block reading indices or masks is timed in its place instead,
after the layers before it). Each distinct block is measured once: timings are kept by
block_key (its layers, knobs and the board) in a MeasurementStore, which a file makes last
across plans, runs and models (paleozoic.optimize.measurements); `cache` holds them per
(start, stop, mp) for this queue.

Which blocks are measured:
- `block_cost` and `measure_plan` measure what they are asked (an optimizer without a
  table asks block by block).
- `guided` (the mock's board, which the device model describes): cost_table measures the
  blocks the device model points to (paleozoic.optimize.screen: a tolerance screen, then
  rounds until the board's cheapest plan is measured whole) and the per-layer and fuse-all
  plans' blocks at the largest MP (and per-layer's at the smallest, which tune reports);
  other blocks cost inf.
- `max_block` (a board the model does not describe, such as the CPU under oneDNN): every
  allowed block of up to `max_block` layers, plus the built-in plans' blocks at each MP, so
  the table always holds both built-in plans and the search can only match or beat them
  on its own measurements. Longer blocks cost inf. MPs above the machine's cores are the
  cores' count (the SDK caps the threads); they cost the same, and the search's ties go
  to the smaller MP. Each table entry also carries the per-block wall time a forward
  spends outside the SDK's timed forwards (launches, queue syncs between blocks;
  `block_gap_us`), as the measured sum of many small blocks otherwise undercounts a plan
  that cuts often.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable, Collection, Sequence

import numpy as np

from paleozoic.farm.service import Farm, LocalBoard
from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize.measurements import (
    BlockKeys, Measured, MeasurementStore, board_fingerprint,
)
from paleozoic.optimize.oracle import Span
from paleozoic.runner.block_bench import Bench, plan_session

logger = logging.getLogger(__name__)

Observer = Callable[[int, int, int, float], None]

# The lead a searched plan needs over the built-in ones as whole forwards (confirm).
CONFIRM_MARGIN = 0.03

# A session of cut-out blocks holds at most this many layers, blocks and bytes of weights
# (a larger block goes alone): enough to spread one build over many timings, few enough to
# stay small. Each block holds its own copy of its weights, so without the byte bound one
# session of VGG's blocks at many MPs would hold fc6 (411 MB) dozens of times.
SESSION_LAYERS = 1024
SESSION_BLOCKS = 128
SESSION_WEIGHT_BYTES = 256 << 20


class MeasuredOracle:
    name = "measured"

    def __init__(self, queue: LayerQueue, repeats: int | None = None, sdk: str = "mock",
                 max_block: int | None = None, sparse: Collection[str] = (),
                 data_parallelism: int = 1, guided: bool = False,
                 store: MeasurementStore | None = None, farm: Farm | None = None) -> None:
        from paleozoic.runner.sdk import check_sdk

        if repeats is None:  # the mock's clock is deterministic: one run says it all
            repeats = 1 if sdk == "mock" else 3
        if repeats < 1:
            raise ValueError(f"repeats must be at least 1, got {repeats}")
        if max_block is not None and max_block < 1:
            raise ValueError(f"max_block must be at least 1, got {max_block}")
        self.queue = queue
        self.max_block = max_block
        self.sparse = frozenset(sparse)  # layers built in the SDK's sparse mode
        # Groups of frames the measured forwards run at once (on a CPU SDK the batch runs
        # as one whatever it is; on the mock it changes the simulated time).
        self.data_parallelism = data_parallelism
        self.sdk = check_sdk(sdk)
        if guided and self.sdk != "mock":
            raise ValueError(f"guided measurement follows the device model, which describes "
                             f"the mock's board, not {self.sdk}'s")
        self.guided = guided
        self.store = store if store is not None else MeasurementStore()
        self.farm: Farm = farm if farm is not None else LocalBoard()
        self.bench = Bench(self.sdk, repeats, self.sparse, data_parallelism)
        self.board = board_fingerprint(self.sdk)
        self._keys = BlockKeys(queue, self.board, self.sparse, data_parallelism)
        self._weight_bytes = [sum(queue.weights[w].nbytes for w in layer.weights.values()
                                  if w in queue.weights) for layer in queue.layers]
        self.cache: dict[Span, float] = {}
        self.observers: list[Observer] = []   # called with (start, stop, mp, micros)
        # Called with (layers timed, layers to time), counting each block's layers, as a
        # call's batches come back.
        self.measuring: Callable[[int, int], None] | None = None
        self.sessions = 0                     # how many sessions were built and run
        self.measured = 0                     # blocks timed (not found in the store)
        # Per block known, the wall time a forward spent outside its blocks' SDK time (the
        # runtime's launches, queue syncs, host copies between blocks).
        self.gaps: list[float] = []

    def block_cost(self, start: int, stop: int, mp: int) -> float:
        self.measure_blocks([(start, stop, mp)])
        return self.cache[(start, stop, mp)]

    def measure_blocks(self, spans: Sequence[Span]) -> None:
        """Times the blocks of `spans` not known yet: each distinct block (block_key) once,
        found in the store or cut out and timed, many to a session (module notes)."""
        missing = [s for s in dict.fromkeys(tuple(s) for s in spans) if s not in self.cache]
        keys = dict(zip(missing, self._keys.keys((*s, s[1] - s[0] > 1) for s in missing)))
        fresh: dict[str, Span] = {}
        for span in missing:
            if self.store.get(keys[span]) is None:
                fresh.setdefault(keys[span], span)
        # Longest blocks first: the boards' last sessions are short ones, which leaves
        # little of a farm idle at the end.
        todo = sorted(fresh.values(), key=lambda span: span[0] - span[1])
        # A farm is asked for boards only with work for them (one not started yet starts).
        batches = _sessions_of(todo, self.farm.boards(), self._weight_bytes) if todo else []
        # Progress in layers, which a block's time follows more than its count.
        remeasured = done = 0
        total = sum(stop - start for start, stop, _ in todo)
        if todo and self.measuring:
            self.measuring(0, total)
        timed = self.farm.measure(self.queue, batches, self.bench) if batches else ()
        for batch, timings in timed:
            self.sessions += 1
            self.measured += len(batch)
            done += sum(stop - start for start, stop, _ in batch)
            if self.measuring:
                self.measuring(done, total)
            remeasured += sum(t.remeasured for t in timings)
            self.store.add((keys[span], Measured(t.micros, t.gap_micros))
                           for span, t in zip(batch, timings))
        if remeasured:
            logger.info("%d block(s) timed again: their repeats spread past %.0f%%",
                        remeasured, self.bench.noise * 100)
        for span in missing:
            found = self.store.get(keys[span])
            micros = self.cache[span] = found.micros
            if self.bench.wall_clock:
                self.gaps.append(found.gap_micros)
            logger.debug("block %s: %.2f us", span, micros)
            for observer in list(self.observers):
                observer(*span, micros)

    def cost_table(self, mps: Sequence[int]) -> np.ndarray | None:
        """[n, n+1, len(mps)] costs (see the module notes); None unless guided or with
        max_block, as n^2 * |mps| measurements are not cheap."""
        if not self.guided and self.max_block is None:
            return None
        from paleozoic.optimize.oracle import plan_spans
        from paleozoic.optimize.plans import fuse_all, per_layer
        from paleozoic.optimize.space import SearchSpace

        space = SearchSpace.from_queue(self.queue, mps=mps)
        n, cores = space.n, os.cpu_count() or 1

        def at(mp: int) -> int:  # a wall-clock SDK's threads stop at the cores
            return mp if self.sdk == "mock" else min(mp, cores)

        built_in_mps = [max(mps)] if self.guided else sorted({at(mp) for mp in mps})
        built_in = [s[:3] for mp in built_in_mps for make in (per_layer, fuse_all)
                    for s in plan_spans(make(self.queue, mp=mp), self.queue)]
        if self.guided:  # tune's report prices per-layer at MP 1 too: measure it here
            built_in += [(i, i + 1, min(mps)) for i in range(n)]
        if self.guided:
            from paleozoic.optimize.device_cost import DeviceModelOracle
            from paleozoic.optimize.screen import guided_table

            model = DeviceModelOracle(self.queue, sparse=self.sparse,
                                      data_parallelism=self.data_parallelism).cost_table(mps)

            def measure(blocks: list[tuple[int, int, int]]) -> dict:
                self.measure_blocks([(i, j, mps[k]) for i, j, k in blocks])
                return {(i, j, k): self.cache[(i, j, mps[k])] for i, j, k in blocks}

            always = [(i, j, list(mps).index(mp)) for i, j, mp in built_in]
            return guided_table(model, space, measure, always)
        wanted = [(start, start + length, at(mp)) for mp in mps
                  for length in range(1, self.max_block + 1)
                  for start in range(n - length + 1) if space.allows(start, start + length)]
        self.measure_blocks(built_in + wanted)
        # Each block also costs the runtime's work around it, which its SDK time leaves
        # out: without it, a plan of many small blocks looks as cheap as one of few.
        gap = self.block_gap_us()
        table = np.full((n, n + 1, len(mps)), np.inf)
        for k, mp in enumerate(mps):
            for start, stop, m in (*built_in, *wanted):
                if m == at(mp):
                    table[start, stop, k] = self.cache[(start, stop, m)] + gap
        return table

    def block_gap_us(self) -> float:
        """The median per-block time a forward spends outside its blocks (0 on the mock)."""
        return float(np.median(self.gaps)) if self.gaps else 0.0

    def measure_plan(self, spans: Sequence[Span]) -> list[float]:
        """The costs of a plan's blocks (spans covering the queue), measured as any."""
        self.measure_blocks(spans)
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
            sessions[name] = plan_session(self.queue, [s[:3] for s in spans], self.bench,
                                          fused=[s[3] for s in spans])
        walls: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(rounds):
            for name, session in sessions.items():
                session.run()  # untimed: its caches after the others ran
                for _ in range(self.bench.repeats):
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


def _sessions_of(spans: list[Span], boards: int,
                 weight_bytes: Sequence[int] | None = None) -> list[list[Span]]:
    """`spans` in groups, one session each: at most SESSION_LAYERS layers, SESSION_BLOCKS
    blocks and SESSION_WEIGHT_BYTES bytes of weights (`weight_bytes`: each layer's; one
    group holds a larger block alone), and, with many boards, small enough that each board
    gets several."""
    most = max(1, min(SESSION_BLOCKS, -(-len(spans) // (4 * boards)) if boards > 1
                      else SESSION_BLOCKS))
    before = np.concatenate(([0], np.cumsum(weight_bytes))) if weight_bytes else None
    groups: list[list[Span]] = []
    layers = held = 0
    for span in spans:
        size = span[1] - span[0]
        weights = int(before[span[1]] - before[span[0]]) if before is not None else 0
        if (not groups or layers + size > SESSION_LAYERS or len(groups[-1]) >= most
                or held + weights > SESSION_WEIGHT_BYTES):
            groups.append([])
            layers = held = 0
        groups[-1].append(span)
        layers += size
        held += weights
    return groups
