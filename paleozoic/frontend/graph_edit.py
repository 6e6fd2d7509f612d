"""Edits of an ONNX graph the preparation passes share: replacing its node list, copying a
subgraph (an If's branch, a Loop's body) into it under new names, and the names a node's
subgraphs read from outside them."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import onnx

logger = logging.getLogger("paleozoic.frontend.prepare")


def replace_nodes(graph: onnx.GraphProto, nodes: list[onnx.NodeProto], count: int,
                   source: str, message: str) -> int:
    """A rewriting pass's end: the graph's nodes replaced by `nodes` when it changed
    `count` of them (logged with `message`, which has one %d); returns count."""
    if count:
        del graph.node[:]
        graph.node.extend(nodes)
        logger.info("%s: " + message, source, count)
    return count


def inline_body(graph: onnx.GraphProto, nodes: list[onnx.NodeProto], body: onnx.GraphProto,
                 rename: Mapping[str, str], prefix: str) -> None:
    """A copy of a subgraph's initializers (into `graph`) and nodes (onto `nodes`), its
    names renamed and its nodes' names prefixed."""
    for tensor in body.initializer:
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        copy.name = rename[tensor.name]
        graph.initializer.append(copy)
    for inner in body.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(inner)
        rename_inputs(copy, rename)
        copy.output[:] = [rename.get(o, o) for o in inner.output]
        copy.name = prefix + (inner.name or inner.output[0])
        nodes.append(copy)


def inputs_with_captures(node: onnx.NodeProto) -> set[str]:
    """The node's inputs and the names its subgraphs (an If's branches) read from outside."""
    names = {i for i in node.input if i}
    for attr in node.attribute:
        for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
            own = {t.name for t in sub.initializer} | {i.name for i in sub.input} | \
                {o for n in sub.node for o in n.output if o}
            inner = set().union(*(inputs_with_captures(n) for n in sub.node)) | \
                {o.name for o in sub.output}
            names |= inner - own
    return names


def rename_inputs(node: onnx.NodeProto, rename: Mapping[str, str]) -> None:
    """The node's inputs renamed, and the names its subgraphs capture from outside them."""
    node.input[:] = [rename.get(i, i) for i in node.input]
    for attr in node.attribute:
        graphs = list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])
        for sub in graphs:
            own = {t.name for t in sub.initializer} | {i.name for i in sub.input} | \
                {o for n in sub.node for o in n.output if o}
            captured = {k: v for k, v in rename.items() if k not in own}
            for inner in sub.node:
                rename_inputs(inner, captured)
            for out in sub.output:
                if out.name in captured:
                    out.name = captured[out.name]
