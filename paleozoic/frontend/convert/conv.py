"""Converters of convolution and transposed convolution (Conv, ConvTranspose).

1-D forms over [N, C, L] (speech and temporal models) run as the 2-D layer kinds with a
height of 1, as CNML users ran them: a Reshape to [N, C, 1, L], the 2-D layer with kernel,
stride, pads and dilation [1, k] ..., a Reshape back. Inserting or dropping a unit axis
keeps every element in place (in NCHW and in the device's NHWC alike), so those reshapes
cost nothing on the device model and the passes cancel the pairs between 1-D layers.
Pooling's 1-D form (pool.py) takes the same road.
"""

from __future__ import annotations

from typing import Any

from paleozoic.frontend.convert.registry import (
    OnnxNode, OnnxOp, attr_text, converter, onnx_ops,
)
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker, ints


def spatial_checks(op: str, attrs: dict[str, Any]) -> list[str]:
    problems = []
    pads = attrs.get("pads")
    if pads is not None and any(int(p) < 0 for p in pads):
        problems.append(f"pads={attr_text(pads)} has negative values (cropping); the SDK's "
                        f"{'convolution' if op == 'Conv' else 'pooling'} pads with zeros "
                        f"only; crop the input in the exporter instead")
    for key in ("strides", "dilations"):
        values = attrs.get(key)
        if values is not None and any(int(v) < 1 for v in values):
            problems.append(f"{key}={attr_text(values)} must be >= 1")
    return problems


def auto_pad(attrs: dict[str, Any]) -> str:
    return attr_text(attrs.get("auto_pad", "NOTSET"))


def _check_conv(n: OnnxNode) -> list[str]:
    problems = []
    node, attrs = n.node, n.attrs
    weight = n.constants.get(node.input[1]) if len(node.input) > 1 else None
    if weight is None:
        problems.append(f"weight {node.input[1]!r} is not an initializer or Constant; the "
                        f"SDK's convolution needs constant weights (fold them in the exporter)")
    elif len(weight.dims) not in (3, 4):
        problems.append(f"a {len(weight.dims) - 2}-D convolution (weight shape "
                        f"{list(weight.dims)}); only 1-D and 2-D convolutions (NCL with weight "
                        f"OIL, NCHW with weight OIHW) are supported")
    kernel = attrs.get("kernel_shape")
    if weight is not None and len(weight.dims) in (3, 4) and kernel is not None and \
            [int(k) for k in kernel] != list(weight.dims[2:]):
        problems.append(f"kernel_shape={attr_text(kernel)} disagrees with the weight's "
                        f"spatial shape {list(weight.dims[2:])}; fix the attribute or drop it")
    if auto_pad(attrs) not in ("NOTSET", "VALID"):
        problems.append(f"auto_pad={auto_pad(attrs)} is not supported for Conv (TVM's "
                        f"frontend cannot lower it); give explicit pads (pads=[top, left, "
                        f"bottom, right]) and auto_pad=NOTSET")
    return problems + spatial_checks("Conv", attrs)


def _check_deconv(n: OnnxNode) -> list[str]:
    if "output_shape" in n.attrs:
        return [f"output_shape={attr_text(n.attrs['output_shape'])}; give the output size "
                f"with pads and output_padding instead"]
    return []


onnx_ops({
    "Conv": OnnxOp("Conv", weights=(1, 2), check=_check_conv),
    "ConvTranspose": OnnxOp("Deconv", weights=(1, 2), check=_check_deconv),
})


def _conv_operands(w: Walker, call: Any, args: list[Value], what: str, data_layout: str,
                   kernel_layout: str) -> tuple[Act, Const, Any]:
    """A convolution's activation, constant weight and call attributes, in the layouts the
    layers take."""
    x, weight = args
    if not isinstance(x, Act) or not isinstance(weight, Const):
        raise w.fail(f"{what} needs an activation input and a constant weight")
    a = call.attrs
    if a.data_layout != data_layout or a.kernel_layout != kernel_layout:
        raise w.fail(f"{what} layout {a.data_layout}/{a.kernel_layout} is not "
                     f"{data_layout}/{kernel_layout}")
    return x, weight, a


def _conv_geometry(w: Walker, call: Any, args: list[Value], what: str,
                   kernel_layout: str) -> tuple[Act, Const, dict[str, Any]]:
    """The activation, the constant weight and the attributes Conv and Deconv share."""
    x, weight, a = _conv_operands(w, call, args, what, "NCHW", kernel_layout)
    top, left, bottom, right = ints(a.padding)
    kh, kw = weight.value.shape[2:]
    return x, weight, {"kernel": [int(kh), int(kw)], "stride": ints(a.strides),
                       "pads": [top, bottom, left, right], "dilation": ints(a.dilation),
                       "groups": int(a.groups)}


@converter("relax.nn.conv2d")
def convert_conv2d(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight, geometry = _conv_geometry(w, call, args, "conv2d", "OIHW")
    attrs = {"out_channels": int(weight.value.shape[0]), **geometry}
    return w.emit("Conv", [x], attrs, {"weight": weight.value})


def to_2d(w: Walker, x: Act) -> Act:
    """[N, C, L] as [N, C, 1, L] (a helper layer; the node names the 2-D layer)."""
    n, c, length = w.tensors[x.name].shape
    return w.emit("Reshape", [x], {"shape": [n, c, 1, length]}, part="to2d", main=False)


def to_1d(w: Walker, y: Act) -> Act:
    n, c, _, length = w.tensors[y.name].shape
    return w.emit("Reshape", [y], {"shape": [n, c, length]}, part="to1d", main=False)


def _conv1d_geometry(w: Walker, call: Any, args: list[Value], what: str,
                     kernel_layout: str) -> tuple[Act, Any, dict[str, Any]]:
    """The 2-D input, weight ([O, I, 1, K] or [I, O, 1, K]) and attributes of a 1-D
    convolution or transposed convolution."""
    x, weight, a = _conv_operands(w, call, args, what, "NCW", kernel_layout)
    left, right = ints(a.padding)
    (stride,), (dilation,) = ints(a.strides), ints(a.dilation)
    o, i, k = weight.value.shape
    geometry = {"kernel": [1, int(k)], "stride": [1, stride], "pads": [0, 0, left, right],
                "dilation": [1, dilation], "groups": int(a.groups)}
    return to_2d(w, x), weight.value.reshape(o, i, 1, k), geometry


@converter("relax.nn.conv1d")
def convert_conv1d(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight, geometry = _conv1d_geometry(w, call, args, "conv1d", "OIW")
    y = w.emit("Conv", [x], {"out_channels": int(weight.shape[0]), **geometry},
               {"weight": weight})
    return to_1d(w, y)


@converter("relax.nn.conv1d_transpose")
def convert_conv1d_transpose(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight, geometry = _conv1d_geometry(w, call, args, "conv1d_transpose", "IOW")
    (output_padding,) = ints(call.attrs.output_padding)
    attrs = {"out_channels": int(weight.shape[1]) * geometry["groups"], **geometry,
             "output_padding": [0, output_padding]}
    return to_1d(w, w.emit("Deconv", [x], attrs, {"weight": weight}))


@converter("relax.nn.conv2d_transpose")
def convert_conv2d_transpose(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight, geometry = _conv_geometry(w, call, args, "conv2d_transpose", "IOHW")
    attrs = {"out_channels": int(weight.value.shape[1]) * geometry["groups"], **geometry,
             "output_padding": ints(call.attrs.output_padding)}
    return w.emit("Deconv", [x], attrs, {"weight": weight.value})
