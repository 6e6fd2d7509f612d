"""The part of a model that computes chosen tensors (`--outputs`): what a deployment does
with a detector whose post-processing has data-dependent sizes (NonMaxSuppression, NonZero),
which a static-shape session cannot hold: the network up to its raw scores and boxes is
compiled, and the post-processing runs where the application wants it."""

from __future__ import annotations

from collections.abc import Sequence

import onnx

from paleozoic.errors import UnsupportedModelError


def select_outputs(proto: onnx.ModelProto, source: str, names: Sequence[str]) -> None:
    """Makes `names` the graph's outputs, in that order, and drops the nodes none of them
    needs (in place). Each name must be a tensor a node computes or a graph input; its type
    and shape come from the graph's value_info or ONNX shape inference."""
    graph = proto.graph
    produced = {o: n for n in graph.node for o in n.output if o}
    inputs = {v.name for v in graph.input}
    missing = [n for n in names if n not in produced and n not in inputs]
    if missing:
        raise UnsupportedModelError(
            f"{source}: --outputs {missing[0]!r}: no node computes it and it is no input "
            f"(the names are those of the model's tensors, as Netron shows them)")
    known = {v.name: v for v in (*graph.value_info, *graph.output, *graph.input)}
    if any(n not in known for n in names):
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False)
        known.update({v.name: v for v in inferred.graph.value_info})
    untyped = [n for n in names if n not in known]
    if untyped:
        raise UnsupportedModelError(f"{source}: --outputs {untyped[0]!r}: ONNX shape "
                                    f"inference gives it no type")
    needed, stack = set(), list(names)
    while stack:
        node = produced.get(stack.pop())
        if node is None or id(node) in needed:
            continue
        needed.add(id(node))
        stack.extend(i for i in _reads(node) if i)
    kept = [n for n in graph.node if id(n) in needed]
    outputs = []
    for name in names:
        value = onnx.ValueInfoProto()
        value.CopyFrom(known[name])
        outputs.append(value)
    del graph.node[:]
    graph.node.extend(kept)
    del graph.output[:]
    graph.output.extend(outputs)


def _reads(node: onnx.NodeProto) -> list[str]:
    from paleozoic.frontend.graph_edit import inputs_with_captures

    return sorted(inputs_with_captures(node))
