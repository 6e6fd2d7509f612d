"""Which tensors cross the edge of a block of layers: the one rule, in Python.

Inputs are read inside and produced outside, in first-read order. Outputs are produced
inside and read outside, read by nobody (the end of a branch) or graph outputs, in layer
order. The C++ wrapper's `pz::fusionBoundary` (what a FusionLayer compiles) applies the
same rule; tests/ir/test_boundary.py checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from paleozoic.ir.layer import Layer


def read_counts(layers: Iterable[Layer]) -> dict[str, int]:
    """How many input slots read each tensor (a layer reading one twice counts twice)."""
    counts: dict[str, int] = {}
    for layer in layers:
        for name in layer.inputs:
            counts[name] = counts.get(name, 0) + 1
    return counts


def block_boundary(block: Sequence[Layer], reads: Mapping[str, int],
                   graph_outputs: Collection[str]) -> tuple[list[str], list[str]]:
    """(inputs, outputs) of `block` (in topological order) within a graph whose tensors
    are read `reads` times in all (read_counts of every layer)."""
    produced = [layer.output for layer in block]
    made = set(produced)
    first_reads: dict[str, None] = {}  # an ordered set
    for layer in block:
        for name in layer.inputs:
            if name not in made:
                first_reads.setdefault(name)
    inputs = list(first_reads)
    inside = read_counts(block)
    outputs = [name for name in produced
               if leaves_block(reads.get(name, 0), inside.get(name, 0), name in graph_outputs)]
    return inputs, outputs


def leaves_block(total_reads: int, reads_inside: int, graph_output: bool) -> bool:
    """The output rule alone (pz::leavesBlock)."""
    return total_reads > reads_inside or total_reads == 0 or graph_output
