"""Walks the dataflow bindings of TVM's Relax module into Paleozoic layers.

TVM's ONNX frontend is the parser; this module maps its lowered forms back to layer kinds,
one converter per Relax operator (the shape of TVM's own converter table). Weights stay
function parameters (keep_params_in_input=True) so they keep their ONNX names, which give
the layers readable names; the few shape operations TVM applies to weights (bias
reshape, Gemm's weight transpose, Unsqueeze) are evaluated here with numpy.

Multi-binding patterns (TVM's decomposition of LRN, and Sum as broadcast/stack/sum) are
tracked as Pending values until the binding that completes them.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from paleozoic.errors import UnsupportedModelError
from paleozoic.ir import Layer, Operator, TensorInfo
from paleozoic.ops import KINDS
from paleozoic.ops.enums import INTERP_COORDINATES, INTERP_ROUNDING

logger = logging.getLogger(__name__)


# ---- values bound to Relax variables --------------------------------------------------
@dataclass(frozen=True)
class Act:
    """An activation tensor of the layer queue."""

    name: str


@dataclass(frozen=True)
class Const:
    value: np.ndarray
    origin: str = ""  # ONNX name of the weight it came from, for naming layers


@dataclass(frozen=True)
class Tup:
    items: tuple[Any, ...]


@dataclass
class Pending:
    """A partly matched multi-binding pattern."""

    pattern: str
    source: Act | None = None
    items: list[Act] = field(default_factory=list)
    attrs: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # the layer's, once known


Value = Act | Const | Tup | Pending


class ConversionError(UnsupportedModelError):
    pass


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def clean_identifier(name: str) -> str:
    """A readable C++ identifier from an ONNX name ("gpu_0/res2_0_branch2a_w_0" ->
    "res2_0_branch2a_w")."""
    name = re.sub(r"^gpu_\d+/", "", name)
    name = re.sub(r"_0$", "", name)
    ident = re.sub(r"\W+", "_", name).strip("_") or "t"
    if ident[0].isdigit():
        ident = "t" + ident
    return ident


_WEIGHT_SUFFIX = re.compile(r"(_w|_weight|_W|_kernel|_s|_scale|_gamma)$")


def stem_from_weight(origin: str) -> str:
    return _WEIGHT_SUFFIX.sub("", clean_identifier(origin)) if origin else ""


class Walker:
    """Holds the state of one walk; converters call its emit/lookup helpers."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.layers: list[Layer] = []
        self.tensors: dict[str, TensorInfo] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.env: dict[Any, Value] = {}
        self.stems: dict[str, str] = {}  # tensor -> stem of the layer that made it
        self.used_names: set[str] = set()
        self.current_shape: tuple[int, ...] = ()
        self.current_var = ""
        # Operators that read each binding ("relax.expand_dims", "tir:minimum"), for the
        # patterns that decide by what comes next.
        self.consumers: dict[Any, list[str]] = {}
        # LRN parameters of the ONNX nodes, in graph order, and how many were matched.
        self.lrn_attrs: list[dict[str, Any]] = []
        self.lrn_count = 0
        self.current_binding: Any = None

    # -- naming ----------------------------------------------------------------------
    def unique(self, base: str) -> str:
        name, n = base, 2
        while name in self.used_names:
            name, n = f"{base}_{n}", n + 1
        self.used_names.add(name)
        return name

    def read_only_by(self, operator: str) -> bool:
        """True when the current binding's value is read by `operator` alone."""
        return self.consumers.get(self.current_binding, []) == [operator]

    def lrn_ahead(self, act: Act) -> bool:
        """x * x opens TVM's LRN decomposition only when expand_dims reads it."""
        return self.read_only_by("relax.expand_dims")

    def stem_of(self, act: Act) -> str:
        return self.stems.get(act.name, act.name)

    # -- emission --------------------------------------------------------------------
    def emit(self, kind: str, inputs: list[Act], attrs: dict[str, Any] | None = None,
             weights: dict[str, np.ndarray] | None = None, stem: str = "",
             suffix: str = "") -> Act:
        """Appends a layer, checks our shape function against TVM's, returns its output."""
        attrs = attrs or {}
        stem = stem or (self.stem_of(inputs[0]) if inputs else "layer")
        name = self.unique(f"{stem}_{suffix}" if suffix else stem)
        spec = KINDS[kind]
        in_shapes = [self.tensors[a.name].shape for a in inputs]
        shape = spec.output_shape(attrs, in_shapes)
        if 0 in shape:
            raise self.fail(f"{kind} layer {name!r} would produce an empty tensor {shape}; "
                            f"zero-size tensors are not supported")
        layer = Layer(name=name, op=Operator(kind, attrs), inputs=[a.name for a in inputs],
                      output=name)
        for role, value in (weights or {}).items():
            key = f"{name}.{role}"
            self.weights[key] = np.ascontiguousarray(value, dtype=np.float32)
            layer.weights[role] = key
        self.layers.append(layer)
        self.tensors[name] = TensorInfo(name, shape)
        self.stems[name] = stem
        return Act(name)

    def check_final_shape(self, act: Act) -> None:
        ours = self.tensors[act.name].shape
        if self.current_shape and ours != self.current_shape:
            raise ConversionError(
                f"{self.source}: shape inference disagrees with TVM at {self.current_var} "
                f"(layer {act.name!r}): ours {ours}, TVM {self.current_shape}")

    def fail(self, message: str) -> ConversionError:
        return ConversionError(f"{self.source}: {self.current_var}: {message}")


# ---- constant evaluation (shape operations TVM applies to weights) ----------------------
def _const_reshape(call: Any, args: list[Const]) -> np.ndarray:
    return args[0].value.reshape(_ints(call.args[1].values))


def _const_permute(call: Any, args: list[Const]) -> np.ndarray:
    axes = call.attrs.axes
    return np.transpose(args[0].value, None if axes is None else _ints(axes))


def _const_expand_dims(call: Any, args: list[Const]) -> np.ndarray:
    value = args[0].value
    for axis in sorted(_ints(call.attrs.axis)):
        value = np.expand_dims(value, axis)
    return value


def _const_squeeze(call: Any, args: list[Const]) -> np.ndarray:
    axis = call.attrs.axis
    return np.squeeze(args[0].value, axis=None if axis is None else tuple(_ints(axis)))


def _const_broadcast_to(call: Any, args: list[Const]) -> np.ndarray:
    return np.broadcast_to(args[0].value, _ints(call.args[1].values)).copy()


def _const_binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable:
    return lambda call, args: fn(args[0].value, args[1].value)


CONST_EVAL: dict[str, Callable[[Any, list[Const]], np.ndarray]] = {
    "relax.reshape": _const_reshape,
    "relax.permute_dims": _const_permute,
    "relax.expand_dims": _const_expand_dims,
    "relax.squeeze": _const_squeeze,
    "relax.broadcast_to": _const_broadcast_to,
    "relax.add": _const_binary(np.add),
    "relax.subtract": _const_binary(np.subtract),
    "relax.multiply": _const_binary(np.multiply),
    "relax.divide": _const_binary(np.divide),
    "relax.sqrt": lambda call, args: np.sqrt(args[0].value),
    "relax.isnan": lambda call, args: np.isnan(args[0].value),
    "relax.where": lambda call, args: np.where(args[0].value, args[1].value, args[2].value),
    "relax.astype": lambda call, args: args[0].value.astype(str(call.attrs.dtype)),
}


# ---- converters ---------------------------------------------------------------------
def _channel_vector(w: Walker, act: Act, const: Const) -> np.ndarray | None:
    """The constant as one value per channel (axis 1) of `act`, or None if it is not."""
    shape = w.tensors[act.name].shape
    if len(shape) < 2:
        raise w.fail(f"per-channel operations need a channel axis (axis 1); the input "
                     f"has shape {shape}")
    value = const.value
    if value.size == 1:
        return np.full(shape[1], float(value.reshape(())), dtype=np.float32)
    channels = shape[1]
    squeezed = value.reshape(-1)
    if squeezed.size != channels:
        return None
    # Accept (C,), (C,1,1), (1,C,1,1) and the like: C must sit on the channel axis.
    dims = list(value.shape)
    trailing = len(shape) - 1 - (len(dims) - 1 - dims.index(channels)) if dims else 0
    if trailing != 1 and not (len(dims) == 1 and len(shape) == 2):
        return None
    return squeezed.astype(np.float32)


def conv_conv2d(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight = args
    if not isinstance(x, Act) or not isinstance(weight, Const):
        raise w.fail("conv2d needs an activation input and a constant weight")
    a = call.attrs
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW":
        raise w.fail(f"conv2d layout {a.data_layout}/{a.kernel_layout} is not NCHW/OIHW")
    top, left, bottom, right = _ints(a.padding)
    co, _, kh, kw = weight.value.shape
    attrs = {"out_channels": int(co), "kernel": [int(kh), int(kw)],
             "stride": _ints(a.strides), "pads": [top, bottom, left, right],
             "dilation": _ints(a.dilation), "groups": int(a.groups)}
    return w.emit("Conv", [x], attrs, {"weight": weight.value},
                  stem=stem_from_weight(weight.origin), suffix="" if weight.origin else "conv")


def conv_conv2d_transpose(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight = args
    if not isinstance(x, Act) or not isinstance(weight, Const):
        raise w.fail("conv2d_transpose needs an activation input and a constant weight")
    a = call.attrs
    if a.data_layout != "NCHW" or a.kernel_layout != "IOHW":
        raise w.fail(f"conv2d_transpose layout {a.data_layout}/{a.kernel_layout} is not "
                     f"NCHW/IOHW")
    top, left, bottom, right = _ints(a.padding)
    ci, co_per_group, kh, kw = weight.value.shape
    groups = int(a.groups)
    attrs = {"out_channels": int(co_per_group) * groups, "kernel": [int(kh), int(kw)],
             "stride": _ints(a.strides), "pads": [top, bottom, left, right],
             "dilation": _ints(a.dilation), "groups": groups,
             "output_padding": _ints(a.output_padding)}
    return w.emit("Deconv", [x], attrs, {"weight": weight.value},
                  stem=stem_from_weight(weight.origin), suffix="" if weight.origin else "deconv")


def conv_resize2d(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
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
    return w.emit("Interp", [x], attrs, suffix="resize")


def _pool(w: Walker, call: Any, args: list[Value], mode: str) -> Value:
    (x,) = args
    if not isinstance(x, Act):
        raise w.fail("pooling of a constant is not supported")
    a = call.attrs
    if a.layout != "NCHW":
        raise w.fail(f"pool layout {a.layout} is not NCHW")
    if any(d != 1 for d in _ints(a.dilation)):
        raise w.fail("dilated pooling is not supported by the SDK's pool op")
    top, left, bottom, right = _ints(a.padding)
    attrs = {"mode": mode, "kernel": _ints(a.pool_size), "stride": _ints(a.strides),
             "pads": [top, bottom, left, right], "ceil_mode": bool(a.ceil_mode),
             "count_include_pad": bool(a.count_include_pad) if mode == "avg" else False}
    return w.emit("Pool", [x], attrs, suffix=f"{mode}pool")


def conv_max_pool2d(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pool(w, call, args, "max")


def conv_avg_pool2d(w: Walker, call: Any, args: list[Value]) -> Value:
    return _pool(w, call, args, "avg")


def conv_mean(w: Walker, call: Any, args: list[Value]) -> Value:
    (x,) = args
    shape = w.tensors[x.name].shape if isinstance(x, Act) else ()
    axes = (list(range(len(shape))) if call.attrs.axis is None
            else sorted(a % len(shape) for a in _ints(call.attrs.axis))) if shape else []
    if not isinstance(x, Act) or len(shape) != 4 or axes != [2, 3]:
        raise w.fail("mean is supported over the H and W axes of an NCHW tensor only")
    out = w.emit("GlobalAvgPool", [x], suffix="gap")
    if not call.attrs.keepdims:
        out = w.emit("Reshape", [out], {"shape": [shape[0], shape[1]]}, suffix="flatten")
    return out


def conv_max(w: Walker, call: Any, args: list[Value]) -> Value:
    (x,) = args
    shape = w.tensors[x.name].shape if isinstance(x, Act) else ()
    axes = (list(range(len(shape))) if call.attrs.axis is None
            else sorted(a % len(shape) for a in _ints(call.attrs.axis))) if shape else []
    if not isinstance(x, Act) or len(shape) != 4 or axes != [2, 3]:
        raise w.fail("max is supported over the H and W axes of an NCHW tensor only "
                     "(GlobalMaxPool)")
    attrs = {"mode": "max", "kernel": [shape[2], shape[3]], "stride": [1, 1],
             "pads": [0, 0, 0, 0], "ceil_mode": False, "count_include_pad": False}
    out = w.emit("Pool", [x], attrs, suffix="gmp")
    if not call.attrs.keepdims:
        out = w.emit("Reshape", [out], {"shape": [shape[0], shape[1]]}, suffix="flatten")
    return out


def conv_relu(w: Walker, call: Any, args: list[Value]) -> Value:
    return w.emit("Active", [_act(w, args[0])], {"function": "relu"}, suffix="relu")


def conv_sigmoid(w: Walker, call: Any, args: list[Value]) -> Value:
    return w.emit("Active", [_act(w, args[0])], {"function": "sigmoid"}, suffix="sigmoid")


def conv_tanh(w: Walker, call: Any, args: list[Value]) -> Value:
    return w.emit("Active", [_act(w, args[0])], {"function": "tanh"}, suffix="tanh")


# The SDK's bounded activations: Clip becomes one of these or is refused.
_CLIP_FUNCTIONS = {(0.0, float("inf")): "relu", (0.0, 1.0): "relu1", (0.0, 6.0): "relu6"}


def _scalar(w: Walker, const: Const, what: str) -> float:
    """One number (exporters write scalars as shape () or (1,) tensors)."""
    value = np.asarray(const.value)
    if value.size != 1:
        raise w.fail(f"{what} must be a single number, got shape {value.shape}")
    return float(value.reshape(-1)[0])


def clip_layer(w: Walker, x: Act, lo: float, hi: float) -> Act:
    function = _CLIP_FUNCTIONS.get((float(lo), float(hi)))
    if function is None:
        supported = ", ".join(f"[{a:g}, {b:g}] ({f})" for (a, b), f in _CLIP_FUNCTIONS.items())
        raise w.fail(f"Clip to [{lo:g}, {hi:g}] has no SDK activation; supported bounds: "
                     f"{supported}")
    return w.emit("Active", [x], {"function": function}, suffix=function)


def conv_clip(w: Walker, call: Any, args: list[Value]) -> Value:
    x, lo, hi = args
    if not isinstance(x, Act) or not isinstance(lo, Const) or not isinstance(hi, Const):
        raise w.fail("clip is supported on an activation with constant bounds")
    return clip_layer(w, x, _scalar(w, lo, "clip's lower bound"),
                      _scalar(w, hi, "clip's upper bound"))


def conv_leakyrelu(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    shape = w.tensors[x.name].shape
    if len(shape) < 2:
        raise w.fail("LeakyRelu needs an input with a channel axis")
    slope = np.full(shape[1], float(call.attrs.alpha), dtype=np.float32)
    return w.emit("PRelu", [x], {}, {"slope": slope}, suffix="leakyrelu")


def conv_prelu(w: Walker, call: Any, args: list[Value]) -> Value:
    x, slope = args
    if not isinstance(x, Act) or not isinstance(slope, Const):
        raise w.fail("PRelu is supported with a constant slope")
    shape = w.tensors[x.name].shape
    if len(shape) < 2:
        raise w.fail("PRelu needs an input with a channel axis (axis 1)")
    # TVM hands a 1-D slope and its axis: (C,) on axis 1, or one shared value.
    values = np.asarray(slope.value, dtype=np.float32).reshape(-1)
    if values.size == 1:
        per_channel = np.full(shape[1], values[0], dtype=np.float32)
    elif int(call.attrs.axis) % len(shape) == 1 and values.size == shape[1]:
        per_channel = values
    else:
        raise w.fail(f"PRelu slope of shape {slope.value.shape} on axis {call.attrs.axis} "
                     f"is not per-channel")
    return w.emit("PRelu", [x], {}, {"slope": per_channel}, suffix="prelu",
                  stem=stem_from_weight(slope.origin))


def conv_softmax(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    rank = len(w.tensors[x.name].shape)
    return w.emit("Softmax", [x], {"axis": int(call.attrs.axis) % rank}, suffix="softmax")


def conv_batch_norm(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    gamma, beta, mean, var = args[1:]
    if not all(isinstance(c, Const) for c in (gamma, beta, mean, var)):
        raise w.fail("batch_norm parameters must be constants")
    if int(call.attrs.axis) != 1:
        raise w.fail("batch_norm is supported on the channel axis (1) only")
    eps = float(call.attrs.epsilon)
    stem = stem_from_weight(gamma.origin) or w.stem_of(x)
    # The SDK's BatchNorm is (x - mean) * var without affine terms: the paper's
    # weighted-BN substitution adds a Scale layer for gamma and beta.
    inv_std = 1.0 / np.sqrt(var.value.astype(np.float64) + eps)
    bn = w.emit("BatchNorm", [x], {"epsilon": eps},
                {"mean": mean.value, "var": inv_std.astype(np.float32)}, stem=stem)
    scale = w.emit("Scale", [bn], {}, {"alpha": gamma.value, "beta": beta.value},
                   stem=stem, suffix="scale")
    return Tup((scale, mean, var))


def conv_dropout(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    return Tup((x, x))  # inference: dropout is the identity


def conv_matmul(w: Walker, call: Any, args: list[Value]) -> Value:
    x, weight = args
    if not isinstance(x, Act) or not isinstance(weight, Const) or weight.value.ndim != 2:
        raise w.fail("matmul is supported with an activation and a constant 2-D weight")
    shape = w.tensors[x.name].shape
    if len(shape) < 2:
        raise w.fail("matmul of a 1-D activation is not supported")
    # The paper's GEMM substitution: y = x W becomes a fully-connected layer whose
    # filter is W transposed ([out, in], the SDK's MLP layout). Leading axes of an N-D x
    # fold into the rows and are restored after.
    rows = int(np.prod(shape[:-1]))
    x2 = x if len(shape) == 2 else w.emit("Reshape", [x], {"shape": [rows, shape[-1]]},
                                          suffix="rows")
    out = w.emit("FullyConnected", [x2], {"out_features": int(weight.value.shape[1])},
                 {"weight": np.ascontiguousarray(weight.value.T)},
                 stem=stem_from_weight(weight.origin), suffix="" if weight.origin else "fc")
    if len(shape) != 2:
        out = w.emit("Reshape", [out], {"shape": [*shape[:-1], int(weight.value.shape[1])]},
                     suffix="unrows")
    return out


def conv_concat(w: Walker, call: Any, args: list[Value]) -> Value:
    (items,) = args
    if not isinstance(items, Tup) or not all(isinstance(i, Act) for i in items.items):
        raise w.fail("concat of constants is not supported")
    rank = len(w.tensors[items.items[0].name].shape)
    return w.emit("Concat", list(items.items), {"axis": int(call.attrs.axis) % rank},
                  suffix="concat")


def conv_reshape_like(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    if isinstance(x, Pending):
        return _lrn_step(w, call, x)
    return w.emit("Reshape", [x], {"shape": list(w.current_shape)}, suffix="reshape")


def conv_permute_dims(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    rank = len(w.tensors[x.name].shape)
    axes = call.attrs.axes
    perm = list(reversed(range(rank))) if axes is None else [a % rank for a in _ints(axes)]
    return w.emit("Transpose", [x], {"perm": perm}, suffix="transpose")


def conv_broadcast_to(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    if w.tensors[x.name].shape != w.current_shape:
        raise w.fail("broadcast_to that changes an activation's shape is not supported")
    return x


def conv_stack(w: Walker, call: Any, args: list[Value]) -> Value:
    (items,) = args
    if not isinstance(items, Tup) or not all(isinstance(i, Act) for i in items.items):
        raise w.fail("stack is supported as part of Sum over activations only")
    if int(call.attrs.axis) != 0:
        raise w.fail("stack is supported on axis 0 (ONNX Sum) only")
    return Pending("sum", items=list(items.items))


def conv_sum(w: Walker, call: Any, args: list[Value]) -> Value:
    (stacked,) = args
    axis = call.attrs.axis
    if not isinstance(stacked, Pending) or stacked.pattern != "sum" or (
            axis is not None and _ints(axis) != [0]) or call.attrs.keepdims:
        raise w.fail("sum is supported as ONNX Sum (stack then sum over axis 0) only")
    out = stacked.items[0]
    for item in stacked.items[1:]:
        out = w.emit("Add", [out, item], suffix="add")
    return out


def _broadcasts_to(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    if len(small) > len(big):
        return False
    return all(d in (1, e) for d, e in zip(reversed(small), reversed(big)))


def _binary(w: Walker, op: str, a: Value, b: Value) -> Value:
    """x op y for two activations (Add, or Binary with y broadcast to x) or for an
    activation and a per-channel constant (a Scale layer)."""
    if isinstance(a, Act) and isinstance(b, Act):
        sa, sb = w.tensors[a.name].shape, w.tensors[b.name].shape
        if op == "add" and sa == sb:
            return w.emit("Add", [a, b], suffix="add")
        if sa != sb and not _broadcasts_to(sb, sa) and op in ("add", "mul") \
                and _broadcasts_to(sa, sb):
            a, b, sa, sb = b, a, sb, sa  # the SDK broadcasts its second operand
        if sa != sb and not _broadcasts_to(sb, sa):
            raise w.fail(f"{op} of {sa} and {sb}: the SDK broadcasts the second operand to "
                         f"the first only")
        return w.emit("Binary", [a, b], {"op": op}, suffix=op)
    if isinstance(a, Const) and isinstance(b, Act):
        if op in ("add", "mul"):
            a, b = b, a
        elif op == "sub":  # c - x = -1 * x + c
            vector = _channel_vector(w, b, a)
            if vector is None:
                raise w.fail(f"subtract from a constant of shape {a.value.shape} that is "
                             f"not per-channel")
            return w.emit("Scale", [b], {}, {"alpha": -np.ones_like(vector), "beta": vector},
                          suffix="rsub")
        else:
            raise w.fail("dividing a constant by an activation is not supported")
    if not (isinstance(a, Act) and isinstance(b, Const)):
        raise w.fail(f"{op} of these operands is not supported")
    vector = _channel_vector(w, a, b)
    if vector is None:
        raise w.fail(f"{op} with a constant of shape {b.value.shape} on an activation of "
                     f"shape {w.tensors[a.name].shape}: only per-channel or scalar constants "
                     f"are supported")
    ones, zeros = np.ones_like(vector), np.zeros_like(vector)
    if op == "div" and not np.all(vector):
        raise w.fail("division by a constant that has zeros")
    alpha, beta, suffix = {"add": (ones, vector, "bias"), "sub": (ones, -vector, "bias"),
                           "mul": (vector, zeros, "scale"),
                           "div": (1.0 / vector.astype(np.float64) if op == "div" else ones,
                                   zeros, "scale")}[op]
    return w.emit("Scale", [a], {}, {"alpha": alpha, "beta": beta}, suffix=suffix)


def conv_add(w: Walker, call: Any, args: list[Value]) -> Value:
    a, b = args
    if isinstance(a, Pending) or isinstance(b, Pending):
        return _lrn_step(w, call, a if isinstance(a, Pending) else b, b if isinstance(a, Pending) else a)
    return _binary(w, "add", a, b)


def conv_subtract(w: Walker, call: Any, args: list[Value]) -> Value:
    return _binary(w, "sub", *args)


def conv_multiply(w: Walker, call: Any, args: list[Value]) -> Value:
    a, b = args
    if isinstance(a, Act) and isinstance(b, Act) and a == b and w.lrn_ahead(a):
        # x * x opens TVM's LRN decomposition. TVM converts nodes in graph order and
        # emits this first binding of each eagerly (the final divide may come later), so
        # the k-th opening belongs to the k-th LRN node, whose parameters are used: TVM's
        # own lowering is wrong for even sizes, which the importer hands it as size + 1.
        if w.lrn_count >= len(w.lrn_attrs):
            raise w.fail("more LRN patterns than LRN nodes in the model")
        w.lrn_count += 1
        return Pending("lrn", source=a, params=dict(w.lrn_attrs[w.lrn_count - 1]))
    if isinstance(a, Pending) or isinstance(b, Pending):
        return _lrn_step(w, call, a if isinstance(a, Pending) else b, b if isinstance(a, Pending) else a)
    return _binary(w, "mul", a, b)


def conv_power(w: Walker, call: Any, args: list[Value]) -> Value:
    return _lrn_step(w, call, args[0], args[1])


def conv_divide(w: Walker, call: Any, args: list[Value]) -> Value:
    x, denom = args
    if isinstance(x, Act) and isinstance(denom, Pending) and denom.pattern == "lrn" \
            and denom.source == x and {"size", "alpha", "bias", "beta"} <= denom.attrs.keys():
        attrs = denom.params
        expected = attrs["size"] + (1 - attrs["size"] % 2)  # as handed to TVM
        if int(denom.attrs["size"]) != expected or not np.isclose(
                denom.attrs["beta"], attrs["beta"], rtol=1e-6):
            raise w.fail(f"LRN pattern (size {denom.attrs['size']}, beta "
                         f"{denom.attrs['beta']}) does not match its ONNX node (size "
                         f"{attrs['size']}, beta {attrs['beta']})")
        return w.emit("LRN", [x], attrs, suffix="lrn")
    if isinstance(denom, Pending) or isinstance(x, Pending):
        raise w.fail("divide does not complete the LRN pattern")
    return _binary(w, "div", x, denom)


def conv_avg_pool3d(w: Walker, call: Any, args: list[Value]) -> Value:
    return _lrn_step(w, call, args[0])


def _lrn_step(w: Walker, call: Any, pending: Value, const: Value | None = None) -> Value:
    """One binding of TVM's LRN decomposition:
    x*x, expand_dims, avg_pool3d(size,1,1), squeeze, *alpha, +bias, **beta, x / (.)."""
    if not isinstance(pending, Pending) or pending.pattern != "lrn":
        raise w.fail(f"{call.op.name} is supported inside LRN only")
    op = call.op.name
    scalar = (float(const.value.reshape(())) if isinstance(const, Const)
              and const.value.size == 1 else None)
    if op in ("relax.expand_dims", "relax.squeeze"):
        return pending
    if op == "relax.nn.avg_pool3d":
        size = _ints(call.attrs.pool_size)
        if size[1:] != [1, 1] or not call.attrs.count_include_pad:
            raise w.fail("avg_pool3d is supported as LRN's channel window only")
        pending.attrs["size"] = size[0]
        return pending
    if op == "relax.multiply" and scalar is not None:
        # avg_pool divided by size; alpha * S / size is ONNX's LRN form.
        pending.attrs["alpha"] = scalar
        return pending
    if op == "relax.add" and scalar is not None:
        pending.attrs["bias"] = scalar
        return pending
    if op == "relax.power" and scalar is not None:
        pending.attrs["beta"] = scalar
        return pending
    raise w.fail(f"{op} does not fit the LRN pattern")


def _act(w: Walker, value: Value) -> Any:
    if isinstance(value, (Act, Pending)):
        return value
    raise w.fail("this operation on a constant is not supported")


# ---- call_tir: operators TVM's frontend lowers straight to TIR (Clip's max/min) --------
def tir_maximum(w: Walker, call: Any, args: list[Value]) -> Value:
    if len(args) != 2 or not isinstance(args[0], Act) or not isinstance(args[1], Const):
        raise w.fail("maximum is supported as Clip's lower bound (a constant operand; "
                     "opset-6 Clip with min/max attributes is not: re-export at opset 11+)")
    lo = _scalar(w, args[1], "Clip's lower bound")
    if w.read_only_by("tir:minimum"):
        return Pending("clip", source=args[0], attrs={"lo": lo})
    return clip_layer(w, args[0], lo, float("inf"))


def tir_minimum(w: Walker, call: Any, args: list[Value]) -> Value:
    if len(args) != 2 or not isinstance(args[1], Const):
        raise w.fail("minimum is supported as Clip's upper bound (a constant operand; "
                     "opset-6 Clip with min/max attributes is not: re-export at opset 11+)")
    x, hi = args[0], _scalar(w, args[1], "Clip's upper bound")
    if isinstance(x, Pending) and x.pattern == "clip" and x.source is not None:
        return clip_layer(w, x.source, x.attrs["lo"], hi)
    if isinstance(x, Act):
        return clip_layer(w, x, float("-inf"), hi)
    raise w.fail("minimum of this operand is not supported")


TIR_CONVERTERS: dict[str, Callable[[Walker, Any, list[Value]], Value]] = {
    "maximum": tir_maximum,
    "minimum": tir_minimum,
}


# ---- slicing and matrix products -------------------------------------------------------
def _const_ints(value: Value) -> list[int]:
    if isinstance(value, Tup):
        return [int(np.asarray(item.value).reshape(())) for item in value.items]
    return _ints(np.asarray(value.value).reshape(-1))


def _slice(w: Walker, x: Act, axes: list[int], begin: list[int], end: list[int],
           step: list[int]) -> Act:
    shape = w.tensors[x.name].shape
    full_begin, full_end, full_step = [0] * len(shape), list(shape), [1] * len(shape)
    for axis, b, e, st in zip(axes, begin, end, step):
        axis %= len(shape)
        if st < 1:
            raise w.fail("slices with a negative or zero step are not supported")
        dim = shape[axis]
        b = min(max(b + dim if b < 0 else b, 0), dim)
        e = min(max(e + dim if e < 0 else e, 0), dim)
        full_begin[axis], full_end[axis], full_step[axis] = b, max(e, b), st
    if full_begin == [0] * len(shape) and full_end == list(shape) and full_step == [1] * len(shape):
        return x
    return w.emit("Slice", [x], {"begin": full_begin, "end": full_end, "step": full_step},
                  suffix="slice")


def conv_strided_slice(w: Walker, call: Any, args: list[Value]) -> Value:
    x = args[0]
    if not isinstance(x, Act) or not all(isinstance(a, (Const, Tup)) for a in args[1:]):
        raise w.fail("strided_slice is supported on an activation with constant bounds")
    axes, begin, end = (_const_ints(a) for a in args[1:4])
    step = _const_ints(args[4]) if len(args) > 4 else [1] * len(axes)
    return _slice(w, x, axes, begin, end, step)


def conv_split(w: Walker, call: Any, args: list[Value]) -> Value:
    x = _act(w, args[0])
    shape = w.tensors[x.name].shape
    axis = int(call.attrs.axis) % len(shape)
    sections = call.attrs.indices_or_sections
    if isinstance(sections, int) or hasattr(sections, "value") and not hasattr(sections, "__len__"):
        count = int(getattr(sections, "value", sections))
        # ONNX (opset 18 num_outputs): chunks of ceil(dim / count), the last one smaller.
        chunk = -(-shape[axis] // count)
        bounds = [min(chunk * i, shape[axis]) for i in range(1, count)]
    else:
        bounds = _ints(sections)
    edges = [0, *bounds, shape[axis]]
    return Tup(tuple(_slice(w, x, [axis], [lo], [hi], [1]) for lo, hi in zip(edges, edges[1:])))


CONVERTERS: dict[str, Callable[[Walker, Any, list[Value]], Value]] = {
    "relax.nn.conv2d": conv_conv2d,
    "relax.nn.conv2d_transpose": conv_conv2d_transpose,
    "relax.image.resize2d": conv_resize2d,
    "relax.nn.max_pool2d": conv_max_pool2d,
    "relax.nn.avg_pool2d": conv_avg_pool2d,
    "relax.nn.avg_pool3d": conv_avg_pool3d,
    "relax.mean": conv_mean,
    "relax.nn.relu": conv_relu,
    "relax.sigmoid": conv_sigmoid,
    "relax.tanh": conv_tanh,
    "relax.clip": conv_clip,
    "relax.nn.leakyrelu": conv_leakyrelu,
    "relax.nn.prelu": conv_prelu,
    "relax.max": conv_max,
    "relax.strided_slice": conv_strided_slice,
    "relax.split": conv_split,
    "relax.subtract": conv_subtract,
    "relax.nn.softmax": conv_softmax,
    "relax.nn.batch_norm": conv_batch_norm,
    "relax.nn.dropout": conv_dropout,
    "relax.matmul": conv_matmul,
    "relax.concat": conv_concat,
    "relax.reshape": conv_reshape_like,
    "relax.flatten": conv_reshape_like,
    "relax.squeeze": conv_reshape_like,
    "relax.expand_dims": conv_reshape_like,
    "relax.permute_dims": conv_permute_dims,
    "relax.broadcast_to": conv_broadcast_to,
    "relax.stack": conv_stack,
    "relax.sum": conv_sum,
    "relax.add": conv_add,
    "relax.multiply": conv_multiply,
    "relax.power": conv_power,
    "relax.divide": conv_divide,
}
