"""Converters of convolution, transposed convolution, resize and pooling.

1-D forms over [N, C, L] (speech and temporal models) run as the 2-D layer kinds with a
height of 1, as CNML users ran them: a Reshape to [N, C, 1, L], the 2-D layer with kernel,
stride, pads and dilation [1, k] ..., a Reshape back. Inserting or dropping a unit axis
keeps every element in place (in NCHW and in the device's NHWC alike), so those reshapes
cost nothing on the device model and the passes cancel the pairs between 1-D layers.
"""

from __future__ import annotations

from typing import Any

from paleozoic.frontend.convert.registry import (
    OnnxNode, OnnxOp, attr_text, converter, onnx_ops,
)
from paleozoic.frontend.convert.values import Act, Const, Value
from paleozoic.frontend.convert.walker import Walker, act_of, ints
from paleozoic.ops.interp import COORDINATES as INTERP_COORDINATES
from paleozoic.ops.interp import ROUNDINGS as INTERP_ROUNDING

def _spatial_checks(op: str, attrs: dict[str, Any]) -> list[str]:
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


def _auto_pad(attrs: dict[str, Any]) -> str:
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
    if _auto_pad(attrs) not in ("NOTSET", "VALID"):
        problems.append(f"auto_pad={_auto_pad(attrs)} is not supported for Conv (TVM's "
                        f"frontend cannot lower it); give explicit pads (pads=[top, left, "
                        f"bottom, right]) and auto_pad=NOTSET")
    return problems + _spatial_checks("Conv", attrs)


def _check_pool(n: OnnxNode) -> list[str]:
    problems = []
    node, attrs, op = n.node, n.attrs, n.node.op_type
    kernel = attrs.get("kernel_shape") or []
    if len(kernel) not in (1, 2):
        problems.append(f"kernel_shape={attr_text(kernel)} is {len(kernel)}-D; only 1-D "
                        f"pooling over NCL and 2-D pooling over NCHW are supported")
    if op == "MaxPool" and _auto_pad(attrs) == "SAME_LOWER":
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
    return problems + _spatial_checks(op, attrs)


def _check_deconv(n: OnnxNode) -> list[str]:
    if "output_shape" in n.attrs:
        return [f"output_shape={attr_text(n.attrs['output_shape'])}; give the output size "
                f"with pads and output_padding instead"]
    return []


def _check_resize(n: OnnxNode) -> list[str]:
    if int(n.attrs.get("antialias", 0)):
        return ["antialias=1; the SDK's interpolation has no antialiasing filter"]
    return []


onnx_ops({
    "Conv": OnnxOp("Conv", weights=(1, 2), check=_check_conv),
    "ConvTranspose": OnnxOp("Deconv", weights=(1, 2), check=_check_deconv),
    "Resize": OnnxOp("Interp", parameters=(1, 2, 3), check=_check_resize),
    "MaxPool": OnnxOp("Pool", check=_check_pool),
    "AveragePool": OnnxOp("Pool", check=_check_pool),
    "GlobalAveragePool": OnnxOp("GlobalAvgPool"),
    "GlobalMaxPool": OnnxOp("Pool"),
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


def _to_2d(w: Walker, x: Act) -> Act:
    """[N, C, L] as [N, C, 1, L] (a helper layer; the node names the 2-D layer)."""
    n, c, length = w.tensors[x.name].shape
    return w.emit("Reshape", [x], {"shape": [n, c, 1, length]}, part="to2d", main=False)


def _to_1d(w: Walker, y: Act) -> Act:
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
    return _to_2d(w, x), weight.value.reshape(o, i, 1, k), geometry


@converter("relax.nn.conv1d")
def convert_conv1d(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight, geometry = _conv1d_geometry(w, call, args, "conv1d", "OIW")
    y = w.emit("Conv", [x], {"out_channels": int(weight.shape[0]), **geometry},
               {"weight": weight})
    return _to_1d(w, y)


@converter("relax.nn.conv1d_transpose")
def convert_conv1d_transpose(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight, geometry = _conv1d_geometry(w, call, args, "conv1d_transpose", "IOW")
    (output_padding,) = ints(call.attrs.output_padding)
    attrs = {"out_channels": int(weight.shape[1]) * geometry["groups"], **geometry,
             "output_padding": [0, output_padding]}
    return _to_1d(w, w.emit("Deconv", [x], attrs, {"weight": weight}))


@converter("relax.nn.conv2d_transpose")
def convert_conv2d_transpose(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight, geometry = _conv_geometry(w, call, args, "conv2d_transpose", "IOHW")
    attrs = {"out_channels": int(weight.value.shape[1]) * geometry["groups"], **geometry,
             "output_padding": ints(call.attrs.output_padding)}
    return w.emit("Deconv", [x], attrs, {"weight": weight.value})


@converter("relax.image.resize2d")
def convert_resize2d(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    a = call.attrs
    if a.layout != "NCHW":
        raise w.fail(f"resize layout {a.layout} is not NCHW")
    method = {"nearest_neighbor": "nearest", "linear": "linear"}.get(str(a.method))
    if method is None:
        raise w.fail(f"resize method {a.method} is not supported (nearest and linear are)")
    coordinates = str(a.coordinate_transformation_mode)
    if coordinates not in INTERP_COORDINATES:
        raise w.fail(f"resize coordinate_transformation_mode {coordinates} is not supported "
                     f"({', '.join(INTERP_COORDINATES.values)} are)")
    rounding = str(a.rounding_method) or "round_prefer_floor"
    if method == "nearest" and rounding not in INTERP_ROUNDING:
        raise w.fail(f"resize nearest_mode {rounding} is not supported")
    shape = w.tensors[x.name].shape
    size = list(w.current_shape[2:]) if len(w.current_shape) == 4 else None
    if size is None:
        raise w.fail("resize needs a static output size")
    attrs = {"mode": method, "size": [int(size[0]), int(size[1])],
             "coordinates": coordinates, "rounding": rounding if method == "nearest" else ""}
    if len(shape) != 4:
        raise w.fail("resize is supported on NCHW tensors only")
    return w.emit("Interp", [x], attrs, part="resize")


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
    return _to_1d(w, w.emit("Pool", [_to_2d(w, x)], attrs, part=f"{mode}pool"))


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
