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
from paleozoic.frontend.graph_edit import inputs_with_captures

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
    static = static_shapes(proto, streamed)
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


def static_shapes(proto: onnx.ModelProto,
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
