"""Converters of BatchNorm, LayerNormalization, InstanceNormalization, GroupNormalization,
Dropout and TVM's decomposition of LRN.

Instance and group normalisation are layer normalisation over the trailing axes of a
per-(sample, group) view, then a per-channel affine: LayerNorm(axis 2) of [N, C, *S] (or of
[N, G, C / G * prod(S)], a free reshape), unit gamma and zero beta, and a Scale. One SDK op
normalises with a two-pass (mean, then squared deviations) reduction, so inputs with a large
mean do not cancel as E[x^2] - E[x]^2 would; no new layer kind is needed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.convert.patterns import (
    Dpl, Forms, Found, Match, PatternError, Read, VarOf, constant_value, constants_are, scalar,
)
from paleozoic.frontend.convert.registry import (
    OnnxNode,
    OnnxOp,
    converter,
    onnx_ops,
    pattern_converter,
)
from paleozoic.frontend.convert.values import Act, Const, Tup, Value
from paleozoic.frontend.convert.walker import Walker, act_of, channel_vector, ints

logger = logging.getLogger(__name__)

def _lrn_float64(x: np.ndarray, *, alpha: float, beta: float, bias: float,
                size: int) -> tuple[np.ndarray]:
    # onnx's reference (1.23) loops over the batch axis where it means channels, so every
    # channel past the first gets no square sum.
    before, after = (size - 1) // 2, size // 2
    padded = np.pad(np.square(x), [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
    channels = x.shape[1]
    square_sum = sum(padded[:, j:j + channels] for j in range(size))
    # Attributes arrive as float32 scalars: alpha / size is taken in float64.
    alpha, beta, bias = float(alpha), float(beta), float(bias)
    return ((x / (bias + (alpha / size) * square_sum) ** beta).astype(x.dtype),)


def _lrn_odd_size(node: onnx.NodeProto) -> None:
    """TVM pads size // 2 channels on both sides, which for an even size gives one channel
    too many: it parses the next odd size, and convert_lrn takes the size back from the
    node that emitted the match."""
    for attr in node.attribute:
        if attr.name == "size" and attr.i % 2 == 0:
            attr.i += 1


def _check_batchnorm(n: OnnxNode) -> list[str]:
    problems = []
    if int(n.attrs.get("training_mode", 0)):
        problems.append("training_mode=1 (batch statistics); only inference "
                        "BatchNormalization with running mean and var is supported; export "
                        "the model in eval mode")
    if "spatial" in n.attrs and not int(n.attrs["spatial"]):
        problems.append("spatial=0 (per-element statistics); only per-channel "
                        "BatchNormalization is supported")
    extra = [o for o in n.node.output[1:] if o and o in n.consumed]
    if extra:
        problems.append(f"outputs {extra} (running statistics) are used; only the "
                        f"normalised output is supported")
    return problems


def _check_dropout(n: OnnxNode) -> list[str]:
    node = n.node
    if len(node.input) > 2 and node.input[2]:
        mode = n.constants.get(node.input[2])
        if mode is None or bool(onnx.numpy_helper.to_array(mode).reshape(())):
            return [f"training_mode input {node.input[2]!r} is "
                    f"{'not a constant' if mode is None else 'true'}; only inference Dropout "
                    f"(the identity) is supported"]
    return []


def _reduce_mean(graph: onnx.GraphProto, opset: int, axes: list[int], prefix: str, inp: str,
                 out: str) -> onnx.NodeProto:
    """ReduceMean over `axes` keeping dims, its axes an input from opset 18 on."""
    if opset < 18:
        return onnx.helper.make_node("ReduceMean", [inp], [out], axes=axes, keepdims=1)
    axes_name = f"{prefix}_axes"
    if not any(t.name == axes_name for t in graph.initializer):
        graph.initializer.append(numpy_helper.from_array(np.array(axes, dtype=np.int64),
                                                         axes_name))
    return onnx.helper.make_node("ReduceMean", [inp, axes_name], [out], keepdims=1)


def _expand_statistics(proto: onnx.ModelProto, source: str,
                       streamed: Mapping[str, np.ndarray]) -> int:
    """A LayerNormalization whose Mean or InvStdDev output is used (training graphs, onnx's
    node tests) keeps its Y and gets those outputs from ReduceMean, Sub, Mul, Add, Sqrt and
    Reciprocal nodes, as ONNX's function body defines them: TVM's converter leaves them
    unset. They become Reduce and element-wise layers; Y stays the one normalisation. Returns
    the number of nodes expanded."""
    graph = proto.graph
    consumed = {name for node in graph.node for name in node.input} | \
        {o.name for o in graph.output}
    targets = [n for n in graph.node if n.op_type == "LayerNormalization" and
               any(o and o in consumed for o in n.output[1:])]
    if not targets:
        return 0
    from paleozoic.frontend.prepare import static_shapes

    shapes = static_shapes(proto, streamed)
    opset = max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                default=17)
    nodes = list(graph.node)
    for node in targets:
        x = node.input[0]
        if x not in shapes:
            raise UnsupportedModelError(f"{source}: node {node.name or node.op_type!r} "
                                        f"(LayerNormalization): the rank of {x!r} is unknown, "
                                        f"so its Mean/InvStdDev axes are")
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        rank = len(shapes[x])
        axes = list(range(int(attrs.get("axis", -1)) % rank, rank))
        eps = float(attrs.get("epsilon", 1e-5))
        prefix = f"{node.output[0]}__stats"
        mean_name = node.output[1] if len(node.output) > 1 and node.output[1] else \
            f"{prefix}_mean"
        new: list[onnx.NodeProto] = []

        new.append(_reduce_mean(graph, opset, axes, prefix, x, mean_name))
        if len(node.output) > 2 and node.output[2] and node.output[2] in consumed:
            eps_name = f"{prefix}_eps"
            graph.initializer.append(numpy_helper.from_array(np.array(eps, np.float32),
                                                             eps_name))
            new += [onnx.helper.make_node("Sub", [x, mean_name], [f"{prefix}_dev"]),
                    onnx.helper.make_node("Mul", [f"{prefix}_dev", f"{prefix}_dev"],
                                          [f"{prefix}_sq"])]
            new.append(_reduce_mean(graph, opset, axes, prefix, f"{prefix}_sq",
                                    f"{prefix}_var"))
            new += [onnx.helper.make_node("Add", [f"{prefix}_var", eps_name],
                                          [f"{prefix}_var_eps"]),
                    onnx.helper.make_node("Sqrt", [f"{prefix}_var_eps"], [f"{prefix}_std"]),
                    onnx.helper.make_node("Reciprocal", [f"{prefix}_std"], [node.output[2]])]
        kept = onnx.NodeProto()
        kept.CopyFrom(node)
        del kept.output[1:]
        at = nodes.index(node)
        nodes[at:at + 1] = [kept, *new]
    del graph.node[:]
    graph.node.extend(nodes)
    logger.info("%s: %d LayerNormalization statistics expanded", source, len(targets))
    return len(targets)


onnx_ops({
    "LRN": OnnxOp("LRN", tvm_form=_lrn_odd_size, float64=_lrn_float64),
    "BatchNormalization": OnnxOp("BatchNorm + Scale", weights=(1, 2, 3, 4),
                                 check=_check_batchnorm),
    "Dropout": OnnxOp("(removed)", parameters=(1, 2), check=_check_dropout),
    "LayerNormalization": OnnxOp("LayerNorm", weights=(1, 2), rewrite=_expand_statistics),
    "InstanceNormalization": OnnxOp("LayerNorm + Scale", weights=(1, 2)),
    "GroupNormalization": OnnxOp("Reshape + LayerNorm + Reshape + Scale", weights=(1, 2)),
})


def _constant_affine(w: Walker, args: list[Value], what: str) -> tuple[Act, Const, Const]:
    """A normalisation's input and its scale and bias, which must be constants."""
    x = act_of(w, args[0])
    gamma, beta = args[1:3]
    if not isinstance(gamma, Const) or not isinstance(beta, Const):
        raise w.fail(f"{what}'s scale and bias must be constants")
    return x, gamma, beta


@converter("relax.nn.layer_norm")
def convert_layer_norm(w: Walker, call: Any, args: list[Value]) -> Value:
    x, gamma, beta = _constant_affine(w, args, "LayerNormalization")
    return layer_norm(w, x, [int(a) for a in call.attrs.axes], float(call.attrs.epsilon),
                      gamma.value, beta.value)


def layer_norm(w: Walker, x: Act, axes: list[int], epsilon: float,
               gamma: np.ndarray | float, beta: np.ndarray | float) -> Act:
    """A LayerNorm layer over `axes` (a trailing run) with gamma and beta broadcast to the
    normalised shape."""
    shape = w.tensors[x.name].shape
    rank = len(shape)
    axes = sorted(a % rank for a in axes)
    # ONNX normalises over axis..rank-1 (TVM lists those axes): one trailing run.
    if axes != list(range(axes[0], rank)):
        raise w.fail(f"layer_norm over axes {axes} of a {rank}-D input is not a trailing run "
                     f"of axes (ONNX LayerNormalization's axis..rank-1)")
    axis = axes[0]
    normalised = tuple(shape[axis:])
    count = int(np.prod(normalised))

    def full(value: np.ndarray | float, what: str) -> np.ndarray:
        value = np.asarray(value, dtype=np.float32)
        try:
            return np.ascontiguousarray(np.broadcast_to(value, normalised)).reshape(count)
        except ValueError:
            raise w.fail(f"LayerNormalization's {what} of shape {value.shape} does not "
                         f"broadcast to the normalised shape {normalised}") from None

    return w.emit("LayerNorm", [x], {"axis": axis, "epsilon": epsilon},
                  {"gamma": full(gamma, "scale"), "beta": full(beta, "bias")})


def _normalisation_form(decomposed: bool) -> Callable[[Dpl], dict[str, Any]]:
    """(x - mean(x)) / sqrt(var + eps), optionally * gamma + beta. `decomposed`: var is
    mean((x - mean(x)) ** 2), the square as d ** 2 or d * d (exporters that decompose
    LayerNormalization: paddle2onnx, PyTorch before opset 17); else variance(x), TVM's
    lowering of InstanceNormalization over the axes after the channel, before its
    per-channel scale and bias (PyTorch exports GroupNorm as Reshape to [N, G, -1], this
    with a unit scale and zero bias, Reshape back, Mul, Add)."""
    def form(dpl: Dpl) -> dict[str, Any]:
        p = {name: dpl.wildcard() for name in ("x", "two", "eps", "gamma", "beta")}
        p["mean"] = dpl.is_op("relax.mean")(p["x"])
        p["centred"] = dpl.is_op("relax.subtract")(p["x"], p["mean"])
        if decomposed:
            p["square"] = (dpl.is_op("relax.power")(p["centred"], p["two"])
                           | dpl.is_op("relax.multiply")(p["centred"], p["centred"]))
            p["var"] = dpl.is_op("relax.mean")(p["square"])
        else:
            p["var"] = dpl.is_op("relax.variance")(p["x"])
        p["var_eps"] = dpl.either("relax.add", p["var"], p["eps"])
        p["sqrt"] = dpl.is_op("relax.sqrt")(p["var_eps"])
        p["norm"] = dpl.is_op("relax.divide")(p["centred"], p["sqrt"])
        p["scaled"] = dpl.either("relax.multiply", p["norm"], p["gamma"])
        p["affine"] = dpl.either("relax.add", p["scaled"], p["beta"])
        return p
    return form


def _normalisation_reader(affine: bool, relax_eps: bool = False
                          ) -> Callable[[Forms, Found, VarOf], Read | None]:
    """The mean and the variance over one run of axes, kept; a square by 2; epsilon a
    scalar constant (`relax_eps`: also a Relax constant, as TVM writes
    InstanceNormalization's). The converters check the axes."""
    def read(forms: Forms, found: Found, var_of: VarOf) -> Read | None:
        mean, var = found[forms.mean].attrs, found[forms.var].attrs
        axes = ints(mean.axis or [])
        if not (mean.keepdims and var.keepdims and axes and axes == ints(var.axis or [])):
            return None
        if forms.two in found and not constants_are(forms, found, var_of, {"two": 2.0}):
            return None
        eps = forms.constant(var_of(found[forms.eps]))
        if eps is None and relax_eps:
            eps = constant_value(found[forms.eps])
        if eps is None or np.size(eps) != 1:
            return None
        operands = {"x": var_of(found[forms.x])}
        if affine:
            operands.update(gamma=var_of(found[forms.gamma]), beta=var_of(found[forms.beta]))
        return operands, {"axes": axes, "epsilon": float(np.asarray(eps).reshape(-1)[0])}
    return read


_LAYER_NORM_FORM = _normalisation_form(decomposed=True)
_INSTANCE_NORM_FORM = _normalisation_form(decomposed=False)


_LN_INNER = ("mean", "centred", "square", "var", "var_eps", "sqrt")


@pattern_converter("layer_norm_affine", form=_LAYER_NORM_FORM, root="affine",
                   inner=(*_LN_INNER, "norm", "scaled"), read=_normalisation_reader(affine=True))
@pattern_converter("layer_norm", form=_LAYER_NORM_FORM, root="norm", inner=_LN_INNER,
                   read=_normalisation_reader(affine=False))
def _layer_norm_pattern(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    """A decomposed LayerNorm (_normalisation_form), with its affine terms when the match has them;
    gamma and beta must then be constants that broadcast to the normalised shape."""
    x = act_of(w, operands["x"])
    gamma, beta = operands.get("gamma", Const(np.float32(1))), \
        operands.get("beta", Const(np.float32(0)))
    if not isinstance(gamma, Const) or not isinstance(beta, Const):
        raise w.fail("a decomposed LayerNorm's scale and bias must be constants")
    return layer_norm(w, x, match.attrs["axes"], match.attrs["epsilon"], gamma.value,
                      beta.value)


_IN_INNER = ("mean", "var", "var_eps", "sqrt", "centred")


@pattern_converter("instance_norm_affine", form=_INSTANCE_NORM_FORM, root="affine",
                   inner=(*_IN_INNER, "norm", "scaled"),
                   read=_normalisation_reader(affine=True, relax_eps=True))
@pattern_converter("instance_norm", form=_INSTANCE_NORM_FORM, root="norm", inner=_IN_INNER,
                   read=_normalisation_reader(affine=False, relax_eps=True))
def _instance_norm(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    """TVM's InstanceNormalization, normalised over every axis after the channel axis; its
    scale and bias a Scale layer unless they are 1 and 0 (PyTorch's GroupNorm export)."""
    x = act_of(w, operands["x"])
    rank = len(w.tensors[x.name].shape)
    if match.attrs["axes"] != list(range(2, rank)):
        raise w.fail(f"a mean and variance over axes {match.attrs['axes']} of a {rank}-D "
                     f"input; instance normalisation (axes 2..{rank - 1}) is supported")
    normed = layer_norm(w, x, match.attrs["axes"], match.attrs["epsilon"], np.float32(1),
                        np.float32(0))
    if "gamma" not in operands:
        return normed
    gamma, beta = operands["gamma"], operands["beta"]
    alpha = channel_vector(w, normed, gamma) if isinstance(gamma, Const) else None
    shift = channel_vector(w, normed, beta) if isinstance(beta, Const) else None
    if alpha is None or shift is None:
        raise w.fail("InstanceNormalization's scale and bias must be constants of one value "
                     "per channel")
    return _channel_affine(w, normed, alpha, shift)


def _channel_affine(w: Walker, x: Act, alpha: np.ndarray, shift: np.ndarray) -> Act:
    """A normalisation's per-channel scale and bias: a Scale layer, unless they are 1 and 0
    (PyTorch's GroupNorm export)."""
    if np.all(alpha == 1) and np.all(shift == 0):
        return x
    return w.emit("Scale", [x], {}, {"alpha": alpha, "beta": shift}, part="affine")


@converter("relax.nn.group_norm")
def convert_group_norm(w: Walker, call: Any, args: list[Value]) -> Value:
    x, gamma, beta = _constant_affine(w, args, "GroupNormalization")
    a = call.attrs
    shape = w.tensors[x.name].shape
    groups = int(a.num_groups)
    if int(a.channel_axis) != 1 or ints(a.axes) != list(range(2, len(shape))) or \
            len(shape) < 3:
        raise w.fail(f"group_norm over axes {ints(a.axes)} with channel axis "
                     f"{int(a.channel_axis)} of a {len(shape)}-D input; normalising an "
                     f"[N, C, ...] input over its axes after the channel is supported")
    n, channels = shape[:2]
    grouped = w.emit("Reshape", [x], {"shape": [n, groups, int(np.prod(shape[1:])) // groups]},
                     part="groups", main=False)
    normed = layer_norm(w, grouped, [2], float(a.epsilon), np.float32(1), np.float32(0))
    back = w.emit("Reshape", [normed], {"shape": list(shape)}, part="ungroup", main=False)
    # TVM lowers GroupNormalization-21 to group_norm without its affine terms (scale and
    # center false), then a Mul and an Add, which become a Scale of their own.
    alpha = np.broadcast_to(np.asarray(gamma.value, np.float32).reshape(-1), (channels,)) \
        if bool(a.scale) else np.ones(channels, np.float32)
    shift = np.broadcast_to(np.asarray(beta.value, np.float32).reshape(-1), (channels,)) \
        if bool(a.center) else np.zeros(channels, np.float32)
    return _channel_affine(w, back, alpha, shift)


@converter("relax.nn.batch_norm")
def convert_batch_norm(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    gamma, beta, mean, var = args[1:]
    if not all(isinstance(c, Const) for c in (gamma, beta, mean, var)):
        raise w.fail("batch_norm parameters must be constants")
    if int(call.attrs.axis) != 1:
        raise w.fail("batch_norm is supported on the channel axis (1) only")
    eps = float(call.attrs.epsilon)
    # The SDK's BatchNorm is (x - mean) * inv_std without affine terms: the paper's
    # weighted-BN substitution adds a Scale layer for gamma and beta.
    inv_std = 1.0 / np.sqrt(var.value.astype(np.float64) + eps)
    bn = w.emit("BatchNorm", [x], {"epsilon": eps},
                {"mean": mean.value, "inv_std": inv_std.astype(np.float32)})
    scale = w.emit("Scale", [bn], {}, {"alpha": gamma.value, "beta": beta.value},
                   part="scale")
    return Tup((scale, mean, var))


@converter("relax.nn.dropout")
def convert_dropout(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    return Tup((x, x))  # inference: dropout is the identity


@converter("relax.nn.avg_pool3d")
def convert_avg_pool3d(w: Walker, call: Any, args: list[Value]) -> Value:
    # Outside a match of TVM's LRN decomposition (_lrn_form): a 3-D pool, or a
    # hand-written LRN, which the SDK cannot run as such.
    raise w.fail("3-D average pooling is supported only as part of TVM's decomposition of "
                 "an ONNX LRN node, x / (bias + alpha * avg_pool3d(x * x)) ** beta with "
                 "constant alpha, bias and beta; this one is not (a hand-written LRN?): "
                 "use an LRN node")


def _lrn_form(dpl: Dpl) -> dict[str, Any]:
    """TVM's lowering of LRN: x / (bias + alpha * squeeze(avg_pool3d(expand_dims(x * x))))
    ** beta. `x` appears twice, and the pattern language requires both to be one value."""
    x = dpl.wildcard()
    p = {"x": x, "alpha": dpl.is_const(), "bias": dpl.is_const(), "beta": dpl.is_const()}
    p["square"] = dpl.is_op("relax.multiply")(x, x)
    p["expand"] = dpl.is_op("relax.expand_dims")(p["square"])
    p["window"] = dpl.is_op("relax.nn.avg_pool3d")(p["expand"])
    p["squeeze"] = dpl.is_op("relax.squeeze")(p["window"])
    p["scaled"] = dpl.is_op("relax.multiply")(p["squeeze"], p["alpha"])
    p["biased"] = dpl.is_op("relax.add")(p["scaled"], p["bias"])
    p["power"] = dpl.is_op("relax.power")(p["biased"], p["beta"])
    p["root"] = dpl.is_op("relax.divide")(x, p["power"])
    return p


def _read_lrn(forms: Forms, found: Found, var_of: VarOf) -> Read:
    window = found[forms.window].attrs
    size, rest = ints(window.pool_size)[0], ints(window.pool_size)[1:]
    half = size // 2
    geometry_ok = (
        rest == [1, 1] and ints(window.strides) == [1, 1, 1]
        and ints(window.dilation) == [1, 1, 1] and not window.ceil_mode
        and bool(window.count_include_pad) and size % 2 == 1
        and ints(window.padding) == [half, 0, 0, half, 0, 0]
        and ints(found[forms.expand].attrs.axis) == [1]
        and ints(found[forms.squeeze].attrs.axis or []) == [1])
    if not geometry_ok:
        raise PatternError(
            f"has the form of TVM's LRN decomposition but its channel window is not LRN's "
            f"(avg_pool3d pool_size {ints(window.pool_size)}, strides {ints(window.strides)}, "
            f"padding {ints(window.padding)}, count_include_pad {bool(window.count_include_pad)}"
            f"; LRN averages a centred, zero-padded window of channels): this TVM lowers LRN "
            f"unlike the one Paleozoic supports")
    attrs = {"size": size, **{name: scalar(found[getattr(forms, name)])
                              for name in ("alpha", "beta", "bias")}}
    return {"x": var_of(found[forms.x])}, attrs


@pattern_converter("lrn", form=_lrn_form, root="root",
                   inner=("square", "expand", "window", "squeeze", "scaled", "biased", "power"),
                   read=_read_lrn)
def convert_lrn(w: Walker, match: Match, operands: dict[str, Value]) -> Value:
    x = operands["x"]
    if not isinstance(x, Act):
        raise w.fail("LRN of a constant is not supported")
    attrs = dict(match.attrs)
    node = w.current_node
    if node is not None and node.op_type == "LRN":
        # TVM parsed the next odd size (_lrn_odd_size): the node that emitted this match
        # has the size.
        size = int(node.attrs["size"])
        if attrs["size"] != size + (1 - size % 2):
            raise w.fail(f"TVM's LRN window has size {attrs['size']}, the node's size is "
                         f"{size}")
        attrs["size"] = size
    return w.emit("LRN", [x], attrs)
