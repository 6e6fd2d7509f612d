"""Which farm a measured search measures on: this process, a local Ray cluster, the Ray
cluster at an address, or simulated boards (paleozoic.farm)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from paleozoic.errors import OptimizerError
from paleozoic.farm.service import Farm, LocalBoard, check_workers


def open_farm(*, workers: int | None = None, address: str | None = None,
              simulate: int | None = None, sdk: str = "mock",
              replay: str | Path | None = None, wall_clock: bool | None = None,
              background: bool = False, eager: bool = True) -> Farm:
    """The farm a measured search asks for: a local Ray cluster of `workers` boards, the
    Ray cluster at `address`, `simulate` simulated boards (replaying the timings kept in
    the file `replay`, the device model's elsewhere), or, given none, this process.
    `wall_clock`: whether what the boards time is wall time (default: any SDK but the
    mock's), which allows one board per host. `background`: a Ray farm starts in a thread
    while the caller goes on (paleozoic.farm.starting); a failed start raises where the
    farm is first used. With `eager=False` it starts only there (a search whose timings
    may all be kept already)."""
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

        return StartingFarm(start, eager=eager)
    return start()
