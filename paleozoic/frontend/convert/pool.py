"""Converters of max and average pooling, 2-D and 1-D (the 1-D form as conv.py's), and
of global pooling."""

from __future__ import annotations

from typing import Any

from paleozoic.frontend.convert.conv import auto_pad, spatial_checks, to_1d, to_2d
from paleozoic.frontend.convert.registry import OnnxNode, OnnxOp, attr_text, converter, onnx_ops
from paleozoic.frontend.convert.values import Act, Value
from paleozoic.frontend.convert.walker import Walker, ints


def _check_pool(n: OnnxNode) -> list[str]:
    problems = []
    node, attrs, op = n.node, n.attrs, n.node.op_type
    kernel = attrs.get("kernel_shape") or []
    if len(kernel) not in (1, 2):
        problems.append(f"kernel_shape={attr_text(kernel)} is {len(kernel)}-D; only 1-D "
                        f"pooling over NCL and 2-D pooling over NCHW are supported")
    if op == "MaxPool" and auto_pad(attrs) == "SAME_LOWER":
        problems.append("auto_pad=SAME_LOWER is not supported for MaxPool (TVM's frontend "
                        "computes the wrong output size); give explicit pads and "
                        "auto_pad=NOTSET")
    dilations = attrs.get("dilations")
    if dilations is not None and any(int(d) != 1 for d in dilations):
        problems.append(f"dilations={attr_text(dilations)}; the SDK's pool op has no "
                        f"dilation (only 1 is supported)")
    if op == "MaxPool" and len(node.output) > 1 and node.output[1] in n.consumed:
        problems.append(f"its second output (Indices, {node.output[1]!r}) is used; the SDK's "
                        f"pool op returns values only")
    return problems + spatial_checks(op, attrs)


onnx_ops({
    "MaxPool": OnnxOp("Pool", check=_check_pool),
    "AveragePool": OnnxOp("Pool", check=_check_pool),
    "GlobalAveragePool": OnnxOp("GlobalAvgPool"),
    "GlobalMaxPool": OnnxOp("Pool"),
})


def _pool(w: Walker, call: Any, args: list[Value], mode: str, one_d: bool = False) -> Value:
    """A 2-D pool, or with `one_d` a 1-D one over [N, C, L] as the 2-D pool with H = 1."""
    (x,) = args
    if not isinstance(x, Act):
        raise w.fail("pooling of a constant is not supported")
    a = call.attrs
    layout = "NCW" if one_d else "NCHW"
    if a.layout != layout:
        raise w.fail(f"pool layout {a.layout} is not {layout}")
    if any(d != 1 for d in ints(a.dilation)):
        raise w.fail("dilated pooling is not supported by the SDK's pool op")
    if one_d:
        (left, right), top, bottom = ints(a.padding), 0, 0
        kernel, stride = [1, *ints(a.pool_size)], [1, *ints(a.strides)]
    else:
        top, left, bottom, right = ints(a.padding)
        kernel, stride = ints(a.pool_size), ints(a.strides)
    attrs = {"mode": mode, "kernel": kernel, "stride": stride,
             "pads": [top, bottom, left, right], "ceil_mode": bool(a.ceil_mode),
             "count_include_pad": bool(a.count_include_pad) if mode == "avg" else False}
    if not one_d:
        return w.emit("Pool", [x], attrs, part=f"{mode}pool")
    return to_1d(w, w.emit("Pool", [to_2d(w, x)], attrs, part=f"{mode}pool"))


@converter("relax.nn.max_pool1d")
def convert_max_pool1d(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pool(w, call, args, "max", one_d=True)


@converter("relax.nn.avg_pool1d")
def convert_avg_pool1d(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pool(w, call, args, "avg", one_d=True)


@converter("relax.nn.max_pool2d")
def convert_max_pool2d(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pool(w, call, args, "max")


@converter("relax.nn.avg_pool2d")
def convert_avg_pool2d(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pool(w, call, args, "avg")
