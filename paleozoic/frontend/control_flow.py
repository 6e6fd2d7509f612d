"""Control flow before TVM sees the graph: an If with a constant condition becomes the
branch it takes, a Loop with a constant trip count its unrolled body, and an If decided at
run time both branches and a selection of their outputs (split_runtime_ifs), which the
session turns back into C++ if/else around the branches' blocks (passes/branches.py)."""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.convert.registry import OnnxOp, onnx_ops
from paleozoic.frontend.graph_edit import inline_body, replace_nodes

logger = logging.getLogger("paleozoic.frontend.prepare")


def inline_constant_ifs(proto: onnx.ModelProto, source: str) -> int:
    """Replaces each If whose condition is a constant (a check of a shape, of a sample rate
    given with --input-value) by the nodes of the branch it takes, in place; returns how
    many. Names the branch defines get the If's name as a prefix (branches reuse names);
    the branch's outputs become the If's."""
    graph = proto.graph
    consts = {t.name: t for t in graph.initializer}
    kept: list[onnx.NodeProto] = []
    inlined = 0
    for node in graph.node:
        if node.op_type != "If" or node.domain not in ("", "ai.onnx") or \
                node.input[0] not in consts:
            kept.append(node)
            continue
        cond = numpy_helper.to_array(consts[node.input[0]])
        if cond.size != 1:
            raise UnsupportedModelError(f"{source}: node {node.name!r} (If): the condition "
                                        f"has {cond.size} values; ONNX takes one")
        taken = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
        values = _inline_branch(graph, kept, node, taken)
        prefix = f"{node.name or node.output[0]}/{taken.split('_')[0]}/"
        for outer, value in zip(node.output, values):
            kept.append(onnx.helper.make_node("Identity", [value], [outer],
                                              name=f"{prefix}output_{outer}"))
        inlined += 1
    return replace_nodes(graph, kept, inlined, source, "inlined %d If node(s) with a "
                          "constant condition")


# Iterations a Loop may unroll into (each a copy of its body).
_MAX_UNROLL = 256


def unroll_constant_loops(proto: onnx.ModelProto, source: str) -> int:
    """Replaces each Loop whose trip count is a constant (and whose condition is absent or a
    constant true, and stays so in the body) by that many copies of its body, the carried
    values threaded from one copy to the next and scan outputs stacked; returns how many."""
    graph = proto.graph
    tensors = {t.name: t for t in graph.initializer}

    def truth(name: str) -> bool:
        return name in tensors and bool(numpy_helper.to_array(tensors[name]).reshape(-1)[0])

    kept: list[onnx.NodeProto] = []
    unrolled = 0
    for node in graph.node:
        count = numpy_helper.to_array(tensors[node.input[0]]) \
            if node.op_type == "Loop" and node.input and node.input[0] in tensors else None
        cond = node.input[1] if len(node.input) > 1 else ""
        if count is None or node.domain not in ("", "ai.onnx") or (cond and not truth(cond)):
            kept.append(node)
            continue
        where = f"{source}: node {node.name or node.output[0]!r} (Loop)"
        body = next(onnx.helper.get_attribute_value(a) for a in node.attribute
                    if a.name == "body")
        trips = int(count.reshape(-1)[0])
        if trips > _MAX_UNROLL:
            raise UnsupportedModelError(f"{where}: {trips} iterations; a Loop unrolls into "
                                        f"copies of its body, up to {_MAX_UNROLL}")
        iter_in, cond_in = body.input[0].name, body.input[1].name
        carried_in = [v.name for v in body.input[2:]]
        cond_out = body.output[0].name
        carried_out = [v.name for v in body.output[1:1 + len(carried_in)]]
        scan_out = [v.name for v in body.output[1 + len(carried_in):]]
        producer = {o: n for n in body.node for o in n.output}
        source_of_cond = cond_out
        while source_of_cond in producer and producer[source_of_cond].op_type == "Identity":
            source_of_cond = producer[source_of_cond].input[0]
        stays_true = source_of_cond == cond_in or truth(source_of_cond)
        if not stays_true:
            raise UnsupportedModelError(f"{where}: the body computes its own condition (an "
                                        f"early exit); only a fixed trip count unrolls")
        base = node.name or node.output[0]
        carried = list(node.input[2:])
        stacked: list[list[str]] = [[] for _ in scan_out]
        local = {t.name for t in body.initializer} | {o for n in body.node for o in n.output
                                                       if o}
        for i in range(trips):
            prefix = f"{base}/iter{i}/"
            rename = {name: prefix + name for name in local}
            rename[iter_in] = f"{prefix}iteration"
            rename[cond_in] = f"{prefix}condition"
            rename.update(zip(carried_in, carried))
            graph.initializer.extend([
                numpy_helper.from_array(np.array(i, np.int64), rename[iter_in]),
                numpy_helper.from_array(np.array(True), rename[cond_in])])
            inline_body(graph, kept, body, rename, prefix)
            carried = [rename.get(name, name) for name in carried_out]
            for j, name in enumerate(scan_out):
                stacked[j].append(rename.get(name, name))
        for out, value in zip(node.output, carried):
            kept.append(onnx.helper.make_node("Identity", [value], [out], name=f"{base}/{out}"))
        axis0 = f"{base}/axis0"
        if scan_out:
            if not trips:
                raise UnsupportedModelError(f"{where}: zero iterations leave its scan outputs "
                                            f"empty; zero-size tensors are not supported")
            graph.initializer.append(numpy_helper.from_array(np.array([0], np.int64), axis0))
        for out, pieces in zip(node.output[len(carried):], stacked):
            rows = [f"{piece}/row" for piece in pieces]
            for piece, row in zip(pieces, rows):
                kept.append(onnx.helper.make_node("Unsqueeze", [piece, axis0], [row],
                                                  name=row))
            kept.append(onnx.helper.make_node("Concat", rows, [out], axis=0,
                                              name=f"{base}/{out}"))
        unrolled += 1
    return replace_nodes(graph, kept, unrolled, source, "unrolled %d Loop node(s) with a "
                          "constant trip count")


onnx_ops({"If": OnnxOp("the branch taken (a constant condition), or both branches, a "
                       "HostWhere per output and C++ if/else around the branches' blocks")})

# The name of the node selecting an If's output `out`: "<If>/select/<out>". The importer
# finds the layers these nodes become by it (select_node_ifs).
_SELECT = "/select/"


def split_runtime_ifs(proto: onnx.ModelProto, source: str) -> dict[str, str]:
    """Replaces each If of the graph by the nodes of both its branches (names prefixed
    "<If>/then/" and "<If>/else/") and, per output, a Where(condition, then value, else
    value) named "<If>/select/<output>"; returns those nodes' names -> the If's name. The
    Ifs inside the branches are left for the next call: folding may decide them once the
    branches are in the graph (a shape check inside a sample-rate branch).

    The dataflow is exact whichever branch a session runs: Where selects, so a branch not
    run (garbage, inf, nan) never reaches the output. passes/branches.py finds each branch's
    layers back from the Where layers and the session runs only the branch taken."""
    graph = proto.graph
    kept: list[onnx.NodeProto] = []
    selects: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "If" or node.domain not in ("", "ai.onnx"):
            kept.append(node)
            continue
        name = node.name or node.output[0]
        outputs = [_inline_branch(graph, kept, node, taken)
                   for taken in ("then_branch", "else_branch")]
        for out, then_value, else_value in zip(node.output, *outputs):
            select = f"{name}{_SELECT}{out}"
            kept.append(onnx.helper.make_node("Where", [node.input[0], then_value,
                                                        else_value], [out], name=select))
            selects[select] = name
    replace_nodes(graph, kept, len(set(selects.values())), source,
                  "split %d If node(s) with a run-time condition into both branches")
    return selects


def _inline_branch(graph: onnx.GraphProto, kept: list[onnx.NodeProto], node: onnx.NodeProto,
                   taken: str) -> list[str]:
    """Copies the If's `taken` branch ("then_branch" or "else_branch") onto `kept`, the
    names it defines prefixed "<If>/then/" or "<If>/else/" (branches reuse names); returns
    the names of its outputs in the graph."""
    branch = next(onnx.helper.get_attribute_value(a) for a in node.attribute
                  if a.name == taken)
    prefix = f"{node.name or node.output[0]}/{taken.split('_')[0]}/"
    local = {t.name for t in branch.initializer} | {o for n in branch.node for o in n.output
                                                     if o}
    rename = {inner: prefix + inner for inner in local}
    inline_body(graph, kept, branch, rename, prefix)
    return [rename.get(o.name, o.name) for o in branch.output]
