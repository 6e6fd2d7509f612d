"""A float64 evaluation of an ONNX model: the truth that fp32 results are measured against.

onnxruntime is itself an fp32 implementation, so agreeing with it does not show that a
result is right where both lose precision the same way. Here the model is copied with every
float tensor widened to float64 (weights, inputs, Cast targets, constants) and run with
onnx's reference evaluator, which is numpy throughout; the few operators whose reference
implementations loop in Python (convolution, pooling) are replaced by vectorised numpy
versions in float64, so the zoo's networks evaluate in seconds, and those it gets wrong
(opset-9 BatchNormalization, pre-13 Softmax, and the operators the frontend's table
defines in float64: OnnxOp.float64) by correct ones. tests/accuracy/test_truth.py
checks the replacements, and every operator the frontend maps, against onnxruntime.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_batch_normalization import _batchnorm_training_mode
from onnx.reference.ops.op_max_pool import MaxPool

logger = logging.getLogger(__name__)

_FLOATS = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)


def _widen_tensor(tensor: onnx.TensorProto) -> onnx.TensorProto:
    if tensor.data_type not in _FLOATS:
        return tensor
    value = numpy_helper.to_array(tensor).astype(np.float64)
    return numpy_helper.from_array(value, tensor.name)


def _widen_value_info(value: onnx.ValueInfoProto) -> None:
    tensor_type = value.type.tensor_type
    if tensor_type.elem_type in _FLOATS:
        tensor_type.elem_type = TensorProto.DOUBLE


def _widen_graph(graph: onnx.GraphProto) -> None:
    for i, tensor in enumerate(graph.initializer):
        graph.initializer[i].CopyFrom(_widen_tensor(tensor))
    for value in (*graph.input, *graph.output, *graph.value_info):
        _widen_value_info(value)
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                attr.t.CopyFrom(_widen_tensor(attr.t))
            elif attr.type == onnx.AttributeProto.GRAPH:
                _widen_graph(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _widen_graph(sub)
            elif node.op_type == "Cast" and attr.name == "to" and attr.i in _FLOATS:
                attr.i = TensorProto.DOUBLE
            elif node.op_type == "GridSample" and attr.name == "mode":
                # The reference evaluator knows opset 20's names only (same computation).
                attr.s = _GRID_SAMPLE_MODES_20.get(attr.s, attr.s)


_GRID_SAMPLE_MODES_20 = {b"bilinear": b"linear", b"bicubic": b"cubic"}


_COERCING = ("Softmax", "LogSoftmax", "Hardmax")


def _coerce_to_2d(graph: onnx.GraphProto) -> None:
    """Before opset 13, Softmax, LogSoftmax and Hardmax flatten their input to 2-D at
    `axis` (default 1); the reference evaluator implements only the later per-axis form,
    so such nodes are spelt out as Flatten -> op(axis=1) -> Reshape back."""
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.op_type not in _COERCING or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        x, y = node.input[0], node.output[0]
        shape, flat, out2d = (f"{y}__pz64_{s}" for s in ("shape", "flat", "2d"))
        nodes += [
            onnx.helper.make_node("Shape", [x], [shape]),
            onnx.helper.make_node("Flatten", [x], [flat], axis=axis),
            onnx.helper.make_node(node.op_type, [flat], [out2d], axis=1),
            onnx.helper.make_node("Reshape", [out2d, shape], [y]),
        ]
    del graph.node[:]
    graph.node.extend(nodes)


def _opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def float64_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` computing in float64 wherever the original computes in a float
    type (weights must be loaded: external data is read by onnx.load)."""
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    _widen_graph(wide.graph)
    if _opset(wide) < 13:
        _coerce_to_2d(wide.graph)
    return wide


# ---- vectorised float64 kernels for the operators whose reference loops in Python ------

def _spatial_pads(x_shape: tuple[int, ...], kernel: list[int], strides: list[int],
                  dilations: list[int], pads: list[int] | None, auto_pad: str) -> list[int]:
    """Explicit [begin..., end...] pads, resolving auto_pad as the ONNX spec defines it."""
    nd = len(kernel)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for size, k, s, d in zip(x_shape[2:], kernel, strides, dilations):
            out = -(-size // s)
            total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
            small, large = total // 2, total - total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else large)
            ends.append(large if auto_pad == "SAME_UPPER" else small)
        return begins + ends
    if auto_pad == "VALID" or pads is None:
        return [0] * (2 * nd)
    return list(pads)


def _attr(op: OpRun, name: str, default: Any) -> Any:
    value = getattr(op, name, None)
    if value is None:
        return default
    if isinstance(value, bytes):
        return value.decode()
    return value


def _windows(xp: np.ndarray, kernel: list[int], strides: list[int], dilations: list[int]
             ) -> np.ndarray:
    """[N, C, out..., k...] view of the (already padded) input's sliding windows."""
    nd = len(kernel)
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    view = np.lib.stride_tricks.sliding_window_view(xp, spans, axis=tuple(range(2, 2 + nd)))
    index = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides) + \
        tuple(slice(None, None, d) for d in dilations)
    return view[index]


class Conv64(OpRun):
    op_domain = ""

    def _run(self, X, W, B=None, auto_pad=None, dilations=None, group=None,  # noqa: N803
             kernel_shape=None, pads=None, strides=None):
        nd = X.ndim - 2
        kernel = list(kernel_shape or W.shape[2:])
        dil = list(dilations or [1] * nd)
        st = list(strides or [1] * nd)
        auto = auto_pad.decode() if isinstance(auto_pad, bytes) else (auto_pad or "NOTSET")
        p = _spatial_pads(X.shape, kernel, st, dil, pads, auto)
        xp = np.pad(X, [(0, 0), (0, 0)] + list(zip(p[:nd], p[nd:])))
        win = _windows(xp, kernel, st, dil)               # [N, C, out..., k...]
        g = int(group or 1)
        n, c = X.shape[:2]
        out_sp = win.shape[2:2 + nd]
        co = W.shape[0]
        cg, cog = c // g, co // g
        k = cg * int(np.prod(kernel))
        # [G, N*out, Cg*k] @ [G, Cg*k, Cog]: one batched BLAS product per group.
        a = win.reshape((n, g, cg) + out_sp + tuple(kernel))
        a = np.moveaxis(a, 2, 2 + nd)                    # [N, G, out..., Cg, k...]
        a = np.moveaxis(a, 1, 0).reshape(g, n * int(np.prod(out_sp)), k)
        w = W.reshape(g, cog, k).transpose(0, 2, 1)
        y = np.matmul(a, w)                               # [G, N*out, Cog]
        y = y.reshape((g, n) + out_sp + (cog,))
        y = np.moveaxis(y, -1, 1)                         # [G, Cog, N, out...]
        y = np.moveaxis(y.reshape((co, n) + out_sp), 1, 0)
        if B is not None:
            y = y + B.reshape((1, co) + (1,) * nd)
        return (np.ascontiguousarray(y, dtype=X.dtype),)


def _pool(op: OpRun, X: np.ndarray, is_max: bool) -> np.ndarray:
    nd = X.ndim - 2
    kernel = list(op.kernel_shape)
    st = list(_attr(op, "strides", None) or [1] * nd)
    dil = list(_attr(op, "dilations", None) or [1] * nd)
    auto = _attr(op, "auto_pad", "NOTSET")
    p = _spatial_pads(X.shape, kernel, st, dil, _attr(op, "pads", None), auto)
    ceil = bool(_attr(op, "ceil_mode", 0))
    extra = []
    for i, (size, k, s, d) in enumerate(zip(X.shape[2:], kernel, st, dil)):
        span = (k - 1) * d + 1
        padded = size + p[i] + p[nd + i]
        if ceil:
            out = -(-(padded - span) // s) + 1
            # A window may not start inside the end padding (the spec's ceil rule).
            if (out - 1) * s >= size + p[i]:
                out -= 1
        else:
            out = (padded - span) // s + 1
        extra.append(max(0, (out - 1) * s + span - padded))
    widths = [(0, 0), (0, 0)] + [(p[i], p[nd + i] + extra[i]) for i in range(nd)]
    axes = tuple(range(2 + nd, 2 + 2 * nd))
    if is_max:
        xp = np.pad(X, widths, constant_values=-np.inf)
        return _windows(xp, kernel, st, dil).max(axis=axes)
    xp = np.pad(X, widths)
    sums = _windows(xp, kernel, st, dil).sum(axis=axes)
    inside = np.pad(np.ones((1, 1) + X.shape[2:]), widths)
    if _attr(op, "count_include_pad", 0):
        # Explicit pads count, the cells that ceil_mode adds past them do not.
        inside = np.pad(np.ones((1, 1) + X.shape[2:]),
                        [(0, 0), (0, 0)] + [(p[i], p[nd + i]) for i in range(nd)],
                        constant_values=1.0)
        inside = np.pad(inside, [(0, 0), (0, 0)] + [(0, e) for e in extra])
    counts = _windows(inside, kernel, st, dil).sum(axis=axes)
    return sums / counts


class MaxPool64(MaxPool):
    op_domain = ""

    def _run(self, X, auto_pad=None, ceil_mode=None, dilations=None,  # noqa: N803
             kernel_shape=None, pads=None, storage_order=None, strides=None):
        if len(self.onnx_node.output) > 1 and self.onnx_node.output[1]:
            # The Indices output needs the reference's own (looped, exact) kernel.
            return super()._run(X, auto_pad, ceil_mode, dilations, kernel_shape, pads,
                                storage_order, strides)
        return (_pool(self, X, True).astype(X.dtype),)


class AveragePool64(OpRun):
    op_domain = ""

    def _run(self, X, **_):  # noqa: N803
        return (_pool(self, X, False).astype(X.dtype),)


class BatchNormalization64(OpRun):
    """BatchNormalization by what the node asks for, not by its `momentum` attribute: the
    reference's opset-9 version (onnx 1.23) takes that attribute, which exporters write
    out of habit, as training mode and normalises with the batch's own statistics.
    Training mode is a `training_mode` of 1 (opset 14+) or running statistics asked for
    as outputs (before 14)."""

    op_domain = ""

    def _run(self, x, scale, bias, mean, var, epsilon=None, momentum=None,
             training_mode=None, spatial=None, is_test=None):  # noqa: ARG002
        eps = 1e-5 if epsilon is None else float(epsilon)
        outputs = len([o for o in self.onnx_node.output if o])
        if training_mode or outputs > 1:
            momentum = 0.9 if momentum is None else float(momentum)
            y, saved_mean, saved_var, running_mean, running_var = _batchnorm_training_mode(
                x, scale, bias, mean, var, momentum, eps)
            if training_mode is not None:   # opset 14+: Y, running mean, running var
                return (y, running_mean, running_var)[:outputs]
            return (y, running_mean, running_var, saved_mean, saved_var)[:outputs]
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * \
            scale.reshape(shape) + bias.reshape(shape)
        return (y.astype(x.dtype),)


class GlobalMaxPool64(OpRun):
    """The reference's GlobalMaxPool (onnx 1.23) reduces axes ndim - 2 and ndim - 1, the
    spatial axes of NCHW only: of an [N, C, L] input it takes the max over C and L."""

    op_domain = ""

    def _run(self, x):
        return (x.max(axis=tuple(range(2, x.ndim)), keepdims=True),)


class GroupNormalization64(OpRun):
    """onnx has no reference kernel for GroupNormalization, only its function body, which
    for opset 21 computes in the stash type (float32 by default) as E[x^2] - E[x]^2: no
    truth for inputs with a large mean. Here in float64, two passes. The scale and bias are
    per group (opset 18) or per channel (21), told apart by their length."""

    op_domain = ""

    def _run(self, x, scale, bias, epsilon=None, num_groups=None,  # noqa: ARG002
             stash_type=None):
        eps = 1e-5 if epsilon is None else float(epsilon)
        n, c = x.shape[:2]
        groups = int(num_groups)
        grouped = x.reshape(n, groups, -1)
        mean = grouped.mean(axis=-1, keepdims=True)
        var = np.square(grouped - mean).mean(axis=-1, keepdims=True)
        y = ((grouped - mean) / np.sqrt(var + eps)).reshape(x.shape)
        per_channel = (np.repeat(v.reshape(-1), c // groups) if v.size == groups != c
                       else v.reshape(-1) for v in (scale, bias))
        shape = (1, c) + (1,) * (x.ndim - 2)
        gamma, beta = (v.reshape(shape) for v in per_channel)
        return ((y * gamma + beta).astype(x.dtype),)


class GatherElements64(OpRun):
    """The reference's GatherElements goes through numpy.choose, which takes at most 64
    choices: a detection head gathering boxes among 768 anchors fails there."""

    op_domain = ""

    def _run(self, data, indices, axis=None):
        axis = int(axis or 0) % data.ndim
        indices = np.where(indices < 0, indices + data.shape[axis], indices)
        return (np.take_along_axis(data, indices.astype(np.int64), axis=axis),)


_FAST_OPS: dict[str, type[OpRun]] = {
    "Conv": Conv64, "MaxPool": MaxPool64, "AveragePool": AveragePool64,
    "BatchNormalization": BatchNormalization64, "GlobalMaxPool": GlobalMaxPool64,
    "GroupNormalization": GroupNormalization64, "GatherElements": GatherElements64,
}


class _Definition(OpRun):
    """An operator the frontend defines in float64 (OnnxOp.float64)."""

    definition: Any = None

    def _run(self, *inputs, **attributes):
        return type(self).definition(*inputs, **attributes)


def _replacements() -> dict[str, type[OpRun]]:
    """The operators run in place of the reference's: the vectorised ones above, and those
    the frontend's table defines in float64 because the reference gets them wrong."""
    from paleozoic.frontend.convert import ONNX_OPS

    defined = {op_type: type(f"{op_type}Definition", (_Definition,),
                             {"definition": staticmethod(entry.float64)})
               for op_type, entry in ONNX_OPS.items() if entry.float64 is not None}
    return {**_FAST_OPS, **defined}


class ReferenceUnavailable(Exception):
    """The model has something onnx's reference evaluator cannot run."""


class Float64Reference:
    """Runs `model` in float64. Inputs are given at the model's own types (float32 inputs
    are widened exactly); outputs come back as float64."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = float64_model(model)
        new_ops = [type(name, (cls,), {"op_domain": "", "__module__": __name__})
                   for name, cls in _replacements().items()]
        try:
            self._evaluator = ReferenceEvaluator(self.model, new_ops=new_ops)
        except Exception as err:  # the evaluator's failures have no common type
            raise ReferenceUnavailable(f"{type(err).__name__}: {err}") from err
        self.output_names = [o.name for o in self.model.graph.output]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        wide = {name: value.astype(np.float64) if np.issubdtype(value.dtype, np.floating)
                else value for name, value in feeds.items()}
        # Saturating Sigmoid inputs overflow exp() in the branch np.where discards.
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                outputs = self._evaluator.run(None, wide)
            except Exception as err:  # the evaluator's failures have no common type
                raise ReferenceUnavailable(f"{type(err).__name__}: {err}") from err
        return [np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f"
                else np.asarray(v) for v in outputs]
