"""The checks on the ONNX graph before TVM parses it, so that each problem names the ONNX node,
the attribute or operand and its value, and all of them are reported at once
(UnsupportedModelError, exit code 3). Each operator's own rules are its OnnxOp's check hook,
beside its converter (frontend/convert); here is the walk over the nodes, and the rules
common to every operator: float32 weights in the slots its OnnxOp names, and no other float
type in the constant operands that become per-channel Scale weights.
"""

from __future__ import annotations

import onnx

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.convert.registry import OnnxNode
from paleozoic.frontend.support import ONNX_OPS

_FLOAT = onnx.TensorProto.FLOAT
# Operators whose float constant operands become per-channel Scale weights (an integer one
# is index arithmetic on the host).
_CONSTANT_OPERANDS = ("Add", "Mul", "Sum")
_OTHER_FLOATS = (onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16)


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _constants(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    """Initializers and Constant-node outputs by name (headers only are read: dims, dtype)."""
    found = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    found[node.output[0]] = attr.t
    return found


def _consumed(graph: onnx.GraphProto) -> set[str]:
    names = {o.name for o in graph.output}
    for node in graph.node:
        names.update(i for i in node.input if i)
    return names


def check_attributes(model: onnx.ModelProto, source: str) -> None:
    """Raises UnsupportedModelError listing every unsupported attribute value."""
    graph = model.graph
    constants = _constants(graph)
    consumed = frozenset(_consumed(graph))
    problems: list[str] = []
    for index, node in enumerate(graph.node):
        op = node.op_type
        where = f"node {node.name or '#' + str(index)!r} ({op})"
        spec = ONNX_OPS.get(op)
        if spec is not None and spec.check is not None:
            checked = OnnxNode(node, _attrs(node), constants, consumed)
            problems.extend(f"{where}: {problem}" for problem in spec.check(checked))
        for position in (spec.weights if spec is not None else ()):
            if position < len(node.input) and node.input[position] in constants:
                tensor = constants[node.input[position]]
                if tensor.data_type != _FLOAT:
                    problems.append(_dtype_problem(where, tensor, node.input[position]))
        if op in _CONSTANT_OPERANDS:
            for name in node.input:
                tensor = constants.get(name)
                if tensor is not None and tensor.data_type in _OTHER_FLOATS:
                    problems.append(_dtype_problem(where, tensor, name))

    if problems:
        listed = "\n".join(f"  {p}" for p in problems)
        raise UnsupportedModelError(
            f"{source}: {len(problems)} unsupported attribute value(s):\n{listed}")


def _dtype_problem(where: str, tensor: onnx.TensorProto, name: str) -> str:
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type) \
        if tensor.data_type else "undefined"
    return (f"{where}: constant {name!r} is {dtype}, not float32; Paleozoic runs fp32 "
            f"models only (convert the weights to float32)")
