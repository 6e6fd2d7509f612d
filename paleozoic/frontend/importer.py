"""ONNX -> LayerQueue: check the model, parse it with TVM's Relax frontend, walk the
bindings (paleozoic.frontend.convert), and return the queue in topological order."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.attribute_checks import check_attributes
from paleozoic.frontend.convert.host import MaskOf, bool_output
from paleozoic.frontend.convert.walker import MAX_RANK, SCALAR_SHAPE
from paleozoic.frontend.loader import load_onnx
from paleozoic.frontend.beside_tvm import cut_nodes, splice, stand_in_names
from paleozoic.frontend.convert import (
    CONST_EVAL, CONVERTERS, ONNX_OPS, PATTERNS, TAKES_HELD, TIR_CONVERTERS, Absorbed, Act,
    Const, Deferred,
    Match, Tup, Walker, binding_owners, clean_identifier, find_matches, tensor_bindings,
)
from paleozoic.frontend.control_flow import split_runtime_ifs
from paleozoic.frontend.onnx_rewrites import (
    check_resize_scales, float_pow_exponents, fold_pads, rewrite_einsum, rewrite_pads,
)
from paleozoic.frontend.prepare import bind_input_values, fix_input_shapes, fold_constants
from paleozoic.frontend.subgraph import select_outputs
from paleozoic.frontend.support import check_supported
from paleozoic.frontend.weight_stream import STREAM_MIN_ELEMENTS
from paleozoic.ir import LayerQueue, TensorInfo
from paleozoic.ops import ShapeError

logger = logging.getLogger(__name__)


# The graph input types a session takes, as TensorInfo.dtype spells them.
_INPUT_TYPES = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.INT64: "int64",
                onnx.TensorProto.INT32: "int32", onnx.TensorProto.UINT8: "uint8",
                # A bool tensor is uint8 0s and 1s on the host (host.MaskOf).
                onnx.TensorProto.BOOL: "uint8"}


def _constant_value(walker: Walker, var: Any) -> np.ndarray | None:
    value = walker.env.get(var)
    return np.asarray(value.value) if isinstance(value, Const) else None


@dataclass
class _Import:
    """What the steps of one import share: the model as it is rewritten, then parsed and
    walked, and what each step leaves for the later ones."""

    model: str | Path | onnx.ModelProto
    input_shapes: Mapping[str, tuple[int, ...]] | None
    batch: int | None
    input_values: Mapping[str, np.ndarray] | None
    outputs: Sequence[str] | None
    source: str = ""
    proto: onnx.ModelProto = field(default_factory=onnx.ModelProto)
    weights: dict[str, np.ndarray] = field(default_factory=dict)  # streamed initializers
    bound: dict[str, np.ndarray] = field(default_factory=dict)    # inputs made constants
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    selects: dict[str, str] = field(default_factory=dict)         # run-time Ifs' selects
    data_inputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    input_dtypes: dict[str, str] = field(default_factory=dict)
    onnx_output_names: list[str] = field(default_factory=list)
    cuts: list[Any] = field(default_factory=list)       # nodes converted beside TVM
    stand_ins: dict[str, str] = field(default_factory=dict)
    renames: dict[str, str] = field(default_factory=dict)
    func: Any = None                                               # TVM's Relax main
    renamed: dict[str, str] = field(default_factory=dict)
    produced: Any = None
    walker: Walker | None = None
    inputs: list[TensorInfo] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    onnx_vars: Any = None
    queue: LayerQueue | None = None


def _load(state: _Import) -> None:
    loaded = load_onnx(state.model)
    state.proto, state.source, state.weights = loaded.proto, loaded.source, loaded.weights
    if isinstance(state.model, onnx.ModelProto):  # the caller's proto is not ours to rewrite
        state.proto = onnx.ModelProto()
        state.proto.CopyFrom(state.model)


def _rewrite_onnx(state: _Import) -> None:
    """The ONNX-level rewrites that come before TVM sees the graph: outputs selected, inputs
    bound or their shapes fixed, constants folded (again inside each run-time If's branches
    once split), and the forms TVM's frontend or our converters cannot take rewritten."""
    proto, source, weights = state.proto, state.source, state.weights
    if state.outputs:
        select_outputs(proto, source, state.outputs)
    state.bound = bind_input_values(proto, source, state.input_values or {})
    state.shapes = fix_input_shapes(proto, source, state.input_shapes, state.batch)
    fold_constants(proto, source, weights)
    while split := split_runtime_ifs(proto, source):  # then the branches' constant work
        state.selects.update(split)
        fold_constants(proto, source, weights)
    fold_pads(proto, source)
    rewrite_pads(proto, source, weights)
    rewrite_einsum(proto, source)
    float_pow_exponents(proto, source)
    check_resize_scales(proto, source, weights)
    for entry in ONNX_OPS.values():
        if entry.rewrite is not None:
            entry.rewrite(proto, source, weights)


def _check(state: _Import) -> None:
    proto, source = state.proto, state.source
    constant_outputs = [o.name for o in proto.graph.output
                        if o.name in {t.name for t in proto.graph.initializer}]
    if constant_outputs:
        raise UnsupportedModelError(
            f"{source}: graph output(s) {constant_outputs} are constants (they do not depend "
            f"on the inputs); a session computes outputs from its inputs only")
    check_supported(proto, source)
    check_attributes(proto, source)


def _graph_inputs(state: _Import) -> None:
    """The data inputs' types and shapes as a session takes them."""
    source, shapes = state.source, state.shapes
    init_names = {t.name for t in state.proto.graph.initializer}
    state.data_inputs = [v for v in state.proto.graph.input if v.name not in init_names]
    for value in state.data_inputs:
        elem = value.type.tensor_type.elem_type
        dtype = _INPUT_TYPES.get(elem)
        if dtype is None:
            raise UnsupportedModelError(
                f"{source}: input {value.name!r} is "
                f"{onnx.TensorProto.DataType.Name(elem).lower()}; inputs must be float32, or "
                f"int64, int32, uint8 or bool (token ids, masks, images), which host layers "
                f"read")
        state.input_dtypes[value.name] = dtype
        if value.name in shapes and len(shapes[value.name]) > MAX_RANK:
            raise UnsupportedModelError(
                f"{source}: input {value.name!r} has {len(shapes[value.name])} axes "
                f"{shapes[value.name]}; the SDK's tensors have at most {MAX_RANK}")
        if value.name in shapes and not shapes[value.name]:
            # The SDK's tensors have an axis: a 0-d input is a one-element [1] tensor (same
            # bytes in the session's input file; broadcasting gives the same results).
            shapes[value.name] = SCALAR_SHAPE
    state.onnx_output_names = [o.name for o in state.proto.graph.output]


def _cut_beside_tvm(state: _Import) -> None:
    # Operators TVM has no converter for: cut out here, their layers spliced in after the walk.
    state.cuts = cut_nodes(state.proto, state.source, state.weights)


def _parse(state: _Import) -> None:
    """TVM's Relax ONNX frontend parses the graph (its weights left out: the walker reads the
    ONNX initializers)."""
    try:
        light, state.renamed = _without_large_weights(state.proto)
        mod, state.produced = _parse_with_tvm(light)
        del light
    except Exception as err:  # TVM raises many types; name the model and the cause
        raise UnsupportedModelError(f"{state.source}: TVM's ONNX frontend failed: "
                                    f"{type(err).__name__}: {err}") from None
    func = mod["main"]
    # from_onnx keeps its own copy of every initializer in the function's "params"
    # attribute; the walker reads the ONNX initializers, so drop TVM's copy now.
    if func.attrs is not None and "params" in func.attrs:
        func = func.without_attr("params")
    state.func = func


def _bind_parameters(state: _Import) -> None:
    """The Relax function's parameters as inputs, stand-ins of cut nodes and constants, matched
    by name: TVM keeps graph.input order (weights may come before the data input in IR-3
    models), so positions are not reliable."""
    source = state.source
    walker = state.walker = Walker(source)
    by_name = {v.name: v for v in state.data_inputs}
    initializers = {t.name: t for t in state.proto.graph.initializer}
    stand_in_onnx = stand_in_names(state.cuts)
    converted: dict[str, np.ndarray] = {}
    for var in state.func.params:
        name = state.renamed.get(str(var.name), str(var.name))
        if name in by_name:
            ident = walker.unique(clean_identifier(name))
            info = TensorInfo(ident, state.shapes[name], state.input_dtypes[name])
            state.inputs.append(info)
            walker.tensors[ident] = info
            walker.env[var] = MaskOf(Act(ident), zero_one=True) \
                if by_name[name].type.tensor_type.elem_type == onnx.TensorProto.BOOL \
                else Act(ident)
        elif name in stand_in_onnx:
            ident = walker.unique(clean_identifier(name))
            walker.tensors[ident] = TensorInfo(ident, _shape_of(var))
            walker.env[var] = Act(ident)
            state.stand_ins[name] = ident
        elif name in initializers:
            if name in state.weights:
                converted[name] = state.weights[name]
            elif name not in converted:  # TVM may give one initializer several parameters
                tensor = initializers[name]
                converted[name] = numpy_helper.to_array(tensor)
                # Our own proto (loaded or copied above): one copy of each weight.
                tensor.ClearField("raw_data")
                tensor.ClearField("float_data")
            walker.env[var] = Const(converted[name])
        else:
            raise UnsupportedModelError(f"{source}: TVM parameter {name!r} is neither an "
                                        f"input nor an initializer")


def _walk(state: _Import) -> None:
    """Every binding converted into layers, each named after the ONNX node that owns it."""
    from tvm import relax

    func, walker, nodes = state.func, state.walker, list(state.proto.graph.node)
    owners = binding_owners(func, nodes, state.produced, relax)
    state.onnx_vars = tensor_bindings(func, nodes, state.produced, relax)
    state.produced = None
    matches = find_matches(func, relax, constant=lambda var: _constant_value(walker, var))
    for block in func.body.blocks:
        for binding in block.bindings:
            walker.current_node = owners.get(binding.var)
            walker.env[binding.var] = _convert_binding(walker, binding, matches, relax)
    walker.current_node = None  # output copies below belong to no node
    result = _lookup(walker, func.body.body, relax)
    results = list(result.items) if isinstance(result, Tup) else [result]
    state.results = [r.make() if isinstance(r, Deferred) else r for r in results]


def _splice_beside_tvm(state: _Import) -> None:
    """The nodes cut out before parsing, as layers over the walked activations."""
    if not state.cuts:
        return
    names, source = state.onnx_output_names, state.source
    extra = state.results[len(names):]
    results = state.results[:len(names)]
    activations = {}
    for o, value in zip(list(state.proto.graph.output)[len(names):], extra):
        if not isinstance(value, Act):
            reader = next(c.info for c in state.cuts if o.name in c.activations)
            raise UnsupportedModelError(f"{source}: the input {o.name!r} of node "
                                        f"{reader.label!r} ({reader.op_type}) is not computed "
                                        f"by a layer")
        activations[o.name] = value
    for name in names:  # model outputs that are also inputs of cut nodes
        if name in {n for c in state.cuts for n in c.activations}:
            activations[name] = results[names.index(name)]
    state.renames = splice(state.walker, state.cuts, state.stand_ins, activations)
    state.results = [Act(state.renames.get(v.name, v.name)) if isinstance(v, Act) else v
                     for v in results]


def _make_queue(state: _Import) -> None:
    walker, proto, source = state.walker, state.proto, state.source
    outputs: list[str] = []
    for value in state.results:
        value = bool_output(walker, value)
        if not isinstance(value, Act):
            raise UnsupportedModelError(f"{source}: a graph output is not computed by a "
                                        f"layer (constant outputs are not supported)")
        if value.name in {i.name for i in state.inputs} or value.name in outputs:
            # An output that is an input (Identity, inference Dropout) or another output
            # still needs its own buffer: a copy, which the SDK does as a reshape.
            value = walker.emit("Reshape", [value], {"shape": list(walker.tensors[
                value.name].shape)}, part="copy")
        outputs.append(value.name)
    queue = LayerQueue(layers=walker.layers, inputs=state.inputs, outputs=outputs,
                       tensors=walker.tensors, weights=walker.weights, source=source,
                       opset=max((o.version for o in proto.opset_import
                                  if o.domain in ("", "ai.onnx")), default=0),
                       ir_version=int(proto.ir_version))
    if not isinstance(state.model, onnx.ModelProto):
        queue.source_path = str(Path(state.model).resolve())
    queue.onnx_output_names = state.onnx_output_names
    queue.onnx_input_names = [v.name for v in state.data_inputs]
    queue.input_values = state.bound
    queue.onnx_tensors = _onnx_tensors(walker, state.onnx_vars, state.inputs,
                                       queue.onnx_input_names)
    for cut in state.cuts:
        for name in cut.outputs:
            layer = state.renames.get(state.stand_ins[name])
            if layer is not None:
                queue.onnx_tensors.setdefault(layer, []).append(name)
    mark_selects(queue, state.selects)
    state.queue = queue


# What import_onnx does, in order (each step reads what the steps before it left).
IMPORT_STEPS: tuple[tuple[str, Callable[[_Import], None]], ...] = (
    ("load the model", _load),
    ("rewrite the ONNX graph", _rewrite_onnx),
    ("check its operators and attributes", _check),
    ("type and shape the inputs", _graph_inputs),
    ("cut out the nodes converted beside TVM", _cut_beside_tvm),
    ("parse with TVM's Relax frontend", _parse),
    ("bind the parameters", _bind_parameters),
    ("walk the bindings into layers", _walk),
    ("splice their layers in", _splice_beside_tvm),
    ("make the layer queue", _make_queue),
)


def import_onnx(model: str | Path | onnx.ModelProto,
                input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                batch: int | None = None,
                input_values: Mapping[str, np.ndarray] | None = None,
                outputs: Sequence[str] | None = None) -> LayerQueue:
    """The model's LayerQueue, made by IMPORT_STEPS. `input_shapes` (by input name) and
    `batch` (a symbolic first axis) fix symbolic input dimensions; every other dimension
    must be static in the model. `input_values` makes inputs constants (--input-value: a
    sample rate an If checks). `outputs` names the tensors to compute instead of the
    graph's outputs (--outputs: a detector up to its raw scores and boxes)."""
    state = _Import(model, input_shapes, batch, input_values, outputs)
    for name, step in IMPORT_STEPS:
        logger.debug("%s: %s", state.source or model, name)
        step(state)
    assert state.queue is not None
    logger.info("%s: %d layers, %d weights", state.source, len(state.queue.layers),
                len(state.queue.weights))
    return state.queue


def mark_selects(queue: LayerQueue, selects: Mapping[str, str]) -> None:
    """Marks the layers selecting a run-time If's outputs (their `selects_if`), each a
    HostWhere of the condition and the two branches' values of one shape."""
    found: set[str] = set()
    for layer in queue.layers:
        owner = next((selects[n] for n in layer.onnx_nodes if n in selects), "")
        if not owner or layer.kind != "HostWhere":
            continue
        shapes = {queue.shape(name) for name in layer.inputs[1:]}
        if len(layer.inputs) != 3 or len(shapes) != 1:
            raise UnsupportedModelError(
                f"{queue.source}: node {owner!r} (If): its branches give the output "
                f"{layer.name!r} in different shapes or as constants "
                f"({[queue.shape(n) for n in layer.inputs[1:]]}); a session's branches must "
                f"compute tensors of one shape")
        layer.selects_if = owner
        found.add(owner)
    lost = sorted(set(selects.values()) - found)
    if lost:
        raise UnsupportedModelError(
            f"{queue.source}: node {lost[0]!r} (If): no layer selects its outputs (an output "
            f"that is the same value in both branches, or a constant); restructure the If")


def _onnx_tensors(walker: Walker, onnx_vars: dict[str, Any], inputs: list[TensorInfo],
                  onnx_inputs: list[str]) -> dict[str, list[str]]:
    """Queue tensor -> ONNX tensors of the same value: the graph inputs, and each node
    output whose binding the walker turned into a layer output (or forwarded one to)."""
    out: dict[str, list[str]] = {info.name: [name] for info, name in zip(inputs, onnx_inputs)}
    for name, var in onnx_vars.items():
        value = walker.env.get(var)
        if isinstance(value, Act) and value.name in walker.tensors:
            out.setdefault(value.name, []).append(name)
    return out


# Float initializers at least this large reach TVM as typed graph inputs instead: TVM
# copies every initializer's data (twice, at its peak), while the walker reads weights from
# the ONNX initializers by name, so TVM needs only their shapes. The same bound decides
# which initializers are streamed from the file (their data is not in the proto at all).
_LARGE_WEIGHT = STREAM_MIN_ELEMENTS


def _without_large_weights(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, str]]:
    """The model for TVM: large float initializers turned into graph inputs, and every
    initializer and input under a plain identifier (TVM rewrites names such as
    "conv1.weight" or "onnx::Conv_193" in ways that cannot be mapped back); returns it and
    the map from those identifiers back to the ONNX names."""
    graph = proto.graph
    large = {t.name for t in graph.initializer
             if t.data_type == onnx.TensorProto.FLOAT and int(np.prod(t.dims)) >= _LARGE_WEIGHT}
    used = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    used |= {o for n in graph.node for o in n.output}
    rename: dict[str, str] = {}

    def fresh(base: str) -> str:
        name = base
        while name in used:
            name += "_"
        used.add(name)
        return name

    for i, tensor in enumerate(graph.initializer):
        rename[tensor.name] = fresh(f"pz_weight_{i}")
    for i, value in enumerate(graph.input):
        if value.name not in rename and not value.name.isidentifier():
            rename[value.name] = fresh(f"pz_input_{i}")
    light = onnx.ModelProto()
    for field_name in ("ir_version", "producer_name", "producer_version", "domain",
                       "model_version", "doc_string"):
        setattr(light, field_name, getattr(proto, field_name))
    light.opset_import.extend(proto.opset_import)
    light.graph.name = graph.name
    initializers = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Expand" and len(node.input) > 1 and node.input[1] in initializers:
            # TVM reads Expand's shape only from a Relax constant; an initializer is a
            # function parameter to it (keep_params_in_input), which makes the shape
            # symbolic. A Constant node gives it the value.
            shape = light.graph.node.add()
            shape.CopyFrom(onnx.helper.make_node(
                "Constant", [], [fresh(f"pz_expand_shape_{len(light.graph.node)}")],
                value=initializers[node.input[1]]))
        copy = light.graph.node.add()
        copy.CopyFrom(node)
        if node.op_type == "Expand" and len(node.input) > 1 and node.input[1] in initializers:
            copy.input[1] = shape.output[0]
        for k, name in enumerate(copy.input):
            if name in rename and not (copy.op_type == "Expand" and k == 1
                                       and name in initializers):
                copy.input[k] = rename[name]
        entry = ONNX_OPS.get(copy.op_type)
        if entry is not None and entry.tvm_form is not None:
            entry.tvm_form(copy)
    light.graph.output.extend(graph.output)
    light.graph.value_info.extend(graph.value_info)
    for tensor in graph.initializer:
        if tensor.name in large:
            continue
        copy = light.graph.initializer.add()
        copy.CopyFrom(tensor)
        copy.name = rename[tensor.name]
    for value in graph.input:
        if value.name in large:
            continue
        copy = light.graph.input.add()
        copy.CopyFrom(value)
        copy.name = rename.get(value.name, value.name)
    light.graph.input.extend(
        onnx.helper.make_tensor_value_info(rename[t.name], t.data_type, list(t.dims))
        for t in graph.initializer if t.name in large)
    return light, {new: old for old, new in rename.items()}


def _lookup(walker: Walker, expr: Any, relax: Any) -> Any:
    import tvm.ir as tvm_ir

    if isinstance(expr, tvm_ir.expr.Constant):
        data = getattr(expr, "value", None)
        data = data if data is not None else expr.data
        return Const(data.numpy() if hasattr(data, "numpy") else np.asarray(data))
    if isinstance(expr, relax.Tuple):
        return Tup(tuple(_lookup(walker, f, relax) for f in expr.fields))
    if type(expr).__name__ in ("IntImm", "FloatImm", "PrimValue"):
        value = getattr(expr, "value", expr)
        value = getattr(value, "value", value)
        return Const(np.array(value))
    if isinstance(expr, relax.ShapeExpr):
        return Const(np.array([int(v) for v in expr.values], dtype=np.int64))
    try:
        return walker.env[expr]
    except KeyError:
        raise walker.fail(f"unknown expression {type(expr).__name__}") from None


def _shape_of(var: Any) -> tuple[int, ...]:
    # TVM 0.27 keeps the inferred tensor type on `ty` (older releases: struct_info).
    info = getattr(var, "ty", None) or getattr(var, "struct_info", None)
    shape = getattr(info, "shape", None)
    if shape is None or not hasattr(shape, "values"):
        return ()
    try:
        return tuple(int(v) for v in shape.values)
    except (TypeError, ValueError):
        return ()


def _tir_name(call: Any) -> str:
    # TVM numbers the functions of one kind per shape: maximum, maximum1, ...
    return re.sub(r"\d+$", "", str(call.args[0].name_hint))


def _convert_tir(walker: Walker, call: Any, relax: Any) -> Any:
    name = _tir_name(call)
    converter = TIR_CONVERTERS.get(name)
    if converter is None:
        raise walker.fail(f"TVM lowered an operator to the TIR function {name!r}, which has "
                          f"no Paleozoic layer")
    args = [_materialized(walker, _lookup(walker, arg, relax)) for arg in call.args[1].fields]
    return converter(walker, call, args)


def _materialized(walker: Walker, value: Any) -> Any:
    """A held-back value (a bool mask, a device comparison's result) as a layer's tensor,
    for a converter that reads tensors and constants only."""
    materialize = getattr(value, "materialize", None)
    return materialize(walker) if materialize is not None else value


def _convert_binding(walker: Walker, binding: Any, matches: dict[Any, Match],
                     relax: Any) -> Any:
    var, value = binding.var, binding.value
    walker.current_var = f"binding {var.name}"
    walker.current_shape = _shape_of(var)
    match = matches.get(var)
    if match is not None:
        return _convert_match(walker, var, match, relax)
    if isinstance(value, relax.TupleGetItem):
        tup = _lookup(walker, value.tuple_value, relax)
        if not isinstance(tup, Tup):
            raise walker.fail("tuple access on a non-tuple")
        item = tup.items[int(value.index)]
        return item.make() if isinstance(item, Deferred) else item
    if not isinstance(value, relax.Call):
        return _lookup(walker, value, relax)
    op_name = value.op.name
    if op_name == "relax.call_tir":
        return _convert_tir(walker, value, relax)
    args = [_lookup(walker, arg, relax) for arg in value.args]
    if all(isinstance(a, Const) for a in args) and op_name in CONST_EVAL:
        return Const(CONST_EVAL[op_name](value, args))
    converter = CONVERTERS.get(op_name)
    if converter is None:
        raise walker.fail(f"Relax operator {op_name} has no Paleozoic layer")
    if op_name not in TAKES_HELD:
        args = [_materialized(walker, a) for a in args]
    try:
        result = converter(walker, value, args)
    except ShapeError as err:
        raise walker.fail(str(err)) from None
    if isinstance(result, Act) and walker.current_shape:
        walker.check_final_shape(result)
    return result


def _convert_match(walker: Walker, var: Any, match: Match, relax: Any) -> Any:
    """A binding of a pattern match: the root converts the whole match in one step."""
    if not var.same_as(match.root):
        return Absorbed(match.kind)
    if match.error:
        raise walker.fail(match.error)
    operands = {role: _materialized(walker, _lookup(walker, expr, relax))
                for role, expr in match.operands.items()}
    try:
        result = PATTERNS[match.kind].convert(walker, match, operands)
    except ShapeError as err:
        raise walker.fail(str(err)) from None
    if isinstance(result, Act) and walker.current_shape:
        walker.check_final_shape(result)
    return result


def _parse_with_tvm(light: onnx.ModelProto) -> tuple[Any, dict[str, Any]]:
    """TVM's Relax module of the model, and TVM's map from each ONNX tensor name to the
    Relax expression it became, which ties bindings to the nodes that emitted them.

    This is what tvm.relax.frontend.onnx.from_onnx does (less its ONNX checker pass, which
    the loader has run), keeping the importer object whose map from_onnx discards."""
    from tvm.relax.frontend.onnx import onnx_frontend

    opset = next((o.version for o in light.opset_import if o.domain in ("", "ai.onnx")), 1)
    try:
        importer = onnx_frontend.ONNXGraphImporter(None, "float32", keep_params_in_input=True,
                                                   sanitize=True)
        mod = importer.from_onnx(light.graph, opset)
        return mod, dict(importer._nodes)  # a private attribute: see the docstring
    except (AttributeError, TypeError) as err:
        # Another TVM release may rename the importer's internals: parse as from_onnx
        # does and name layers after their inputs rather than fail the model.
        logger.warning("TVM's ONNX importer has changed (%s): layers are named after their "
                       "inputs, not their ONNX nodes", err)
        return onnx_frontend.from_onnx(light, keep_params_in_input=True), {}
