"""ONNX-level rewrites of the forms TVM's frontend or our converters cannot take, applied
after the shapes are fixed and the constants folded (prepare.py): zero pads folded into
their readers, Pad rewritten as slices and concats where the SDK cannot pad, Einsum as
MatMul, integer Pow exponents as floats, and Resize scales checked. (An operator's own
rewrite can also be its OnnxOp's `rewrite`, which the importer runs after these.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.graph_edit import replace_nodes
from paleozoic.frontend.prepare import static_shapes

logger = logging.getLogger(__name__)


def fold_pads(proto: onnx.ModelProto, source: str) -> int:
    """Removes Pads by nothing, and merges a constant zero Pad of H and W into the Conv (or
    the AveragePool that counts padding) that alone reads it, as TensorFlow and Paddle
    exports write "same" padding; returns how many were removed. Other Pads are left for
    the support check to refuse."""
    graph = proto.graph
    consts = {t.name: t for t in graph.initializer}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    removed: set[int] = set()
    for pad in graph.node:
        if pad.op_type != "Pad" or pad.output[0] in outputs:
            continue
        if _pads_all_zero(pad, consts):
            # Padding by nothing (Swin pads each stage up to a multiple of its window, which
            # is nothing at 224 x 224): the readers read the input itself.
            for reader in readers.get(pad.output[0], []):
                for k, name in enumerate(reader.input):
                    if name == pad.output[0]:
                        reader.input[k] = pad.input[0]
            removed.add(id(pad))
            continue
        after = readers.get(pad.output[0], [])
        amounts = _zero_pad_amounts(pad, consts)
        if amounts is None or len(after) != 1 or after[0].input[0] != pad.output[0]:
            continue
        target = after[0]
        attrs = {a.name: a for a in target.attribute}
        if target.op_type == "AveragePool" and not (
                "count_include_pad" in attrs and attrs["count_include_pad"].i == 1):
            continue
        if target.op_type not in ("Conv", "AveragePool") or (
                "auto_pad" in attrs and attrs["auto_pad"].s not in (b"", b"NOTSET")):
            continue
        top, left, bottom, right = amounts
        old = list(attrs["pads"].ints) if "pads" in attrs else [0, 0, 0, 0]
        if len(old) != 4:
            continue
        merged = [old[0] + top, old[1] + left, old[2] + bottom, old[3] + right]
        kept = [a for a in target.attribute if a.name != "pads"]
        del target.attribute[:]
        target.attribute.extend(kept + [onnx.helper.make_attribute("pads", merged)])
        target.input[0] = pad.input[0]
        removed.add(id(pad))
    if removed:
        nodes = [n for n in graph.node if id(n) not in removed]
        del graph.node[:]
        graph.node.extend(nodes)
        logger.info("%s: removed %d Pad node(s): padding by nothing, or merged into the "
                    "following Conv/AveragePool", source, len(removed))
    return len(removed)


def _pads_all_zero(pad: onnx.NodeProto, consts: dict[str, onnx.TensorProto]) -> bool:
    attrs = {a.name: a for a in pad.attribute}
    if "pads" in attrs:  # opset < 11
        return not any(attrs["pads"].ints)
    if len(pad.input) < 2 or pad.input[1] not in consts:
        return False
    return not numpy_helper.to_array(consts[pad.input[1]]).any()


def _zero_pad_amounts(pad: onnx.NodeProto,
                      consts: dict[str, onnx.TensorProto]) -> list[int] | None:
    """(top, left, bottom, right) of a constant-zero Pad over H and W of a 4-D tensor."""
    attrs = {a.name: a for a in pad.attribute}
    mode = attrs["mode"].s.decode() if "mode" in attrs else "constant"
    if mode != "constant":
        return None
    if "pads" in attrs:  # opset < 11
        pads = list(attrs["pads"].ints)
        value = attrs["value"].f if "value" in attrs else 0.0
    else:
        if len(pad.input) < 2 or pad.input[1] not in consts:
            return None
        pads = numpy_helper.to_array(consts[pad.input[1]]).astype(int).tolist()
        value = 0.0
        if len(pad.input) > 2 and pad.input[2]:
            if pad.input[2] not in consts:
                return None
            value = float(numpy_helper.to_array(consts[pad.input[2]]).reshape(()))
        if len(pad.input) > 3 and pad.input[3]:
            return None  # explicit axes: rare; not merged
    if value != 0.0 or len(pads) != 8 or any(pads[i] for i in (0, 1, 4, 5)) or min(pads) < 0:
        return None
    return [pads[2], pads[3], pads[6], pads[7]]


def check_resize_scales(proto: onnx.ModelProto, source: str,
                        streamed: Mapping[str, np.ndarray] | None = None) -> None:
    """Resize given `scales` maps coordinates with the scale itself, while the SDK's
    interpolation (and TVM's resize2d) maps them with output / input size: the two agree
    only when input * scale is a whole number, so anything else is refused by name."""
    resizes = [n for n in proto.graph.node if n.op_type == "Resize" and len(n.input) > 2
               and n.input[2]]
    if not resizes:
        return
    consts = {t.name: t for t in proto.graph.initializer}
    shapes = static_shapes(proto, streamed or {})
    problems = []
    for node in resizes:
        if node.input[2] not in consts or node.input[0] not in shapes:
            continue
        scales = numpy_helper.to_array(consts[node.input[2]]).astype(np.float64)
        if scales.size == 0:
            continue
        dims = np.array(shapes[node.input[0]], dtype=np.float64)
        if scales.shape != dims.shape:
            continue
        product = dims * scales
        if not np.allclose(product, np.round(product), rtol=0, atol=1e-6):
            problems.append(f"node {node.name!r} (Resize): scales {scales.tolist()} on input "
                            f"shape {shapes[node.input[0]]} give non-integer sizes "
                            f"{product.tolist()}; give `sizes` instead of `scales`")
    if problems:
        raise UnsupportedModelError(f"{source}: " + "; ".join(problems))


_INTEGER_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
                  onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
                  onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}


def float_pow_exponents(proto: onnx.ModelProto, source: str) -> int:
    """A Pow of a float32 base with an integer exponent gets the exponent as float32 (exact
    for |e| < 2^24, the exponents one writes): TVM refuses mixed operand types. A constant
    is converted; an integer graph input gets a Cast node (a host cast). Returns the number
    of exponents converted."""
    graph = proto.graph
    initializers = {t.name: t for t in graph.initializer}
    consumers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            consumers[name] = consumers.get(name, 0) + 1
    # The base: a node's output (float32 in a session) or a float32 graph input.
    other_inputs = {v.name for v in graph.input
                    if v.type.tensor_type.elem_type != onnx.TensorProto.FLOAT}
    integer_inputs = {v.name for v in graph.input
                      if v.type.tensor_type.elem_type in _INTEGER_TYPES} - set(initializers)
    casts: dict[str, onnx.NodeProto] = {}
    count = 0
    for node in graph.node:
        if node.op_type != "Pow" or len(node.input) < 2:
            continue
        base = initializers.get(node.input[0])
        if node.input[0] in integer_inputs or base is not None and \
                base.data_type in _INTEGER_TYPES:
            raise UnsupportedModelError(
                f"{source}: node {node.name or node.op_type!r} (Pow): the base "
                f"{node.input[0]!r} is an integer tensor; a session computes Pow on float32 "
                f"tensors only (an integer power needs integer arithmetic)")
        if base is not None or node.input[0] in other_inputs:
            continue
        tensor = initializers.get(node.input[1])
        if tensor is None and node.input[1] in integer_inputs:
            cast = f"{node.input[1]}__float"
            if cast not in casts:
                casts[cast] = onnx.helper.make_node("Cast", [node.input[1]], [cast],
                                                    name=cast, to=onnx.TensorProto.FLOAT)
            node.input[1] = cast
            count += 1
            continue
        if tensor is None or tensor.data_type not in _INTEGER_TYPES:
            continue
        # (an integer base is no float32 tensor of a session; the importer refuses it)
        value = numpy_helper.to_array(tensor).astype(np.float32)
        name = node.input[1] if consumers.get(node.input[1], 0) == 1 else \
            f"{node.input[1]}__float"
        converted = numpy_helper.from_array(value, name)
        if name == tensor.name:
            tensor.CopyFrom(converted)
        else:
            graph.initializer.append(converted)
            node.input[1] = name
        count += 1
    if casts:  # before every node: they read graph inputs only
        nodes = [*casts.values(), *graph.node]
        del graph.node[:]
        graph.node.extend(nodes)
    return count


def rewrite_einsum(proto: onnx.ModelProto, source: str) -> int:
    """Rewrites two-operand Einsums that are batched matrix products into Transpose,
    MatMul, Transpose (the attention forms exporters write, e.g. "bhqd,bhkd->bhqk"); returns
    how many. Each term's letters are the batch axes (in both operands and the output), one
    row axis of the first operand, one column axis of the second and one summed axis of
    both; any other equation is refused naming the node and the equation."""
    graph = proto.graph
    rewritten = 0
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.op_type != "Einsum":
            nodes.append(node)
            continue
        equation = next((a.s.decode() for a in node.attribute if a.name == "equation"), "")
        plan = _einsum_as_matmul(equation.replace(" ", ""), len(node.input))
        if isinstance(plan, str):
            raise UnsupportedModelError(
                f"{source}: node {node.name or node.output[0]!r} (Einsum {equation!r}): "
                f"{plan}; supported are two-operand batched matrix products (batch axes in "
                f"both operands and the output, one row, one column and one summed axis)")
        perm_a, perm_b, perm_out = plan
        base = node.name or node.output[0]
        a, b = node.input[0], node.input[1]
        if perm_a != sorted(perm_a):
            nodes.append(onnx.helper.make_node("Transpose", [a], [f"{base}/a_t"], perm=perm_a,
                                               name=f"{base}/a_t"))
            a = f"{base}/a_t"
        if perm_b != sorted(perm_b):
            nodes.append(onnx.helper.make_node("Transpose", [b], [f"{base}/b_t"], perm=perm_b,
                                               name=f"{base}/b_t"))
            b = f"{base}/b_t"
        product = node.output[0] if perm_out == sorted(perm_out) else f"{base}/matmul"
        nodes.append(onnx.helper.make_node("MatMul", [a, b], [product], name=base))
        if product != node.output[0]:
            nodes.append(onnx.helper.make_node("Transpose", [product], [node.output[0]],
                                               perm=perm_out, name=f"{base}/out_t"))
        rewritten += 1
    return replace_nodes(graph, nodes, rewritten, source, "rewrote %d Einsum node(s) into "
                          "MatMul and Transpose")


def _einsum_as_matmul(equation: str, operands: int) -> tuple[list[int], list[int],
                                                            list[int]] | str:
    """The permutations (first operand to [batch..., row, summed], second to [batch...,
    summed, column], the product [batch..., row, column] to the output) that make
    `equation` a MatMul, or why it is not one."""
    if operands != 2 or "->" not in equation or equation.count(",") != 1:
        return "not two operands with an explicit output"
    if "." in equation:
        return "an ellipsis"
    inputs, out = equation.split("->")
    ta, tb = inputs.split(",")
    if any(len(set(t)) != len(t) for t in (ta, tb, out)):
        return "a letter repeated within one term (a diagonal)"
    batch = [c for c in out if c in ta and c in tb]
    rows = [c for c in ta if c not in tb and c in out]
    cols = [c for c in tb if c not in ta and c in out]
    summed = [c for c in ta if c in tb and c not in out]
    alone = [c for c in ta + tb if c not in out and not (c in ta and c in tb)]
    if alone or any(c not in ta + tb for c in out):
        return "an axis summed within one operand, or an output axis of neither"
    if len(rows) != 1 or len(cols) != 1 or len(summed) != 1:
        return (f"{len(rows)} row, {len(cols)} column and {len(summed)} summed axes "
                f"(one of each is a matrix product)")
    order_a = batch + rows + summed
    order_b = batch + summed + cols
    product = batch + rows + cols
    return ([ta.index(c) for c in order_a], [tb.index(c) for c in order_b],
            [product.index(c) for c in out])


# Pieces a padded axis may take as single-element slices (reflect and edge modes).
_MAX_PAD_PIECES = 256


def rewrite_pads(proto: onnx.ModelProto, source: str,
                 streamed: Mapping[str, np.ndarray] | None = None) -> int:
    """Rewrites each Pad of a run-time tensor (constant, reflect or edge; constant pads) into
    what the SDK has, per padded axis: a Concat with constant blocks of the pad value
    (constant mode), or a Concat of single-element Slices (reflect: the elements mirrored
    about the edge, the edge itself not repeated; edge: the edge element repeated), and a
    Slice for negative pads (a crop); returns how many. A constant-zero Pad before a
    convolution or pooling is merged there first (fold_pads)."""
    graph = proto.graph
    consts = {t.name: t for t in graph.initializer}
    static = None
    nodes: list[onnx.NodeProto] = []
    rewritten = 0
    for node in graph.node:
        if node.op_type != "Pad" or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        where = f"{source}: node {node.name or node.output[0]!r} (Pad)"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        mode = attrs.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode not in ("constant", "reflect", "edge"):
            raise UnsupportedModelError(f"{where}: mode {mode!r}; supported are constant, "
                                        f"reflect and edge")
        if static is None:
            static = static_shapes(proto, streamed or {})
        shape = static.get(node.input[0])
        if shape is None:
            raise UnsupportedModelError(f"{where}: the input's shape is not static; give the "
                                        f"model's symbolic dimensions with --input-shape")

        def constant(index: int) -> np.ndarray | None:
            name = node.input[index] if len(node.input) > index else ""
            if not name:
                return None
            if name not in consts:
                raise UnsupportedModelError(f"{where}: input {index} ({name!r}) is computed at "
                                            f"run time; the pads must be constants")
            return numpy_helper.to_array(consts[name])

        rank = len(shape)
        pads = np.asarray(attrs["pads"] if "pads" in attrs else constant(1), dtype=np.int64)
        value = attrs.get("value", None)
        if value is None:
            given = constant(2)
            value = float(given.reshape(-1)[0]) if given is not None and given.size else 0.0
        axes = constant(3)
        axes = [int(a) % rank for a in axes.reshape(-1)] if axes is not None \
            else list(range(rank))
        before, after = [0] * rank, [0] * rank
        for i, axis in enumerate(axes):
            before[axis], after[axis] = int(pads[i]), int(pads[i + len(axes)])
        base = node.name or node.output[0]
        current, dims = node.input[0], list(shape)
        changed = [a for a in range(rank) if before[a] or after[a]]
        for axis in changed:
            out = node.output[0] if axis == changed[-1] else f"{base}/axis{axis}"
            current, dims[axis] = _pad_axis(nodes, graph, where, base, current, out, dims,
                                            axis, before[axis], after[axis], mode, value)
        if not changed:
            nodes.append(onnx.helper.make_node("Identity", [current], [node.output[0]],
                                               name=base))
        rewritten += 1
    return replace_nodes(graph, nodes, rewritten, source, "rewrote %d Pad node(s) into Slice "
                          "and Concat")


def _pad_axis(nodes: list[onnx.NodeProto], graph: onnx.GraphProto, where: str, base: str,
              x: str, out: str, dims: list[int], axis: int, lo: int, hi: int, mode: str,
              value: float) -> tuple[str, int]:
    """Nodes padding `x` on one axis by lo before and hi after; returns (output, new size)."""
    n = dims[axis]
    prefix = f"{base}/axis{axis}"

    def slice_of(begin: int, end: int, name: str) -> str:
        for suffix, values in (("starts", [begin]), ("ends", [end]), ("axes", [axis])):
            graph.initializer.append(numpy_helper.from_array(
                np.array(values, dtype=np.int64), f"{name}/{suffix}"))
        nodes.append(onnx.helper.make_node("Slice", [x, f"{name}/starts", f"{name}/ends",
                                                     f"{name}/axes"], [name], name=name))
        return name

    if lo < 0 or hi < 0:  # a crop first, then what is left to pad
        begin, end = max(-lo, 0), n - max(-hi, 0)
        if begin >= end:
            raise UnsupportedModelError(f"{where}: the pads crop axis {axis} of size {n} to "
                                        f"nothing")
        x = slice_of(begin, end, f"{prefix}/crop")
        n, lo, hi = end - begin, max(lo, 0), max(hi, 0)
        if not lo and not hi:
            nodes.append(onnx.helper.make_node("Identity", [x], [out], name=f"{prefix}/out"))
            return out, n
    if mode == "reflect" and (lo >= n or hi >= n):
        raise UnsupportedModelError(f"{where}: reflect pads {lo}, {hi} on axis {axis} of size "
                                    f"{n}; reflect needs pads below the size")
    if mode != "constant" and lo + hi > _MAX_PAD_PIECES:
        raise UnsupportedModelError(f"{where}: {mode} pads {lo} + {hi} on axis {axis}: the SDK "
                                    f"builds them from single-element slices, up to "
                                    f"{_MAX_PAD_PIECES}")
    if mode == "constant":
        pieces = []
        for side, width in (("before", lo), ("after", hi)):
            if width:
                block = list(dims)
                block[axis] = width
                name = f"{prefix}/{side}"
                graph.initializer.append(numpy_helper.from_array(
                    np.full(block, value, dtype=np.float32), name))
                pieces.append(name)
        pieces.insert(1 if lo else 0, x)
    else:
        if mode == "reflect":
            left = [lo - i for i in range(lo)]           # x[lo], ..., x[1]
            right = [n - 2 - i for i in range(hi)]       # x[n-2], ..., x[n-1-hi]
        else:
            left, right = [0] * lo, [n - 1] * hi
        cut = {i: slice_of(i, i + 1, f"{prefix}/at{i}") for i in sorted(set(left + right))}
        pieces = [cut[i] for i in left] + [x] + [cut[i] for i in right]
    nodes.append(onnx.helper.make_node("Concat", pieces, [out], axis=axis, name=f"{prefix}/pad"))
    return out, n + lo + hi
