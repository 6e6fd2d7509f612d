"""Run-time If: which layers each branch alone needs, and a queue order with each branch's
layers together, so that the session runs them inside `if (condition) { ... } else { ... }`.

The frontend splits a run-time If into both branches and a Where per output
(frontend/control_flow.py; the Where layers carry `selects_if`). A layer belongs to a
branch when every path from it to a graph output goes through that branch's input of the
If's Where layers; anything else needs it too (the condition, the other branch, a graph
output) and it runs unconditionally. This is the dataflow alone, so it holds whatever the
passes before merged, dropped or renamed; what a CSE pass shared between both branches is
simply computed before the If.
"""

from __future__ import annotations

import logging

from paleozoic.errors import UnsupportedModelError
from paleozoic.ir import Layer, LayerQueue

logger = logging.getLogger(__name__)

THEN, ELSE = 1, 2  # the Where layer's inputs: condition, then value, else value


def place_branches(queue: LayerQueue) -> int:
    """Sets each layer's `branch` and `queue.conditions`, and reorders the queue so that
    every branch's layers are one run, then branch before else branch, just before the If's
    first Where; returns how many layers run conditionally."""
    selects: dict[str, list[Layer]] = {}
    for layer in queue.layers:
        if layer.selects_if:
            selects.setdefault(layer.selects_if, []).append(layer)
    if not selects:
        return 0
    sides: dict[tuple[str, bool], set[str]] = {}
    for name, merges in selects.items():
        conditions = {m.inputs[0] for m in merges}
        if len(conditions) != 1:
            raise UnsupportedModelError(f"{queue.source}: node {name!r} (If): its outputs are "
                                        f"selected by different conditions {sorted(conditions)}")
        queue.conditions[name] = conditions.pop()
        for taken, slot in ((True, THEN), (False, ELSE)):
            sides[(name, taken)] = _only_needed_through(queue, merges, slot)
    # Outermost first: an If inside a branch has its layers inside that branch's set.
    order = sorted(selects, key=lambda n: -len(sides[(n, True)] | sides[(n, False)]))
    for layer in queue.layers:
        layer.branch = tuple((name, taken) for name in order for taken in (True, False)
                             if layer.name in sides[(name, taken)])
    for name in order:
        _gather(queue, sides[(name, True)], sides[(name, False)], selects[name][0])
    _check_order(queue, order)
    conditional = sum(1 for layer in queue.layers if layer.branch)
    logger.info("%s: %d run-time If node(s), %d layer(s) in their branches", queue.source,
                len(selects), conditional)
    return conditional


def _only_needed_through(queue: LayerQueue, merges: list[Layer], slot: int) -> set[str]:
    """The layers whose results reach the graph's outputs only through input `slot` of
    `merges` (and are needed there)."""
    producers = queue.producers()
    skipped = {(m.name, slot) for m in merges}

    def reach(roots: list[str], skip: set[tuple[str, int]]) -> set[str]:
        seen: set[str] = set()
        stack = [r for r in roots if r in producers]
        while stack:
            layer = producers[stack.pop()]
            if layer.name in seen:
                continue
            seen.add(layer.name)
            stack.extend(t for i, t in enumerate(layer.inputs)
                         if (layer.name, i) not in skip and t in producers)
        return seen

    elsewhere = reach(list(queue.outputs), skipped)
    through = reach([m.inputs[slot] for m in merges], set())
    return through - elsewhere


def _gather(queue: LayerQueue, then: set[str], otherwise: set[str], first: Layer) -> None:
    """Moves the branches' layers (queue order kept within each) to just before `first`."""
    moved = [layer for layer in queue.layers if layer.name in then] + \
        [layer for layer in queue.layers if layer.name in otherwise]
    rest = [layer for layer in queue.layers if layer.name not in then | otherwise]
    at = rest.index(first)
    queue.layers[:] = rest[:at] + moved + rest[at:]


def _check_order(queue: LayerQueue, order: list[str]) -> None:
    """Every input before its reader, and each branch one run of the queue."""
    ready = {t.name for t in queue.inputs}
    for layer in queue.layers:
        missing = [t for t in layer.inputs if t not in ready and t in queue.tensors]
        if missing:
            raise UnsupportedModelError(
                f"{queue.source}: layer {layer.name!r} reads {missing[0]!r} before it is "
                f"computed once the branches of the run-time If(s) {order} are grouped; "
                f"move the nodes the branches read before the If")
        ready.add(layer.output)
    for name in order:
        for taken in (True, False):
            where = [i for i, layer in enumerate(queue.layers)
                     if (name, taken) in layer.branch]
            if where and where[-1] - where[0] + 1 != len(where):
                raise UnsupportedModelError(
                    f"{queue.source}: node {name!r} (If): the layers of its "
                    f"{'then' if taken else 'else'} branch do not form one run of the queue")
