"""Converters of layout operations: concat, reshapes, transpose, slicing, split."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Act, Const, Tup, Value
from paleozoic.frontend.convert.walker import Walker, act_of, const_ints, ints

onnx_ops({
    "Reshape": OnnxOp("Reshape"),
    "Flatten": OnnxOp("Reshape"),
    "Squeeze": OnnxOp("Reshape"),
    "Unsqueeze": OnnxOp("Reshape"),
    "Transpose": OnnxOp("Transpose"),
    "Concat": OnnxOp("Concat, ConcatConstant (with constant operands), or folded"),
    "Split": OnnxOp("Slice"),
    "Slice": OnnxOp("Slice"),
    "Pad": OnnxOp("Concat with constant blocks (constant mode) or of single-element Slices "
                  "(reflect, edge), and Slice for negative pads: rewritten before TVM"),
    "Gather": OnnxOp("Gather (an initializer table by integer indices: GatherV2, the "
                     "indices cast to int32 on the host), Slice (constant indices) or "
                     "HostGather (run-time data by run-time indices)"),
    "GatherND": OnnxOp("folded (constant data), or a reshape (constant indices that pick "
                       "every element in order, as the dynamo exporter writes around "
                       "HuggingFace's attention mask)", parameters=(1,)),
})


def gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int = 0) -> np.ndarray:
    """ONNX GatherND in numpy: the slices of `data` that the last axis of `indices` addresses
    (negative coordinates count from the end), per element of the first `batch_dims` axes."""
    data, indices = np.asarray(data), np.asarray(indices).astype(np.int64)
    b, depth = batch_dims, indices.shape[-1]
    if indices.shape[:b] != data.shape[:b] or b + depth > data.ndim:
        raise ValueError(f"GatherND of data {data.shape} by indices {indices.shape} with "
                         f"batch_dims {b}: the shapes do not fit")
    extents = np.array(data.shape[b:b + depth], np.int64)
    if ((indices < -extents) | (indices >= extents)).any():
        raise ValueError(f"GatherND indices outside the data's axes {tuple(extents)}")
    indices = np.where(indices < 0, indices + extents, indices)
    batches = int(np.prod(data.shape[:b], dtype=np.int64))
    flat_data = data.reshape((batches,) + data.shape[b:])
    flat_indices = indices.reshape(batches, -1, depth)
    picked = [flat_data[k][tuple(flat_indices[k].T)] for k in range(batches)]
    return np.stack(picked).reshape(indices.shape[:-1] + data.shape[b + depth:])


@converter("relax.take", held=True)
def convert_take(w: Walker, call: Any, args: list[Value]) -> Value:
    from paleozoic.frontend.convert.host import gather_indices

    data, indices = args
    if isinstance(data, Const):
        table = np.asarray(data.value)
        if table.dtype.kind != "f":
            raise w.fail(f"Gather of a {table.dtype} table: the device gathers float tables")
        axis = int(call.attrs.axis) % table.ndim if call.attrs.axis is not None else 0
        ids = gather_indices(w, indices, table.shape[axis])
        return w.emit("Gather", [ids], {"table_shape": list(table.shape), "axis": axis},
                      {"table": table})
    from paleozoic.frontend.convert.host import MaskOf, reshape_mask

    if isinstance(data, MaskOf) and isinstance(indices, Const):
        # A gather of every element in order (HuggingFace's mask: Flatten, then Gather by
        # arange) is a reshape; any other order on an integer tensor is not supported.
        order = np.asarray(indices.value).reshape(-1)
        rows = w.tensors[data.act.name].shape[0]
        if int(call.attrs.axis or 0) == 0 and np.array_equal(order, np.arange(rows)):
            return reshape_mask(w, data, list(w.current_shape))  # type: ignore[return-value]
        raise w.fail("Gather of a mask by indices other than 0, 1, 2, ... in order")
    x = act_of(w, data)
    if not isinstance(indices, Const):
        from paleozoic.frontend.convert.host import WrappedIndex

        if isinstance(indices, WrappedIndex):  # the host layer wraps negative indices itself
            indices = indices.act
        index = act_of(w, indices)
        if w.dtype(index) == "float32":
            raise w.fail("Gather's indices must be an integer tensor")
        rank = len(w.tensors[x.name].shape)
        axis = int(call.attrs.axis) % rank if call.attrs.axis is not None else 0
        return w.emit("HostGather", [x, index], {"axis": axis}, part="gather")
    shape = w.tensors[x.name].shape
    axis = int(call.attrs.axis) % len(shape) if call.attrs.axis is not None else 0
    picks = [int(i) % shape[axis] for i in np.asarray(indices.value).reshape(-1)]
    if picks == list(range(picks[0], picks[0] + len(picks))):
        out = slice_layer(w, x, [axis], [picks[0]], [picks[0] + len(picks)], [1])
    else:
        out = w.emit("Concat", [slice_layer(w, x, [axis], [i], [i + 1], [1]) for i in picks],
                     {"axis": axis}, part="concat")
    if w.tensors[out.name].shape != w.current_shape:
        out = w.emit("Reshape", [out], {"shape": list(w.current_shape)}, part="reshape")
    return out


@converter("relax.gather_nd", held=True)
def convert_gather_nd(w: Walker, call: Any, args: list[Value]) -> Value:
    """GatherND with constant indices: folded on constant data; on a run-time tensor, a
    reshape when the indices pick every element in order (anything else is refused)."""
    from paleozoic.frontend.convert.host import MaskOf, reshape_mask

    data, indices = args
    batch_dims = int(call.attrs.batch_dims)
    if not isinstance(indices, Const):
        raise w.fail("GatherND by run-time indices is not supported (constant indices only)")
    if isinstance(data, Const):
        return Const(gather_nd(data.value, indices.value, batch_dims))
    if isinstance(data, MaskOf):
        shape = data.shape or w.tensors[data.act.name].shape
    else:
        shape = w.tensors[act_of(w, data).name].shape
    size = int(np.prod(shape, dtype=np.int64))
    try:
        picks = gather_nd(np.arange(size).reshape(shape), indices.value, batch_dims)
    except ValueError as err:
        raise w.fail(str(err)) from None
    if not np.array_equal(picks.reshape(-1), np.arange(size)):
        raise w.fail("GatherND of a run-time tensor is supported when the constant indices "
                     "pick every element in order (a reshape)")
    target = list(w.current_shape)
    if isinstance(data, MaskOf):
        return reshape_mask(w, data, target)  # type: ignore[return-value]
    x = act_of(w, data)
    if w.dtype(x) != "float32":  # an integer tensor lives on the host: a host copy
        return w.emit("HostCast", [x], {"to": w.dtype(x), "shape": target}, part="reshape")
    return w.emit("Reshape", [x], {"shape": target}, part="reshape")


@converter("relax.concat")
def convert_concat(w: Walker, call: Any, args: list[Value]) -> Value:
    """Concat of activations (Concat), with constant operands (ConcatConstant, one layer per
    run of adjacent constants), or of constants only (folded)."""
    (items,) = args
    if not isinstance(items, Tup) or not all(isinstance(i, (Act, Const)) for i in items.items):
        raise w.fail("Concat is supported of activations and constants")
    values = list(items.items)
    if all(isinstance(v, Const) for v in values):
        rank = np.asarray(values[0].value).ndim
        return Const(np.concatenate([np.asarray(v.value) for v in values],
                                    axis=int(call.attrs.axis) % rank))
    rank = next(len(w.tensors[v.name].shape) for v in values if isinstance(v, Act))
    axis = int(call.attrs.axis) % rank
    pieces: list[Act | np.ndarray] = []
    for v in values:
        if isinstance(v, Act):
            pieces.append(v)
        elif pieces and isinstance(pieces[-1], np.ndarray):
            pieces[-1] = np.concatenate([pieces[-1], np.asarray(v.value)], axis=axis)
        else:
            pieces.append(np.asarray(v.value))
    acts: list[Act] = []
    pending: tuple[np.ndarray, int] | None = None
    for piece in pieces:
        if isinstance(piece, Act):
            acts.append(piece)
            continue
        if pending is not None:  # the SDK op takes one constant: chain a second layer
            acts = [_concat_constant(w, acts, axis, *pending)]
        pending = (piece, len(acts))
    if pending is not None:
        return _concat_constant(w, acts, axis, *pending)
    if len(acts) == 1:
        return acts[0]
    return w.emit("Concat", acts, {"axis": axis}, part="concat")


def _concat_constant(w: Walker, acts: list[Act], axis: int, constant: np.ndarray,
                     at: int) -> Act:
    if constant.dtype.kind != "f":
        raise w.fail(f"Concat with a {constant.dtype} constant: the device concatenates "
                     f"float tensors")
    return w.emit("ConcatConstant", acts, {"axis": axis, "constant_shape": list(constant.shape),
                                           "constant_at": at},
                  {"constant": constant}, part="concat")


@converter("relax.reshape", held=True)
@converter("relax.flatten", held=True)
@converter("relax.squeeze", held=True)
@converter("relax.expand_dims", held=True)
def convert_reshape_like(w: Walker, call: Any, args: list[Value]) -> Value:
    from paleozoic.frontend.convert.host import MaskOf, reshape_mask

    if isinstance(args[0], MaskOf):
        return reshape_mask(w, args[0], list(w.current_shape))  # type: ignore[return-value]
    x = act_of(w, args[0])
    if w.dtype(x) != "float32":  # an integer tensor lives on the host: a host copy
        return w.emit("HostCast", [x], {"to": w.dtype(x), "shape": list(w.current_shape)},
                      part="reshape")
    return w.emit("Reshape", [x], {"shape": list(w.current_shape)}, part="reshape")


@converter("relax.permute_dims")
def convert_permute_dims(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    rank = len(w.tensors[x.name].shape)
    axes = call.attrs.axes
    perm = list(reversed(range(rank))) if axes is None else [a % rank for a in ints(axes)]
    return w.emit("Transpose", [x], {"perm": perm}, part="transpose")


@converter("relax.broadcast_to", held=True)
def convert_broadcast_to(w: Walker, call: Any, args: list[Value]) -> Value:
    from paleozoic.frontend.convert.host import MaskOf, broadcast_mask

    if isinstance(args[0], MaskOf):
        return broadcast_mask(w, args[0])  # type: ignore[return-value]
    return expand(w, act_of(w, args[0]), tuple(w.current_shape))


def expand(w: Walker, x: Act, target: tuple[int, ...]) -> Act:
    """`x` broadcast (numpy) to `target`."""
    shape = tuple(w.tensors[x.name].shape)
    if shape == target:
        return x
    if len(shape) > len(target) or any(d not in (1, t) for d, t in zip(shape[::-1],
                                                                       target[::-1])):
        raise w.fail(f"Expand of {shape} to {target}: not a broadcast")
    full = (1,) * (len(target) - len(shape)) + shape
    axes = [a for a, (d, t) in enumerate(zip(full, target)) if d != t]
    if w.dtype(x) != "float32":
        # An integer tensor on the host: + 0 broadcast over the expanded axes.
        from paleozoic.frontend.convert.host import host_arith

        zeros = np.zeros([t if a in axes else 1 for a, t in enumerate(target)],
                         dtype=np.dtype(w.dtype(x)))
        return host_arith(w, "add", x, Const(zeros))
    copies = int(np.prod([target[a] for a in axes]))
    if copies > _MAX_EXPAND_COPIES:
        raise w.fail(f"Expand of an activation {shape} to {target} makes {copies} copies; "
                     f"the SDK broadcasts by concatenating copies, up to "
                     f"{_MAX_EXPAND_COPIES}")
    if full != shape:
        x = w.emit("Reshape", [x], {"shape": list(full)}, part="rank")
    # The SDK has no broadcast op of its own: copies concatenated along each expanded axis
    # (grouped-query attention's repeated key heads, a window mask over the windows).
    for axis in axes:
        x = w.emit("Concat", [x] * target[axis], {"axis": axis}, part=f"expand{axis}")
    return x


# Copies an Expand of an activation may make (concatenated): beyond, the copies cost more
# than the model's own work.
_MAX_EXPAND_COPIES = 256


def slice_layer(w: Walker, x: Act, axes: list[int], begin: list[int], end: list[int],
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
                  part="slice")


def _const_strided_slice(value: np.ndarray, axes: list[int], begin: list[int], end: list[int],
                         step: list[int] | None = None) -> np.ndarray:
    """numpy's slicing of a constant (TVM slices a constant shape tensor around GatherND)."""
    index = [slice(None)] * value.ndim
    for i, axis in enumerate(axes):
        index[axis % value.ndim] = slice(begin[i], end[i], step[i] if step else 1)
    return value[tuple(index)]


@converter("relax.strided_slice")
def convert_strided_slice(w: Walker, call: Any, args: list[Value]) -> Value:
    x = args[0]
    if isinstance(x, Const) and all(isinstance(a, (Const, Tup)) for a in args[1:]):
        return Const(_const_strided_slice(np.asarray(x.value), *(const_ints(a) for a in args[1:])))
    if not isinstance(x, Act) or not all(isinstance(a, (Const, Tup)) for a in args[1:]):
        raise w.fail("strided_slice is supported on an activation with constant bounds")
    axes, begin, end = (const_ints(a) for a in args[1:4])
    step = const_ints(args[4]) if len(args) > 4 else [1] * len(axes)
    return slice_layer(w, x, axes, begin, end, step)


@converter("relax.split")
def convert_split(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    shape = w.tensors[x.name].shape
    axis = int(call.attrs.axis) % len(shape)
    sections = call.attrs.indices_or_sections
    if isinstance(sections, int) or hasattr(sections, "value") and not hasattr(sections, "__len__"):
        count = int(getattr(sections, "value", sections))
        # ONNX (opset 18 num_outputs): chunks of ceil(dim / count), the last one smaller.
        chunk = -(-shape[axis] // count)
        bounds = [min(chunk * i, shape[axis]) for i in range(1, count)]
    else:
        bounds = ints(sections)
    edges = [0, *bounds, shape[axis]]
    typed = getattr(call, "ty", None) or getattr(call, "struct_info", None)
    if len(edges) == 2 and not hasattr(typed, "fields"):
        return x  # one piece, which TVM types as the tensor itself (torchvision's list(image))
    return Tup(tuple(slice_layer(w, x, [axis], [lo], [hi], [1]) for lo, hi in zip(edges, edges[1:])))
