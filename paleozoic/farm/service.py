"""What a farm of boards offers a measured search, and the farm of one: this process."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from paleozoic.ir import LayerQueue
from paleozoic.runner.block_bench import Batch, Bench, Timing, time_blocks


class Farm(Protocol):
    """Boards measuring batches of blocks, each batch one session on one board."""

    def boards(self) -> int:
        """How many boards measure at once now (batches are cut to keep them busy)."""
        ...

    def measure(self, queue: LayerQueue, batches: Iterable[Batch],
                bench: Bench) -> Iterator[tuple[Batch, list[Timing]]]:
        """Every batch with its blocks' timings, in the order they finish. `batches` is
        taken as boards come free: the caller may name them (a generator) as they go."""
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
    from paleozoic.errors import OptimizerError

    if workers < 1:
        raise OptimizerError(f"--workers must be at least 1, got {workers}")
    if wall_clock and workers > 1:
        raise OptimizerError(
            f"--workers {workers} on a wall-clock SDK: boards on one host would time each "
            f"other; use --workers 1, or one pz_board per host with --ray")


def open_farm(*, workers: int | None = None, address: str | None = None,
              simulate: int | None = None, sdk: str = "mock",
              replay: str | Path | None = None, wall_clock: bool | None = None,
              background: bool = False) -> Farm:
    """The farm a measured search asks for: a local Ray cluster of `workers` boards, the
    Ray cluster at `address`, `simulate` simulated boards (replaying the timings kept in
    the file `replay`, the device model's elsewhere), or, given none, this process.
    `wall_clock`: whether what the boards time is wall time (default: any SDK but the
    mock's), which allows one board per host."""
    from paleozoic.errors import OptimizerError

    if sum(x is not None for x in (workers, address, simulate)) > 1:
        raise OptimizerError("--workers, --ray and --simulate-boards are exclusive: choose "
                             "one farm")
    if simulate is not None:
        from paleozoic.farm.simulate import SimulatedFarm
        from paleozoic.optimize.measurements import MeasurementStore, board_fingerprint

        if sdk != "mock":
            raise OptimizerError("--simulate-boards simulates the mock's board (the device "
                                 "model's timings); use it with --sdk mock")
        return SimulatedFarm(simulate, MeasurementStore(replay) if replay else None,
                             board_fingerprint(sdk))
    if workers is None and address is None:
        return LocalBoard()
    timed_by_wall = sdk != "mock" if wall_clock is None else wall_clock
    # What can be refused is refused now, not where a background start is first used.
    if workers is not None:
        check_workers(workers, timed_by_wall)
    if importlib.util.find_spec("ray") is None:
        raise OptimizerError("measuring on a Ray farm needs Ray: pip install 'paleozoic[ray]'")

    def start() -> Farm:
        from paleozoic.farm.ray_farm import RayFarm

        return RayFarm(workers=workers, address=address, wall_clock=timed_by_wall)

    if background:
        from paleozoic.farm.starting import StartingFarm

        return StartingFarm(start)
    return start()
