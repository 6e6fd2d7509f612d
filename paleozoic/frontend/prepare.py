"""ONNX-level preparation before TVM sees the graph: fix the input shapes, then fold every
subgraph that is constant once they are fixed.

Exporters compute reshape targets at run time (Shape -> Gather -> Unsqueeze -> Concat ->
Reshape; PyTorch's flatten and chunk, paddle2onnx's every reshape) and wrap constants in
Cast, Range or ConstantOfShape chains. TVM's frontend cannot lower a reshape whose target
is such a tensor, and the SDK has no shape arithmetic either: with static input shapes
all of it is constant, so it is evaluated here, node by node, with onnx's reference
evaluator, and replaced by initializers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.control_flow import inline_constant_ifs, unroll_constant_loops
from paleozoic.frontend.graph_edit import inputs_with_captures, replace_nodes

logger = logging.getLogger(__name__)

# Results larger than this stay nodes. Everything folded is a constant, so the bound is
# only against memory: it admits weights generated in the graph (ConstantOfShape fills of
# VGG-19's 102M-element fully-connected weight in onnx's light models).
_FOLD_MAX_ELEMENTS = 1 << 27
_FOLD_STREAMED_MAX_ELEMENTS = 1 << 22
# Each pass re-runs shape inference; Swin-T (legacy exporter) folds in 16.
_FOLD_MAX_PASSES = 64

# Operators never folded even with constant inputs.
_NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
               "Multinomial", "Bernoulli", "Dropout", "If", "Loop", "Scan"}


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """'NAME=1x3x224x224' (or 'NAME=1,3,224,224') -> ('NAME', (1, 3, 224, 224))."""
    name, sep, dims = text.rpartition("=")
    if not sep or not name:
        raise ValueError(f"--input-shape {text!r}: expected NAME=DxDxD, e.g. input=1x3x224x224")
    try:
        shape = tuple(int(d) for d in dims.replace(",", "x").split("x"))
    except ValueError:
        raise ValueError(f"--input-shape {text!r}: dimensions must be integers, e.g. "
                         f"{name}=1x3x224x224") from None
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"--input-shape {text!r}: dimensions must be positive")
    return name, shape


def parse_value(text: str) -> tuple[str, np.ndarray]:
    """'NAME=16000' or 'NAME=1,2,3' -> ('NAME', the numbers as float64; the input's type
    is applied when the value is bound)."""
    name, sep, values = text.rpartition("=")
    if not sep or not name:
        raise ValueError(f"--input-value {text!r}: expected NAME=VALUE[,VALUE...], e.g. "
                         f"sr=16000")
    try:
        numbers = np.array([float(v) for v in values.split(",")], dtype=np.float64)
    except ValueError:
        raise ValueError(f"--input-value {text!r}: values must be numbers") from None
    return name, numbers


def bind_input_values(proto: onnx.ModelProto, source: str,
                      values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Makes the named graph inputs constants of the given values, in the inputs' types and
    declared shapes (a 0-d sample rate, a flag); what then depends on them only (an If on
    the sample rate) folds away. Returns the bound values."""
    inputs = {v.name: v for v in data_inputs(proto)}
    bound = {}
    for name, value in values.items():
        info = inputs.get(name)
        if info is None:
            raise UnsupportedModelError(f"{source}: --input-value {name}: no such input; the "
                                        f"inputs are {sorted(inputs)}")
        tensor_type = info.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                for d in tensor_type.shape.dim]
        array = np.asarray(value)
        if None not in dims:
            if int(np.prod(dims, dtype=np.int64)) != array.size:
                raise UnsupportedModelError(
                    f"{source}: --input-value {name}: {array.size} value(s) for an input of "
                    f"shape {dims}")
            array = array.reshape(dims)
        cast = array.astype(dtype)
        if not np.array_equal(cast.astype(np.float64), array.astype(np.float64)):
            raise UnsupportedModelError(f"{source}: --input-value {name}: {array.tolist()} is "
                                        f"not exactly a {dtype} value")
        proto.graph.initializer.append(numpy_helper.from_array(cast, name))
        bound[name] = cast
    if bound:  # no longer inputs: constants
        kept = [v for v in proto.graph.input if v.name not in bound]
        del proto.graph.input[:]
        proto.graph.input.extend(kept)
    return bound


def data_inputs(proto: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    init = {t.name for t in proto.graph.initializer}
    return [v for v in proto.graph.input if v.name not in init]


def free_nonpositive_dims(proto: onnx.ModelProto) -> None:
    """Older paddle2onnx (and some TensorFlow converters) write `dim_value: -1` or 0 for a
    free dimension; onnx means that by leaving the value unset, so such dims are cleared
    (in place) and then count as symbolic."""
    graph = proto.graph
    for value in (*graph.input, *graph.output, *graph.value_info):
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value <= 0:
                dim.Clear()


def fix_input_shapes(proto: onnx.ModelProto, source: str,
                     shapes: Mapping[str, tuple[int, ...]] | None = None,
                     batch: int | None = None) -> dict[str, tuple[int, ...]]:
    """Writes static shapes into the graph's data inputs (in place) and returns them. A
    symbolic dimension takes its value from `shapes` (by input name) or, for the first
    axis, from `batch`; one left unresolved is an error naming the input and its dims."""
    shapes = dict(shapes or {})
    free_nonpositive_dims(proto)
    inputs = data_inputs(proto)
    unknown = sorted(set(shapes) - {v.name for v in inputs})
    if unknown:
        raise UnsupportedModelError(
            f"{source}: --input-shape names {unknown}, which are not inputs of the model; "
            f"its inputs are {[v.name for v in inputs]}")
    if batch is not None and batch < 1:
        raise UnsupportedModelError(f"{source}: --batch must be at least 1, got {batch}")
    result: dict[str, tuple[int, ...]] = {}
    batched = False  # --batch given a symbolic first axis
    for value in inputs:
        dims = value.type.tensor_type.shape.dim
        declared = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in dims]
        if value.name in shapes:
            given = shapes[value.name]
            clash = [(i, want, got) for i, (want, got) in enumerate(zip(declared, given))
                     if isinstance(want, int) and want != got]
            if len(given) != len(declared) or clash:
                raise UnsupportedModelError(
                    f"{source}: --input-shape {value.name}={'x'.join(map(str, given))} does "
                    f"not fit the input's declared shape {declared}")
            static = list(given)
        else:
            static = list(declared)
            if batch is not None and static and not isinstance(static[0], int):
                static[0] = batch
                batched = True
            symbolic = [d for d in static if not isinstance(d, int)]
            if symbolic:
                example = "x".join(str(d) if isinstance(d, int) else "N" for d in static)
                raise UnsupportedModelError(
                    f"{source}: input {value.name!r} has symbolic dimensions {symbolic} "
                    f"(shape {declared}); give them with --input-shape "
                    f"{value.name}={example}" + (" or --batch N" if len(symbolic) == 1
                                                  and static[0] in symbolic else ""))
        for dim, size in zip(dims, static):
            dim.Clear()
            dim.dim_value = int(size)
        result[value.name] = tuple(int(d) for d in static)
    fixed = [(name, shape) for name, shape in result.items()
             if name not in shapes and shape and shape[0] != batch]
    if batch is not None and not batched and fixed:
        # Silently running another batch than the one asked for would be a wrong answer.
        name, shape = fixed[0]
        raise UnsupportedModelError(
            f"{source}: --batch {batch}: input {name!r} has a fixed first axis of {shape[0]} "
            f"(shape {list(shape)}), not a symbolic batch; re-export the model with a dynamic "
            f"batch axis (torch.onnx.export(..., dynamic_axes={{{name!r}: {{0: 'N'}}}}))")
    return result


def fold_constants(proto: onnx.ModelProto, source: str,
                   streamed: Mapping[str, np.ndarray] | None = None) -> int:
    """Evaluates, in place, every node whose inputs are constant once input shapes are
    static; returns how many nodes were folded. `streamed` weights (data not in the proto)
    larger than _FOLD_STREAMED_MAX_ELEMENTS are never folded through: they reach the
    walker as weights.

    Passes repeat until one folds nothing: a folded shape computation (a Pad's pads, a
    Reshape's target) lets shape inference give the static shapes after it, whose Shape
    nodes the next pass folds (Swin's window padding is such a chain, several deep)."""
    total = 0
    for _ in range(_FOLD_MAX_PASSES):
        folded = _fold_pass(proto, source, streamed or {}) + \
            inline_constant_ifs(proto, source) + unroll_constant_loops(proto, source)
        total += folded
        if not folded:
            break
    return total


def _fold_pass(proto: onnx.ModelProto, source: str, streamed: Mapping[str, np.ndarray]) -> int:
    from onnx.reference import ReferenceEvaluator

    graph = proto.graph
    known: dict[str, np.ndarray] = {
        t.name: numpy_helper.to_array(t) for t in graph.initializer
        if t.name not in streamed and t.data_location != onnx.TensorProto.EXTERNAL}
    # Streamed constants up to 16 MB are folded through (Swin's attention-mask tables built
    # by ScatterND, the gate reordering the dynamo exporter writes as Slice + Concat of a
    # recurrent node's weights); larger ones are weights, kept as they are.
    known.update((name, value) for name, value in streamed.items()
                 if value.size <= _FOLD_STREAMED_MAX_ELEMENTS)
    static = _static_shapes(proto, streamed)
    kept: list[onnx.NodeProto] = []
    folded = 0
    opset = max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                default=13)
    for node in graph.node:
        values = _fold_node(node, known, static, opset, ReferenceEvaluator)
        if values is None:
            kept.append(node)
            continue
        folded += 1
        known.update(zip(node.output, values))
    if not folded:
        return 0
    used = {name for node in kept for name in inputs_with_captures(node)}
    used |= {o.name for o in graph.output}
    present = {t.name for t in graph.initializer}
    # np.asarray, not np.ascontiguousarray: the latter makes a scalar 1-D, and a Gather
    # index or an Unsqueeze input that gains a dimension changes every shape after it.
    new_inits = [numpy_helper.from_array(np.asarray(known[name], order="C"), name)
                 for name in sorted(used) if name in known and name not in present]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(new_inits)
    logger.info("%s: folded %d constant node(s) into %d initializer(s)", source, folded,
                len(new_inits))
    return folded


def _fold_node(node: onnx.NodeProto, known: dict[str, np.ndarray],
               static: dict[str, tuple[int, ...]], opset: int,
               evaluator: type) -> list[np.ndarray] | None:
    if node.domain not in ("", "ai.onnx") or node.op_type in _NOT_FOLDED:
        return None
    if node.op_type == "Constant":
        return [numpy_helper.to_array(_constant_tensor(node))]
    if node.op_type in ("Shape", "Size") and node.input[0] in static:
        shape = np.array(static[node.input[0]], dtype=np.int64)
        if node.op_type == "Size":
            return [np.array(np.prod(shape), dtype=np.int64)]
        attrs = {a.name: a.i for a in node.attribute}
        return [shape[attrs.get("start", 0):attrs.get("end", len(shape))]]
    inputs = [name for name in node.input if name]
    if not inputs or not all(name in known for name in inputs):
        return None
    if node.op_type in _NUMPY_FOLDS:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        return [_NUMPY_FOLDS[node.op_type](*(known[name] for name in inputs), **attrs)]
    model = onnx.helper.make_model(
        onnx.helper.make_graph(
            [node], "fold",
            [onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(
                known[name].dtype), known[name].shape) for name in dict.fromkeys(inputs)],
            [onnx.helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None)
             for name in node.output if name]),
        opset_imports=[onnx.helper.make_opsetid("", opset)])
    try:
        results = evaluator(model).run(None, {name: known[name] for name in inputs})
    except Exception as err:  # noqa: BLE001  (leave the node to the frontend's checks)
        logger.debug("not folding %s (%s): %s", node.name, node.op_type, err)
        return None
    if any(np.asarray(r).size > _FOLD_MAX_ELEMENTS for r in results):
        return None
    return [np.asarray(r) for r in results]


def _gather_elements(data: np.ndarray, indices: np.ndarray, axis: int = 0) -> np.ndarray:
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return np.take_along_axis(data, indices, axis=axis)


# Operators whose onnx.reference kernel is wrong for cases exporters write: onnx 1.x's
# GatherElements fails when the index is shorter than the data along the other axes
# (HuggingFace BERT gathers its [1, 512] token-type buffer by [1, seq] position ids).
_NUMPY_FOLDS = {"GatherElements": _gather_elements}


def _constant_tensor(node: onnx.NodeProto) -> onnx.TensorProto:
    attr = node.attribute[0]
    if attr.name == "value":
        return attr.t
    kinds = {"value_float": (onnx.TensorProto.FLOAT, [attr.f]),
             "value_floats": (onnx.TensorProto.FLOAT, list(attr.floats)),
             "value_int": (onnx.TensorProto.INT64, [attr.i]),
             "value_ints": (onnx.TensorProto.INT64, list(attr.ints))}
    if attr.name not in kinds:
        raise UnsupportedModelError(f"Constant node {node.name!r}: attribute {attr.name} is "
                                    f"not supported")
    dtype, values = kinds[attr.name]
    dims = [] if attr.name in ("value_float", "value_int") else [len(values)]
    return onnx.helper.make_tensor(node.output[0], dtype, dims, values)


def _static_shapes(proto: onnx.ModelProto,
                   streamed: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    """Every tensor whose shape onnx's shape inference can give statically. Streamed
    weights (no data in the proto) are declared as typed inputs for it."""
    from paleozoic.frontend.loader import as_inputs

    try:
        inferred = onnx.shape_inference.infer_shapes(as_inputs(proto, streamed),
                                                     data_prop=True)
    except Exception as err:  # noqa: BLE001  (shape inference is a help, not a must)
        logger.debug("shape inference failed: %s", err)
        return {}
    shapes: dict[str, tuple[int, ...]] = {}
    graph = inferred.graph
    for value in list(graph.input) + list(graph.value_info) + list(graph.output):
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue
        dims = tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = tuple(int(d.dim_value) for d in dims)
    for tensor in graph.initializer:
        shapes[tensor.name] = tuple(int(d) for d in tensor.dims)
    return shapes


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
    shapes = _static_shapes(proto, streamed or {})
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


def expand_layer_norm_statistics(proto: onnx.ModelProto, source: str,
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
    shapes = _static_shapes(proto, streamed)
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
            static = _static_shapes(proto, streamed or {})
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
