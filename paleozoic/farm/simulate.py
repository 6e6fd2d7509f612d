"""Many boards, simulated: how tuning time scales with the size of a farm this machine does
not have (Kernel Tuner's simulation mode, for boards).

A SimulatedFarm answers each block at once, from a store of timings measured before where it
has one and from the device model elsewhere, and keeps a clock of what the farm would have
taken: a batch costs a board `session_s` to build and run plus `block_s` per block, each
batch goes to the board that is free first, and a call to `measure` (one round of the
search) ends when its last batch does. `elapsed_s` is the clock; `spent_s` the wall time
the answers really took, which a caller takes out of its own wall time.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Iterator

from paleozoic.ir import LayerQueue
from paleozoic.optimize.measurements import BlockKeys, MeasurementStore
from paleozoic.runner.block_bench import Batch, Bench, Timing

# A board's cost of one session (build, load, warm-up) and of each block in it: the order
# of an MLU-100 session build and a few timed forwards.
SESSION_S = 0.5
BLOCK_S = 0.2


class SimulatedFarm:
    def __init__(self, boards: int, replay: MeasurementStore | None = None, board: str = "",
                 session_s: float = SESSION_S, block_s: float = BLOCK_S) -> None:
        if boards < 1:
            raise ValueError(f"a farm has at least one board, got {boards}")
        self._boards = boards
        self.replay = replay      # timings to replay, by block key (on `board`)
        self.board = board
        self.session_s = session_s
        self.block_s = block_s
        self.elapsed_s = 0.0
        self.spent_s = 0.0
        self._models: dict[int, tuple[LayerQueue, object]] = {}
        self._keys: dict[int, tuple[LayerQueue, BlockKeys]] = {}

    def boards(self) -> int:
        return self._boards

    def _timing(self, queue: LayerQueue, span: tuple[int, int, int], bench: Bench) -> Timing:
        if self.replay is not None:
            if id(queue) not in self._keys:
                self._keys[id(queue)] = (queue, BlockKeys(queue, self.board, bench.sparse,
                                                          bench.data_parallelism))
            keys = self._keys[id(queue)][1]
            found = self.replay.get(keys.key(*span, fused=span[1] - span[0] > 1))
            if found is not None:
                return Timing(found.micros, found.gap_micros)
        if id(queue) not in self._models:
            from paleozoic.optimize.device_cost import DeviceModelOracle

            self._models[id(queue)] = (queue, DeviceModelOracle(
                queue, sparse=bench.sparse, data_parallelism=bench.data_parallelism))
        return Timing(self._models[id(queue)][1].block_cost(*span))

    def measure(self, queue: LayerQueue, batches: Iterable[Batch],
                bench: Bench) -> Iterator[tuple[Batch, list[Timing]]]:
        batches = list(batches)  # named by the caller, before this farm's clock starts
        begin = time.perf_counter()
        free = [0.0] * self._boards  # when each board is next free, this round
        heapq.heapify(free)
        answers = []
        for batch in batches:
            start = heapq.heappop(free)
            heapq.heappush(free, start + self.session_s + self.block_s * len(batch))
            answers.append((batch, [self._timing(queue, span, bench) for span in batch]))
        self.elapsed_s += max(free) if batches else 0.0
        self.spent_s += time.perf_counter() - begin
        yield from answers

    def close(self) -> None:
        pass

    def summary(self) -> list[str]:
        return [f"simulated farm of {self._boards} board(s): the measurements would take "
                f"{self.elapsed_s:,.1f} s ({self.session_s:g} s a session, {self.block_s:g} s "
                f"a block); answering them here took {self.spent_s:,.1f} s"]
