"""Which ONNX operators the frontend maps, checked before parsing so that every
unsupported node is reported at once, by name, before any output is written."""

from __future__ import annotations

import onnx

from paleozoic.errors import UnsupportedModelError

# Importing the converters (and control_flow, for If) fills the table: each module registers
# the ONNX operators it handles next to the code handling them.
from paleozoic.frontend import control_flow  # noqa: F401
from paleozoic.frontend.convert import ONNX_OPS, OnnxOp


def check_supported(model: onnx.ModelProto, source: str) -> None:
    _check_control_flow(model, source)
    bad = [(node.name or f"#{i}", node.op_type) for i, node in enumerate(model.graph.node)
           if node.op_type not in ONNX_OPS or node.domain not in ("", "ai.onnx")]
    if bad:
        listed = "\n".join(f"  node {name!r}: {op}" + (f" ({_DATA_DEPENDENT})"
                                                         if op in _DATA_DEPENDENT_OPS else "")
                           for name, op in bad)
        raise UnsupportedModelError(
            f"{source}: {len(bad)} node(s) use operators Paleozoic does not support (after "
            f"folding the subgraphs that are constant for the given input shapes):\n"
            f"{listed}\nsupported: {', '.join(sorted(ONNX_OPS))}")


# Operators whose output size depends on the input values: a CNML-style session has static
# shapes (every buffer sized at compile time), so these have no layer.
_DATA_DEPENDENT_OPS = frozenset({"NonMaxSuppression", "NonZero", "Unique", "Compress"})
_DATA_DEPENDENT = ("its output size depends on the data, and a session's tensors have "
                   "static shapes; compile the network up to its inputs with --outputs and "
                   "run it on the host")


def _check_control_flow(model: onnx.ModelProto, source: str) -> None:
    """A Loop or Scan left after folding depends on run-time values: named, with the graph
    inputs it depends on, and what would fold it. (A run-time If never gets here: the
    importer splits it into both branches, frontend/control_flow.py.)"""
    graph = model.graph
    inputs = {v.name for v in graph.input} - {t.name for t in graph.initializer}
    depends: dict[str, set[str]] = {name: {name} for name in inputs}
    for node in graph.node:
        reads = set().union(*(depends.get(i, set()) for i in node.input if i))
        for out in node.output:
            depends[out] = reads
        if node.op_type not in ("Loop", "Scan") or node.domain not in ("", "ai.onnx"):
            continue
        on = sorted(depends.get(node.input[0], set())) if node.input and node.input[0] \
            else []
        what = {"Loop": "its trip count or condition",
                "Scan": "its scanned inputs"}[node.op_type]
        folds = {"Loop": "a constant trip count unrolls the loop",
                 "Scan": "nothing folds a Scan yet"}[node.op_type]
        hint = (f"; if {', '.join(on)} {'is' if len(on) == 1 else 'are'} fixed for a "
                f"deployment (a sample rate, a mode, a step count), give --input-value "
                f"NAME=VALUE: {folds}" if on else "")
        raise UnsupportedModelError(
            f"{source}: node {node.name or node.output[0]!r} ({node.op_type}): {what} is "
            f"computed at run time{f' from input(s) {on}' if on else ''}; {node.op_type} is "
            f"supported when it folds at compile time (a Loop with a constant trip count, "
            f"unrolled), not as a loop in the session{hint}")


__all__ = ["ONNX_OPS", "OnnxOp", "check_supported"]
