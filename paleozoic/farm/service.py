"""What a farm of boards offers a measured search, and the farm of one: this process."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from paleozoic.errors import OptimizerError
from paleozoic.ir import LayerQueue
from paleozoic.runner.block_bench import Batch, Bench, Timing, time_blocks


class Farm(Protocol):
    """Boards measuring batches of blocks, each batch one session on one board."""

    def boards(self) -> int:
        """How many boards measure at once now (batches are cut to keep them busy)."""
        ...

    def measure(self, queue: LayerQueue, batches: Iterable[Batch],
                bench: Bench) -> Iterator[tuple[Batch, list[Timing]]]:
        """Every batch with its blocks' timings, in the order they finish."""
        ...

    def close(self) -> None:
        """Stops what the farm started."""
        ...

    def summary(self) -> list[str]:
        """Lines saying what the farm did (for tune's report)."""
        ...


class LocalBoard:
    """This process as the only board: batches measured one after the other."""

    def boards(self) -> int:
        return 1

    def measure(self, queue: LayerQueue, batches: Iterable[Batch],
                bench: Bench) -> Iterator[tuple[Batch, list[Timing]]]:
        for batch in batches:
            yield batch, time_blocks(queue, batch, bench)

    def close(self) -> None:
        pass

    def summary(self) -> list[str]:
        return []


def check_workers(workers: int, wall_clock: bool) -> None:
    """Refuses a local farm of `workers` boards that cannot hold (OptimizerError)."""
    if workers < 1:
        raise OptimizerError(f"--workers must be at least 1, got {workers}")
    if wall_clock and workers > 1:
        raise OptimizerError(
            f"--workers {workers} on a wall-clock SDK: boards on one host would time each "
            f"other; use --workers 1, or one pz_board per host with --ray")
