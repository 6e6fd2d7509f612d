"""Host layers: what the SDK cannot run, computed on the CPU inside the emitted session
between device blocks (TVM BYOC's split of a graph between an accelerator and the host):
casts of integer inputs (uint8 pixels, int64 masks to float; int64 ids to the int32
indices GatherV2 takes), ArgMax and TopK. A host layer is never fused (`fusible=False`): every
plan gives it a block of its own, and its cost is its copies over the host link."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.enums import TRUTH_OPS, CppEnum, Member
from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, reshaped

# The element types a tensor of the queue may have (TensorInfo.dtype), as numpy spells them:
# pz::ElementType (core.h), whose C++ name function is the wrapper's elementTypeName.
ELEMENT_TYPE = CppEnum("ElementType", "", "element type", (
    Member("float32", "kFloat"),
    Member("int64"),
    Member("int32"),
    Member("uint8"),
), name_function="elementTypeName")
ELEMENT_TYPES = ELEMENT_TYPE.values
INTEGER_TYPES = ELEMENT_TYPES[1:]


def _check_broadcasts(kind: str, inputs: list[Shape], shape: Shape) -> None:
    for x in inputs:
        if len(x) > len(shape) or any(d not in (1, o) for d, o in zip(reversed(x),
                                                                         reversed(shape))):
            raise ShapeError(f"{kind} input {x} does not broadcast to {shape}")


@dataclass(frozen=True)
class HostCastAttrs:
    to: str                          # one of ELEMENT_TYPES
    shape: tuple[int, ...]           # the output shape (a reshape on the way, same count)
    # Negative values get `wrap` added (ONNX Gather's indices count from the end); 0: none.
    wrap: int = 0


@dataclass(frozen=True)
class HostArgMaxAttrs:
    axis: int                        # normalised, 0 <= axis < rank
    keepdims: bool = True
    select_last_index: bool = False


def host_cast_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    if attrs["to"] not in ELEMENT_TYPES:
        raise ShapeError(f"HostCast to {attrs['to']!r}: the element type must be one of "
                         f"{', '.join(ELEMENT_TYPES)}")
    return reshaped("HostCast", x, tuple(attrs["shape"]))


def host_argmax_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    axis = attrs["axis"]
    if not 0 <= axis < len(x):
        raise ShapeError(f"ArgMax axis {axis} is outside a {len(x)}-D input")
    if attrs["keepdims"]:
        return x[:axis] + (1,) + x[axis + 1:]
    return x[:axis] + x[axis + 1:] or (1,)


HOST_CAST = LayerKind(name="HostCast", shape=host_cast_shape, attrs=HostCastAttrs, fusible=False,
                      host=True, output_dtype=lambda a, _: a["to"])
HOST_ARGMAX = LayerKind(name="HostArgMax", template="host_argmax", binding="host_argmax",
                        shape=host_argmax_shape, attrs=HostArgMaxAttrs, fusible=False, host=True,
                        output_dtype=lambda a, _: "int64")


@dataclass(frozen=True)
class HostSelectAttrs:
    test: str                        # "nonzero" (a bool mask) or "isnan"
    shape: tuple[int, ...]           # the output shape: the input broadcast (numpy)
    then: float | str = "x"          # a number, or "x": the input value itself
    otherwise: float | str = "x"


def host_select_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    shape = tuple(attrs["shape"])
    if attrs["test"] not in ("nonzero", "isnan"):
        raise ShapeError(f"HostSelect test {attrs['test']!r} is not nonzero or isnan")
    if len(x) > len(shape) or any(d not in (1, o) for d, o in zip(reversed(x), reversed(shape))):
        raise ShapeError(f"HostSelect input {x} does not broadcast to {shape}")
    return shape


# ONNX Where with a run-time condition (attention masks, softmax's NaN guard), on the host.
HOST_SELECT = LayerKind(name="HostSelect", shape=host_select_shape, attrs=HostSelectAttrs,
                        fusible=False, host=True)


# ONNX TopK's two outputs, one HostTopK layer each.
TOPK_OUTPUTS = CppEnum("TopKOutput", "", "top-k output", (
    Member("values"),
    Member("indices"),
))


@dataclass(frozen=True)
class HostTopKAttrs:
    axis: int                        # normalised, 0 <= axis < rank
    k: int
    output: str                      # one of TOPK_OUTPUTS
    largest: bool = True


def host_topk_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    (x,) = inputs
    axis, k = attrs["axis"], attrs["k"]
    if not 0 <= axis < len(x):
        raise ShapeError(f"TopK axis {axis} is outside a {len(x)}-D input")
    if not 1 <= k <= x[axis]:
        raise ShapeError(f"TopK k={k} must be within 1..{x[axis]} (the axis' size)")
    if attrs["output"] not in TOPK_OUTPUTS:
        raise ShapeError(f"TopK output {attrs['output']!r} is not one of "
                         f"{', '.join(TOPK_OUTPUTS.values)}")
    return x[:axis] + (k,) + x[axis + 1:]


# ONNX TopK (sorted): one layer per output read, values (the input's type) or int64 indices.
HOST_TOPK = LayerKind(name="HostTopK", template="host_topk", binding="host_topk",
                      shape=host_topk_shape, attrs=HostTopKAttrs, fusible=False, host=True,
                      output_dtype=lambda a, ins: "int64" if a["output"] == "indices" else ins[0])


@dataclass(frozen=True)
class HostWhereAttrs:
    shape: tuple[int, ...]           # the output shape: every input broadcast (numpy)
    then: float | str = "input"      # a number, or "input": the next tensor input's value
    otherwise: float | str = "input"


def host_where_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    shape = tuple(attrs["shape"])
    wanted = 1 + sum(attrs[k] == "input" for k in ("then", "otherwise"))
    if len(inputs) != wanted:
        raise ShapeError(f"HostWhere takes the condition and {wanted - 1} value tensor(s) "
                         f"(then={attrs['then']!r}, otherwise={attrs['otherwise']!r}), got "
                         f"{len(inputs)} input(s)")
    _check_broadcasts("HostWhere", inputs, shape)
    return shape


# ONNX Where with a run-time condition and run-time values: y = cond != 0 ? then : otherwise,
# element by element on the host (the SDK has no select op; a blend would make the
# unselected side's inf and nan nan).
HOST_WHERE = LayerKind(name="HostWhere", shape=host_where_shape, attrs=HostWhereAttrs, arity=None,
                       fusible=False, host=True,
                       output_dtype=lambda a, ins: ins[1] if len(ins) > 1 else "float32")


@dataclass(frozen=True)
class HostGatherElementsAttrs:
    axis: int                        # normalised, 0 <= axis < rank


def host_gather_elements_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    data, indices = inputs
    axis = attrs["axis"]
    if len(data) != len(indices):
        raise ShapeError(f"GatherElements: data {data} and indices {indices} must have the "
                         f"same rank")
    if not 0 <= axis < len(data):
        raise ShapeError(f"GatherElements axis {axis} is outside a {len(data)}-D input")
    if any(i > d for a, (i, d) in enumerate(zip(indices, data)) if a != axis):
        raise ShapeError(f"GatherElements: indices {indices} are larger than data {data} "
                         f"along an axis other than {axis}")
    return tuple(indices)


# ONNX GatherElements of run-time data by run-time int64 indices (a detection head's
# scores by TopK's indices): out[..., j, ...] = data[..., indices[..., j, ...], ...] along
# `axis`, negative indices counting from the end; an index out of range is an error.
HOST_GATHER_ELEMENTS = LayerKind(name="HostGatherElements", shape=host_gather_elements_shape,
                                 attrs=HostGatherElementsAttrs, arity=2, fusible=False, host=True,
                                 output_dtype=lambda a, ins: ins[0])


@dataclass(frozen=True)
class HostGatherAttrs:
    axis: int                        # normalised, 0 <= axis < the data's rank


def host_gather_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    data, indices = inputs
    axis = attrs["axis"]
    if not 0 <= axis < len(data):
        raise ShapeError(f"Gather axis {axis} is outside a {len(data)}-D input")
    return tuple(data[:axis]) + tuple(indices) + tuple(data[axis + 1:])


# ONNX Gather of run-time data by run-time indices (CLIP's text pooling: the hidden state
# of the end-of-text token): out[a, i..., b] = data[a, indices[i...], b], negative indices
# from the end, an index out of range an error. Gathers from constant tables are the
# device's (GatherV2).
HOST_GATHER = LayerKind(name="HostGather", shape=host_gather_shape, attrs=HostGatherAttrs, arity=2,
                        fusible=False, host=True, output_dtype=lambda a, ins: ins[0])

# The element-wise ops of HostArith, ONNX's semantics on integers: div truncates toward
# zero, mod takes the divisor's sign (Python's %, ONNX Mod fmod=0), fmod the dividend's (C's
# fmod, ONNX Mod fmod=1); comparisons and logic give 1 where true, 0 where not.
HOST_ARITH_OPS = CppEnum("HostArith", "", "host arithmetic op", (
    Member("add"),
    Member("sub"),
    Member("mul"),
    Member("div"),
    Member("mod"),
    Member("fmod"),
    *TRUTH_OPS,
))
# The HostArith ops whose result is a truth value.
HOST_ARITH_BOOL_OPS = tuple(m.value for m in TRUTH_OPS)


@dataclass(frozen=True)
class HostArithAttrs:
    op: str                          # one of HOST_ARITH_OPS
    to: str                          # the output's element type (one of ELEMENT_TYPES)
    shape: tuple[int, ...]           # the output shape: the operands broadcast (numpy)
    # A number, "input" (the next tensor input) or "constant" (the weight "constant").
    a: float | str = "input"
    b: float | str = "input"
    constant_shape: tuple[int, ...] = ()   # the constant operand's shape, when there is one


def host_arith_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    if attrs["op"] not in HOST_ARITH_OPS:
        raise ShapeError(f"HostArith op {attrs['op']!r} is not one of {HOST_ARITH_OPS.values}")
    if attrs["to"] not in ELEMENT_TYPES:
        raise ShapeError(f"HostArith to {attrs['to']!r}: the element type must be one of "
                         f"{', '.join(ELEMENT_TYPES)}")
    wanted = sum(attrs[k] == "input" for k in ("a", "b"))
    if len(inputs) != wanted or not wanted:
        raise ShapeError(f"HostArith reads {wanted} tensor(s) (a={attrs['a']!r}, "
                         f"b={attrs['b']!r}; at least one a tensor), got {len(inputs)}")
    constant = [tuple(attrs["constant_shape"])] if "constant" in (attrs["a"], attrs["b"]) else []
    if constant and "constant" == attrs["a"] == attrs["b"]:
        raise ShapeError("HostArith has one constant operand at most")
    shape = tuple(attrs["shape"])
    _check_broadcasts("HostArith", list(inputs) + constant, shape)
    return shape


# Element-wise arithmetic, comparisons and logic the device has no op for, on the host:
# integer tensors (token ids compared with an end-of-text id, a flat index split into a row
# and a class by div and mod), and Mod of any tensor. An operand may be a number.
HOST_ARITH = LayerKind(name="HostArith", shape=host_arith_shape, attrs=HostArithAttrs,
                       weight_roles=("constant",), arity=None, fusible=False, host=True,
                       output_dtype=lambda a, _: a["to"],
                       roles_for=lambda a: ("constant",) if "constant" in (a["a"], a["b"]) else ())


GRID_SAMPLE_MODES = CppEnum.of("GridSampleMode", "GridSample mode", "bilinear", "nearest")
GRID_SAMPLE_PADDINGS = CppEnum.of("GridSamplePadding", "GridSample padding mode", "zeros",
                                  "border", "reflection")


@dataclass(frozen=True)
class HostGridSampleAttrs:
    mode: str                        # one of GRID_SAMPLE_MODES
    padding_mode: str                # one of GRID_SAMPLE_PADDINGS
    align_corners: bool
    # "input": the second input tensor; "constant": the layer's weight "grid" (learned
    # queries' sampling positions, folded), of grid_shape.
    grid: str = "input"
    grid_shape: tuple[int, ...] = ()


def host_grid_sample_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    if attrs.get("grid", "input") == "constant":
        if len(inputs) != 1:
            raise ShapeError(f"GridSample with a constant grid takes one input, not "
                             f"{len(inputs)}")
        inputs = [inputs[0], tuple(attrs["grid_shape"])]
    if len(inputs) != 2:
        raise ShapeError(f"GridSample takes data and a grid, not {len(inputs)} inputs")
    data, grid = inputs
    if len(data) != 4 or len(grid) != 4 or grid[1] != 2 or grid[0] != data[0]:
        raise ShapeError(f"GridSample takes data [N, C, H, W] and a grid [N, 2, H_out, W_out] "
                         f"(x, y on axis 1), not {data} and {grid}")
    if attrs["mode"] not in GRID_SAMPLE_MODES:
        raise ShapeError(f"GridSample mode {attrs['mode']!r} is not one of "
                         f"{', '.join(GRID_SAMPLE_MODES.values)}")
    if attrs["padding_mode"] not in GRID_SAMPLE_PADDINGS:
        raise ShapeError(f"GridSample padding_mode {attrs['padding_mode']!r} is not one of "
                         f"{', '.join(GRID_SAMPLE_PADDINGS.values)}")
    return (data[0], data[1], grid[2], grid[3])


# ONNX GridSample (opset 16) of 4-D data: deformable attention's sampling of a feature map
# at run-time positions. The grid arrives with x and y on axis 1 (TVM's layout: a
# Transpose of ONNX's [N, H_out, W_out, 2] on the device before it).
HOST_GRID_SAMPLE = LayerKind(name="HostGridSample", shape=host_grid_sample_shape,
                             attrs=HostGridSampleAttrs, weight_roles=("grid",), arity=None,
                             fusible=False, host=True,
                             roles_for=lambda a: ("grid",) if a["grid"] == "constant" else ())

FAMILY = (HOST_CAST, HOST_ARGMAX, HOST_SELECT, HOST_TOPK, HOST_WHERE, HOST_GATHER_ELEMENTS,
          HOST_GATHER, HOST_ARITH, HOST_GRID_SAMPLE)
ENUMS = (ELEMENT_TYPE, TOPK_OUTPUTS, HOST_ARITH_OPS, GRID_SAMPLE_MODES, GRID_SAMPLE_PADDINGS)
