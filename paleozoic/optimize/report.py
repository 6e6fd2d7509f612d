"""Text the CLI prints: search-space sizes and the closing table of `paleozoic tune`."""

from __future__ import annotations

import dataclasses
from math import comb

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import DDR_CHANNELS, MP_MAX, batch_of, data_parallelism_choices
from paleozoic.ir.plan import with_data_parallelism
from paleozoic.ops.sparsity import sparse_refusal
from paleozoic.optimize.concat import parallel_regions
from paleozoic.optimize.oracle import CostOracle, block_costs, plan_cost, stage_total
from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.optimize.space import SearchSpace, eq3_space


def sci(value: int, digits: int = 4) -> str:
    """A Python int of any size in scientific notation (floats overflow past 1e308)."""
    if value == 0:
        return "0"
    text = str(abs(value))
    exponent = len(text) - 1
    mantissa = round(int(text[:digits + 1]) / 10 ** digits, digits - 1)
    if mantissa >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{'-' if value < 0 else ''}{mantissa:.{digits - 1}f}e{exponent}"


def space_lines(queue: LayerQueue, space: SearchSpace) -> list[str]:
    n = space.n
    eq3 = eq3_space(n, len(space.mps))
    actual = space.size()
    blocked = sorted({layer.kind for layer, ok in zip(queue.layers, space.fusible) if not ok})
    kinds = sorted({layer.kind for layer in queue.layers})
    lines = [
        f"model: {queue.source}",
        f"layers: n = {n} ({len(kinds)} kinds: {', '.join(kinds)})",
        f"Eq. 3 with {len(space.mps)} MP choices: Space({n}) = sum_(i=1..{n - 1}) "
        f"{len(space.mps)}^(i+1) * C({n - 1}, i) = {sci(eq3)}",
    ]
    if not blocked:
        lines.append("fusion constraints in force: none (every kind in this model is "
                     "fusible), so any cut set is allowed")
    else:
        lines.append(f"fusion constraints in force: {', '.join(blocked)} cannot join a "
                     f"fusion op ({len(space.forced_cuts())} forced cuts)")
    lines.append(f"size under those constraints, MP 1..{space.max_mp} per block: "
                 f"{sci(actual)} (exact: {actual})" if actual < 10 ** 60 else
                 f"size under those constraints, MP 1..{space.max_mp} per block: "
                 f"{sci(actual)}")
    lines.append("  (counts the single-block plan too, which Eq. 3's sum starts after; "
                 f"difference {actual - eq3})")
    sparse = [layer for layer in queue.layers if sparse_refusal(layer) is None]
    if sparse:  # each such layer's sparse mode on or off, whatever the blocks
        lines.append(f"with the sparse mode (tune --knobs sparsity): {len(sparse)} layer(s) "
                     f"have one, x 2^{len(sparse)} = {sci(actual * 2 ** len(sparse))}")
    dps = data_parallelism_choices(queue)
    if len(dps) > 1:  # each dp with the MPs that fit beside it
        total = sum(dataclasses.replace(space, mps=tuple(m for m in space.mps
                                                         if m * dp <= MP_MAX)).size()
                    for dp in dps)
        lines.append(f"with data parallelism (tune --knobs dp): {', '.join(map(str, dps))}: "
                     f"{sci(total)} plans in all")
    regions = parallel_regions(queue, space)
    if regions:
        # A region's branches as a stage: K positive MPs summing to at most 32.
        factor = 1
        for region in regions:
            factor *= 1 + comb(MP_MAX, len(region.branches))
        lines.append(f"with stages (tune --knobs concat): {len(regions)} parallel region(s), "
                     f"each also a stage of its branches in C(32, branches) MP splits: at most "
                     f"x {sci(factor)}")
    floats = [info.name for info in queue.inputs if info.dtype == "float32"] + list(queue.outputs)
    # Each float input's and output's conversion side (where a plan's blocks store float16;
    # the sides are the same for an fp32 block's), and a DDR channel or none.
    lines.append(f"with load balance (tune --knobs balance): {len(floats)} graph input(s) and "
                 f"output(s), each converted on the host or the device (x 2^{len(floats)}), "
                 f"and the channel placement, none or one of {DDR_CHANNELS} "
                 f"(x {DDR_CHANNELS + 1}): {sci(actual * 2 ** len(floats) * (DDR_CHANNELS + 1))}")
    return lines


def data_parallelism_line(plan: Plan, queue: LayerQueue) -> str:
    """Throughput at each data parallelism the search tried (tune --knobs dp)."""
    frames = batch_of(queue)
    return ("data parallelism: " + ", ".join(
        f"{dp} {frames * 1e6 / us:,.0f} frames/s"
        for dp, us in plan.notes["data_parallelism_us"].items()) +
        f"; the plan takes {plan.data_parallelism}")


def _table(headers: tuple[str, ...], rows: list[tuple[str, ...]],
           right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(headers)] + [line(r) for r in rows]


def plan_table(plan: Plan, queue: LayerQueue, cost: CostOracle) -> list[str]:
    """Per block: first..last layer, #layers, MP, fuse, cost; then total vs baselines."""
    costs = block_costs(plan, queue, cost)
    stage_of = {name: n for n, stage in enumerate(plan.stages) for name in stage}
    rows = [(b.name + (f" [stage{stage_of[b.name]}]" if b.name in stage_of else ""),
             f"{b.layers[0]} .. {b.layers[-1]}" if len(b.layers) > 1 else b.layers[0],
             str(len(b.layers)), str(b.mp), "yes" if b.fuse else "no", f"{c:,.1f}")
            for b, c in zip(plan.blocks, costs)]
    headers = ("block", "layers", "#", "MP", "fuse", "cost us")
    if any(b.precision.value != "fp32" or b.layer_precision for b in plan.blocks):
        # Only when a block leaves fp32, so fp32 plans print as they always have.
        rows = [row[:5] + (b.precision.value + ("*" if b.layer_precision else ""),) + row[5:]
                for row, b in zip(rows, plan.blocks)]
        headers = headers[:5] + ("precision",) + headers[5:]
    lines = _table(headers, rows, {2, 3, len(headers) - 1})
    total = stage_total(plan, costs)  # a stage's blocks run at once: its longest counts
    lines.append("")
    # The built-in plans at this plan's data parallelism (fuse-all's MP lowered to fit).
    dp = plan.data_parallelism
    baselines = [with_data_parallelism(p, dp) for p in (per_layer(queue), fuse_all(queue))]
    suffix = f", dp {dp}" if dp > 1 else ""
    baselines = [(f"per-layer (MP 1{suffix})", baselines[0]),
                 (f"fuse-all (MP {baselines[1].blocks[0].mp}{suffix})", baselines[1])]
    this = plan.strategy + " (this plan)"
    width = max(20, len(this))
    for label, baseline in baselines:
        other = plan_cost(baseline, queue, cost)
        lines.append(f"{label:<{width}} {other:>14,.1f} us  ({other / total:.2f}x this plan)")
    lines.append(f"{this:<{width}} {total:>14,.1f} us  "
                 f"[{len(plan.blocks)} blocks, oracle {cost.name}]")
    return lines
