"""Which ONNX node produced each Relax binding, so layers are named after it.

TVM's Relax frontend does not record node names on the bindings it emits, but its importer
keeps, for every ONNX tensor, the Relax expression it converted the tensor to. A node's
output binding is the one whose value (or variable) is that expression; every binding it
reads that no earlier node already owns was emitted while converting the node (TVM's
decompositions, bias adds, tuple accesses), so it belongs to the same node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import onnx

from paleozoic.codegen.escape import cpp_ident


def clean_identifier(name: str) -> str:
    """A readable C++ identifier from an ONNX name ("gpu_0/res2_0_branch2a_w_0" ->
    "res2_0_branch2a_w"): layer and tensor names are identifiers from here on, whatever
    the model file holds (ASCII, bounded length; codegen/escape.py)."""
    name = re.sub(r"^gpu_\d+/", "", name)
    name = re.sub(r"_0$", "", name)
    return cpp_ident(name)


@dataclass(frozen=True)
class NodeInfo:
    """One ONNX node as layers and error messages name it."""

    index: int              # position in the graph
    ident: str              # the layers' name: a C++ identifier, before uniquing
    label: str              # as Netron shows it, for messages
    op_type: str
    attrs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


def node_info(index: int, node: onnx.NodeProto) -> NodeInfo:
    """Exporters leave some nodes unnamed; those are named after their op type and first
    output tensor, which is as stable under re-export as the node name would be."""
    output = next((o for o in node.output if o), "")
    label = node.name or f"{node.op_type}_{output}"
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    return NodeInfo(index, clean_identifier(label), label, node.op_type, attrs)


def binding_owners(func: Any, nodes: list[onnx.NodeProto], produced: dict[str, Any],
                   relax: Any) -> dict[Any, NodeInfo]:
    """For each binding variable of `func`, the ONNX node whose conversion emitted it.

    `produced` is TVM's map from ONNX tensor name to the Relax expression of that tensor
    (ONNXGraphImporter._nodes). Bindings no node reaches (the function's output alias)
    are left out; the walker names their layers after their input.
    """
    bound: dict[Any, Any] = {}       # binding variable -> its value
    var_of_value: dict[Any, Any] = {}
    for block in func.body.blocks:
        for binding in block.bindings:
            bound[binding.var] = binding.value
            var_of_value[binding.value] = binding.var

    owners: dict[Any, NodeInfo] = {}
    # In graph order, so a node claims what it emitted before a later node reaches it.
    for index, node in enumerate(nodes):
        info = node_info(index, node)
        for name in node.output:
            expr = produced.get(name) if name else None
            if expr is None:
                continue
            fields = expr.fields if isinstance(expr, relax.Tuple) else [expr]
            for item in fields:
                var = item if item in bound else var_of_value.get(item)
                if var is not None:
                    _claim(var, info, bound, owners, relax)
    return owners


def _claim(root: Any, info: NodeInfo, bound: dict[Any, Any], owners: dict[Any, NodeInfo],
           relax: Any) -> None:
    """Gives `root` and every unowned binding it reads (transitively) to `info`."""
    stack = [root]
    while stack:
        var = stack.pop()
        if var in owners or var not in bound:  # another node's, or a function parameter
            continue
        owners[var] = info
        stack.extend(vars_read(bound[var], relax))


def vars_read(expr: Any, relax: Any) -> list[Any]:
    if isinstance(expr, relax.Var):
        return [expr]
    if isinstance(expr, relax.Tuple):
        return [v for f in expr.fields for v in vars_read(f, relax)]
    if isinstance(expr, relax.TupleGetItem):
        return vars_read(expr.tuple_value, relax)
    if isinstance(expr, relax.Call):
        return [v for a in expr.args for v in vars_read(a, relax)]
    return []


def tensor_bindings(func: Any, nodes: list[onnx.NodeProto], produced: dict[str, Any],
                    relax: Any) -> dict[str, Any]:
    """ONNX tensor name -> the binding variable whose value is that tensor, for every node
    output TVM converted to one binding (tuple-valued outputs are left out: no one layer
    holds them). The walker's value for that variable is then the tensor's layer output."""
    bound: set[Any] = set()
    var_of_value: dict[Any, Any] = {}
    for block in func.body.blocks:
        for binding in block.bindings:
            bound.add(binding.var)
            var_of_value[binding.value] = binding.var
    out: dict[str, Any] = {}
    for node in nodes:
        for name in node.output:
            expr = produced.get(name) if name else None
            if expr is None or isinstance(expr, relax.Tuple):
                continue
            var = expr if expr in bound else var_of_value.get(expr)
            if var is not None:
                out[name] = var
    return out
