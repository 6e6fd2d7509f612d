"""Which cost oracle prices a tuning run, and the check a wall-clock search's plan must pass:
the rules `paleozoic tune` follows, as plain functions API users call the same way.
`make_oracle` picks the analytic device model or measurement (on the mock's simulated clock
or a real SDK's wall clock) from the names the CLI takes, and refuses the combinations that
would price something other than what was asked; `confirm_measured` times a wall-clock
search's plan against the built-in plans as whole forwards and keeps it only on a clear
lead (paleozoic.optimize.measured, MeasuredOracle.confirm).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paleozoic.errors import OptimizerError

if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path

    from paleozoic.farm import Farm

    from paleozoic.ir import LayerQueue, Plan
    from paleozoic.optimize.oracle import CostOracle


def wall_clock(cost: str, sdk: str) -> bool:
    """Whether the oracle `cost` ("model" or "measured") on `sdk` times blocks by the wall
    clock: measurement on a real SDK, where the mock's simulated device is not involved."""
    return cost == "measured" and sdk != "mock"


def make_oracle(queue: LayerQueue, cost: str, sdk: str, profile: str | None,
                sparse: Collection[str] = (), data_parallelism: int = 1,
                measurements: str | Path | None = None, farm: Farm | None = None
                ) -> CostOracle:
    """The oracle pricing `queue`'s blocks: `cost` "model" is the analytic device model with
    the device `profile` (None: the bundled MLU-100), "measured" runs blocks through the
    runtime on `sdk`. `sparse` names the layers priced in the SDK's sparse mode;
    `data_parallelism` the groups of frames each forward runs at once; `measurements` a
    file keeping measured block timings across runs (paleozoic.optimize.measurements);
    `farm` the boards that measure (paleozoic.farm; default: this process). A simulated
    farm replays timings: the oracle keeps none of its own, so every block reaches it.

    Raises OptimizerError for a real SDK with the device model (which describes the mock's
    device), a profile with measurement (it would be ignored), and a device model that
    cannot be imported."""
    if sdk != "mock" and cost != "measured":
        raise OptimizerError(f"--sdk {sdk} times blocks on that SDK; it needs --cost "
                             f"measured (the device model describes the mock's device)")
    if cost == "measured":
        if profile:
            raise OptimizerError("--profile describes the device model; it has no effect "
                                 "with --cost measured")
        from paleozoic.optimize.measured import MeasuredOracle
        from paleozoic.optimize.measurements import MeasurementStore

        from paleozoic.farm.simulate import SimulatedFarm

        store = MeasurementStore(None if isinstance(farm, SimulatedFarm) else measurements)
        if sdk == "mock":  # the device model describes this board: it guides measurement
            return MeasuredOracle(queue, sparse=sparse, data_parallelism=data_parallelism,
                                  guided=True, store=store, farm=farm)
        # Wall-clock timings: medians of 5, and a table of every block up to 8 layers plus
        # the built-in plans' blocks (paleozoic.optimize.measured).
        return MeasuredOracle(queue, repeats=5, sdk=sdk, max_block=8, sparse=sparse,
                              data_parallelism=data_parallelism, store=store, farm=farm)
    try:
        from paleozoic.optimize.device_cost import DeviceModelOracle
    except ImportError as err:
        raise OptimizerError(f"the device model is not available ({err}); use --cost "
                             f"measured") from err
    return DeviceModelOracle(queue, profile=profile, sparse=sparse,
                             data_parallelism=data_parallelism)


def confirm_measured(plan: Plan, cost_oracle: CostOracle, mp: int) -> tuple[Plan, list[str]]:
    """The plan to keep after a search priced by `cost_oracle`, and the lines saying how it
    was chosen. Wall-clock block costs misprice whole plans a little, so with a
    MeasuredOracle on a real SDK the searched plan is kept only if it leads per-layer and
    fuse-all (at `mp`) as whole forwards by CONFIRM_MARGIN; else the fastest of those is
    returned. Any other oracle's plan comes back as it is, with no lines: the device model
    and the mock's simulated clock price a whole plan as the sum of its blocks."""
    from paleozoic.optimize.measured import CONFIRM_MARGIN, MeasuredOracle

    if not isinstance(cost_oracle, MeasuredOracle) or cost_oracle.sdk == "mock":
        return plan, []
    searched = plan.strategy
    kept = cost_oracle.confirm(plan, mp=mp)
    timings = kept.notes.get("whole_plan_us", {})
    line = ("whole forwards on " + cost_oracle.sdk + ": " + ", ".join(
        f"{name} {us / 1e3:.2f} ms" for name, us in timings.items()) +
        ("" if kept.strategy == searched else
         f"; {searched}'s plan does not lead {kept.strategy} by {CONFIRM_MARGIN:.0%}, "
         f"so {kept.strategy} is written"))
    return kept, [line]
