"""Attribute values Paleozoic cannot map faithfully, checked on the ONNX graph before TVM
parses it, so that each problem names the ONNX node, the attribute and its value, and all
of them are reported at once (UnsupportedModelError, exit code 3).

Each rule here exists because the value is either refused by TVM's frontend with a message
that names no node, or, worse, converted into something that computes a different answer
(MaxPool auto_pad=SAME_LOWER, BatchNormalization training_mode=1, a Conv kernel_shape that
disagrees with its weight, negative pads). The probes behind the rules are the tests in
tests/robustness/test_attribute_checks.py, which also check that every value accepted here
matches onnxruntime.
"""

from __future__ import annotations

from typing import Iterable

import onnx

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.support import ONNX_OPS

_FLOAT = onnx.TensorProto.FLOAT
# Operators whose float constant operands become per-channel Scale weights (an integer one
# is index arithmetic on the host).
_CONSTANT_OPERANDS = ("Add", "Mul", "Sum")
_OTHER_FLOATS = (onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16)


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return str(value)


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


def _spatial_checks(where: str, op: str, attrs: dict[str, object]) -> Iterable[str]:
    pads = attrs.get("pads")
    if pads is not None and any(int(p) < 0 for p in pads):  # type: ignore[union-attr]
        yield (f"{where}: pads={_text(pads)} has negative values (cropping); the SDK's "
               f"{'convolution' if op == 'Conv' else 'pooling'} pads with zeros only; "
               f"crop the input in the exporter instead")
    for key in ("strides", "dilations"):
        values = attrs.get(key)
        if values is not None and any(int(v) < 1 for v in values):  # type: ignore[union-attr]
            yield f"{where}: {key}={_text(values)} must be >= 1"


def check_attributes(model: onnx.ModelProto, source: str) -> None:
    """Raises UnsupportedModelError listing every unsupported attribute value."""
    graph = model.graph
    constants = _constants(graph)
    consumed = _consumed(graph)
    problems: list[str] = []
    for index, node in enumerate(graph.node):
        op = node.op_type
        where = f"node {node.name or '#' + str(index)!r} ({op})"
        attrs = _attrs(node)
        auto_pad = _text(attrs.get("auto_pad", "NOTSET"))

        if op == "Conv":
            weight = constants.get(node.input[1]) if len(node.input) > 1 else None
            if weight is None:
                problems.append(f"{where}: weight {node.input[1]!r} is not an initializer "
                                f"or Constant; the SDK's convolution needs constant "
                                f"weights (fold them in the exporter)")
            elif len(weight.dims) not in (3, 4):
                problems.append(f"{where}: a {len(weight.dims) - 2}-D convolution (weight "
                                f"shape {list(weight.dims)}); only 1-D and 2-D convolutions "
                                f"(NCL with weight OIL, NCHW with weight OIHW) are supported")
            kernel = attrs.get("kernel_shape")
            if weight is not None and len(weight.dims) in (3, 4) and kernel is not None and \
                    [int(k) for k in kernel] != list(weight.dims[2:]):  # type: ignore[union-attr]
                problems.append(f"{where}: kernel_shape={_text(kernel)} disagrees with the "
                                f"weight's spatial shape {list(weight.dims[2:])}; fix the "
                                f"attribute or drop it")
            if auto_pad not in ("NOTSET", "VALID"):
                problems.append(f"{where}: auto_pad={auto_pad} is not supported for Conv "
                                f"(TVM's frontend cannot lower it); give explicit pads "
                                f"(pads=[top, left, bottom, right]) and auto_pad=NOTSET")
            problems.extend(_spatial_checks(where, op, attrs))

        elif op in ("MaxPool", "AveragePool"):
            kernel = attrs.get("kernel_shape") or []
            if len(kernel) not in (1, 2):  # type: ignore[arg-type]
                problems.append(f"{where}: kernel_shape={_text(kernel)} is "
                                f"{len(kernel)}-D; only 1-D pooling over NCL and 2-D "  # type: ignore[arg-type]
                                f"pooling over NCHW are supported")
            if op == "MaxPool" and auto_pad == "SAME_LOWER":
                problems.append(f"{where}: auto_pad=SAME_LOWER is not supported for MaxPool "
                                f"(TVM's frontend computes the wrong output size); give "
                                f"explicit pads and auto_pad=NOTSET")
            dilations = attrs.get("dilations")
            if dilations is not None and any(int(d) != 1 for d in dilations):  # type: ignore[union-attr]
                problems.append(f"{where}: dilations={_text(dilations)}; the SDK's pool op "
                                f"has no dilation (only 1 is supported)")
            if op == "MaxPool" and len(node.output) > 1 and node.output[1] in consumed:
                problems.append(f"{where}: its second output (Indices, {node.output[1]!r}) "
                                f"is used; the SDK's pool op returns values only")
            problems.extend(_spatial_checks(where, op, attrs))

        elif op == "ConvTranspose" and "output_shape" in attrs:
            problems.append(f"{where}: output_shape={_text(attrs['output_shape'])}; give the "
                            f"output size with pads and output_padding instead")

        elif op == "Resize" and int(attrs.get("antialias", 0)):  # type: ignore[call-overload]
            problems.append(f"{where}: antialias=1; the SDK's interpolation has no "
                            f"antialiasing filter")

        elif op == "Dropout" and len(node.input) > 2 and node.input[2]:
            mode = constants.get(node.input[2])
            if mode is None or bool(onnx.numpy_helper.to_array(mode).reshape(())):
                problems.append(f"{where}: training_mode input {node.input[2]!r} is "
                                f"{'not a constant' if mode is None else 'true'}; only "
                                f"inference Dropout (the identity) is supported")

        elif op == "BatchNormalization":
            if int(attrs.get("training_mode", 0)):  # type: ignore[call-overload]
                problems.append(f"{where}: training_mode=1 (batch statistics); only "
                                f"inference BatchNormalization with running mean and var is "
                                f"supported; export the model in eval mode")
            if "spatial" in attrs and not int(attrs["spatial"]):  # type: ignore[call-overload]
                problems.append(f"{where}: spatial=0 (per-element statistics); only "
                                f"per-channel BatchNormalization is supported")
            extra = [o for o in node.output[1:] if o and o in consumed]
            if extra:
                problems.append(f"{where}: outputs {extra} (running statistics) are used; "
                                f"only the normalised output is supported")

        if op in ONNX_OPS and ONNX_OPS[op].check is not None:
            problems.extend(f"{where}: {problem}" for problem in ONNX_OPS[op].check(attrs))

        for position in (ONNX_OPS[op].weights if op in ONNX_OPS else ()):
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
