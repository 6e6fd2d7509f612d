"""ONNX -> LayerQueue: check the model, parse it with TVM's Relax frontend, walk the
bindings (relax_walk), and return the queue in topological order."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.loader import load_onnx
from paleozoic.frontend.relax_walk import (
    CONST_EVAL, CONVERTERS, Act, Const, Tup, Walker,
    clean_identifier,
)
from paleozoic.frontend.support import check_supported
from paleozoic.ir import LayerQueue, TensorInfo
from paleozoic.ops import ShapeError

logger = logging.getLogger(__name__)


def _static_shape(value: onnx.ValueInfoProto, source: str) -> tuple[int, ...]:
    dims = value.type.tensor_type.shape.dim
    symbolic = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
    if symbolic:
        raise UnsupportedModelError(
            f"{source}: input {value.name!r} has symbolic dimensions {symbolic}; "
            f"give a static shape (this version needs fixed input shapes)")
    return tuple(int(d.dim_value) for d in dims)


def import_onnx(model: str | Path | onnx.ModelProto) -> LayerQueue:
    proto, source = load_onnx(model)
    check_supported(proto, source)
    init_names = {t.name for t in proto.graph.initializer}
    data_inputs = [v for v in proto.graph.input if v.name not in init_names]
    for value in data_inputs:
        if value.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            raise UnsupportedModelError(
                f"{source}: input {value.name!r} is not float32; only fp32 models are "
                f"supported")
    shapes = {v.name: _static_shape(v, source) for v in data_inputs}

    # Imported late: TVM takes a second to import and is needed only here.
    import tvm.ir as tvm_ir  # noqa: F401  (Constant lives in tvm.ir.expr in 0.27)
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    try:
        mod = from_onnx(proto, keep_params_in_input=True)
    except Exception as err:  # TVM raises many types; name the model and the cause
        raise UnsupportedModelError(f"{source}: TVM's ONNX frontend failed: "
                                    f"{type(err).__name__}: {err}") from None
    func = mod["main"]

    # Parameters are matched by name: TVM keeps graph.input order (weights may come
    # before the data input in IR-3 models), so positions are not reliable.
    walker = Walker(source)
    inputs: list[TensorInfo] = []
    by_name = {v.name: v for v in data_inputs}
    initializers = {t.name: t for t in proto.graph.initializer}
    for var in func.params:
        name = str(var.name)
        if name in by_name:
            ident = walker.unique(clean_identifier(name))
            info = TensorInfo(ident, shapes[name])
            inputs.append(info)
            walker.tensors[ident] = info
            walker.env[var] = Act(ident)
            walker.stems[ident] = ident
        elif name in initializers:
            walker.env[var] = Const(numpy_helper.to_array(initializers[name]), origin=name)
        else:
            raise UnsupportedModelError(f"{source}: TVM parameter {name!r} is neither an "
                                        f"input nor an initializer")

    for block in func.body.blocks:
        for binding in block.bindings:
            walker.env[binding.var] = _convert_binding(walker, binding, relax)

    result = _lookup(walker, func.body.body, relax)
    results = list(result.items) if isinstance(result, Tup) else [result]
    outputs = []
    for value in results:
        if not isinstance(value, Act):
            raise UnsupportedModelError(f"{source}: a graph output is not computed by a "
                                        f"layer (constant outputs are not supported)")
        outputs.append(value.name)
    queue = LayerQueue(layers=walker.layers, inputs=inputs, outputs=outputs,
                       tensors=walker.tensors, weights=walker.weights, source=source,
                       opset=max((o.version for o in proto.opset_import
                                  if o.domain in ("", "ai.onnx")), default=0),
                       ir_version=int(proto.ir_version))
    if not isinstance(model, onnx.ModelProto):
        queue.source_path = str(Path(model).resolve())
    queue.onnx_output_names = [o.name for o in proto.graph.output]
    queue.onnx_input_names = [v.name for v in data_inputs]
    logger.info("%s: %d layers, %d weights", source, len(queue.layers), len(queue.weights))
    return queue


def _lookup(walker: Walker, expr: Any, relax: Any) -> Any:
    import tvm.ir as tvm_ir

    if isinstance(expr, tvm_ir.expr.Constant):
        data = getattr(expr, "value", None)
        data = data if data is not None else expr.data
        return Const(data.numpy() if hasattr(data, "numpy") else np.asarray(data))
    if isinstance(expr, relax.Tuple):
        return Tup(tuple(_lookup(walker, f, relax) for f in expr.fields))
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


def _convert_binding(walker: Walker, binding: Any, relax: Any) -> Any:
    var, value = binding.var, binding.value
    walker.current_var = f"binding {var.name}"
    walker.current_shape = _shape_of(var)
    if isinstance(value, relax.TupleGetItem):
        tup = _lookup(walker, value.tuple_value, relax)
        if not isinstance(tup, Tup):
            raise walker.fail("tuple access on a non-tuple")
        return tup.items[int(value.index)]
    if not isinstance(value, relax.Call):
        return _lookup(walker, value, relax)
    op_name = value.op.name
    args = [_lookup(walker, arg, relax) for arg in value.args]
    if all(isinstance(a, Const) for a in args) and op_name in CONST_EVAL:
        origin = next((a.origin for a in args if a.origin), "")
        return Const(CONST_EVAL[op_name](value, args), origin)
    converter = CONVERTERS.get(op_name)
    if converter is None:
        raise walker.fail(f"Relax operator {op_name} has no Paleozoic layer")
    try:
        result = converter(walker, value, args)
    except ShapeError as err:
        raise walker.fail(str(err)) from None
    if isinstance(result, Act) and walker.current_shape:
        walker.check_final_shape(result)
    return result
