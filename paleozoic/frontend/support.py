"""Which ONNX operators the frontend maps, checked before parsing so that every
unsupported node is reported at once, by name, before any output is written."""

from __future__ import annotations

import onnx

from paleozoic.errors import UnsupportedModelError
# Importing the converters fills the table: each family module registers the ONNX operators
# it converts next to its converters.
from paleozoic.frontend.convert import ONNX_OPS, OnnxOp


def check_supported(model: onnx.ModelProto, source: str) -> None:
    bad = [(node.name or f"#{i}", node.op_type) for i, node in enumerate(model.graph.node)
           if node.op_type not in ONNX_OPS or node.domain not in ("", "ai.onnx")]
    if bad:
        listed = "\n".join(f"  node {name!r}: {op}" for name, op in bad)
        raise UnsupportedModelError(
            f"{source}: {len(bad)} node(s) use operators Paleozoic does not support (after "
            f"folding the subgraphs that are constant for the given input shapes):\n"
            f"{listed}\nsupported: {', '.join(sorted(ONNX_OPS))}")


__all__ = ["ONNX_OPS", "OnnxOp", "check_supported"]
