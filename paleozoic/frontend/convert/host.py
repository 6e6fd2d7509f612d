"""Converters of the operators computed on the host: Cast (of integer inputs, or to an
integer type), ArgMax and TopK (paleozoic.ops.host), and the integer index arithmetic TVM's
frontend writes around ONNX Gather (negative indices wrapped: where(i < 0, i + n, i)),
which becomes the wrap of the host cast that makes GatherV2's int32 indices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import OnnxNode, OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Act, Cond, Const, Deferred, Tup, Value
from paleozoic.frontend.convert.walker import Walker, act_of, scalar
from paleozoic.ops.host import ELEMENT_TYPES, GRID_SAMPLE_MODES, HOST_ARITH_BOOL_OPS


def _check_argmax(n: OnnxNode) -> list[str]:
    # TVM lowers select_last_index=1 to flip, argmax and a subtraction of int64 tensors,
    # which the walker cannot give back to one host layer; HostArgMaxLayer has the mode for
    # hand-written sessions.
    if int(n.attrs.get("select_last_index", 0)):
        return [("select_last_index=1 (the last of equal maxima) is not supported from "
                 "ONNX; ArgMax takes the first (0)")]
    return []


def _check_topk(n: OnnxNode) -> list[str]:
    # Any order is valid then, so no two runtimes need agree; TVM refuses it too.
    if not int(n.attrs.get("sorted", 1)):
        return ["sorted=0 (the k values in any order) is not supported; give sorted=1"]
    return []


onnx_ops({
    "Cast": OnnxOp("HostCast, or nothing (a cast of a float to float32)"),
    "ArgMax": OnnxOp("HostArgMax", check=_check_argmax),
    "TopK": OnnxOp("HostTopK (a layer per output read: values, indices)", check=_check_topk),
    "Where": OnnxOp("HostSelect (a mask or IsNaN and constant values), HostWhere (a run-time "
                    "condition and run-time values)"),
    "And": OnnxOp("Binary and (CNML's And), or nothing (a mask and a constant all-true mask, "
                  "as HuggingFace exports)"),
    "Expand": OnnxOp("Concat of copies along the expanded axes (an activation, up to 256 "
                     "copies), HostArith (an integer tensor), or nothing (a mask broadcast, "
                     "applied by the HostSelect reading it)", parameters=(1,)),
    "IsNaN": OnnxOp("HostSelect (with the Where reading it)"),
    "GatherElements": OnnxOp("HostGatherElements (run-time data and indices; constant ones "
                             "are folded)"),
    "Mod": OnnxOp("HostArith mod (fmod=0) or fmod (fmod=1)"),
})


@dataclass(frozen=True)
class MaskOf:
    """A bool tensor: `act != 0` (a Cast to bool), broadcast to `shape` when given; a
    Where reading it becomes a HostSelect."""

    act: Act
    shape: tuple[int, ...] | None = None
    zero_one: bool = False           # act holds 0s and 1s only (a host comparison's)

    def materialize(self, w: Walker) -> Value:
        """As a tensor: uint8 0s and 1s."""
        return bool_output(w, self)


@dataclass(frozen=True)
class NanOf:
    """IsNaN(act) of a float activation, for the Where that reads it."""

    act: Act

    def materialize(self, w: Walker) -> Value:
        """As the device's bools: 1.0 where nan, 0.0 where not."""
        return host_select(w, MaskOf(self.act), "isnan", 1.0, 0.0)


@converter("relax.astype", held=True)
def convert_astype(w: Walker, call: Any, args: list[Value]) -> Value:
    to = str(call.attrs.dtype)
    if isinstance(args[0], Cond):  # the device's bools are float32 1.0s and 0.0s already
        if to in ("bool", "float32"):
            return args[0] if to == "bool" else args[0].act
        if to not in ELEMENT_TYPES:
            raise w.fail(f"Cast to {to}: a session's tensors are {', '.join(ELEMENT_TYPES)}")
        return host_arith(w, "not_equal", args[0].act, Const(np.array(0.0)), to=to)
    if isinstance(args[0], MaskOf):
        mask = args[0]
        if to == "bool":
            return mask  # type: ignore[return-value]
        if to == "float32":
            return host_select(w, mask, "nonzero", 1.0, 0.0)
        if to not in ELEMENT_TYPES:
            raise w.fail(f"Cast to {to}: a session's tensors are {', '.join(ELEMENT_TYPES)}")
        act = mask.act if mask.shape is None else broadcast_mask_act(w, mask)
        return host_arith(w, "not_equal", act, Const(np.array(0)), to=to)
    if to == "bool":
        return MaskOf(act_of(w, args[0]))  # type: ignore[return-value]
    x = act_of(w, args[0])
    if to not in ELEMENT_TYPES:
        raise w.fail(f"Cast to {to}: a session's tensors are {', '.join(ELEMENT_TYPES)}")
    if to == w.dtype(x):
        return x  # a cast to its own type (exporters write them around masks)
    return w.emit("HostCast", [x], {"to": to, "shape": list(w.tensors[x.name].shape)},
                  part="cast")


@converter("relax.argmax")
def convert_argmax(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    rank = len(w.tensors[x.name].shape)
    if call.attrs.axis is None:
        raise w.fail("ArgMax over all axes (no axis) is not an ONNX form; give an axis")
    axis = int(call.attrs.axis) % rank
    return w.emit("HostArgMax", [x], {"axis": axis, "keepdims": bool(call.attrs.keepdims)},
                  part="argmax")


@converter("relax.topk")
def convert_topk(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    shape = w.tensors[x.name].shape
    axis = int(call.attrs.axis) % len(shape)
    attrs = {"axis": axis, "k": int(call.attrs.k), "largest": bool(call.attrs.largest)}
    node = w.current_node

    def output(which: str) -> Deferred:
        def make() -> Act:
            reading, w.current_node = w.current_node, node
            try:
                return w.emit("HostTopK", [x], {**attrs, "output": which}, part=which,
                              main=which == "values")
            finally:
                w.current_node = reading
        return Deferred(make)

    return Tup((output("values"), output("indices")))


@dataclass(frozen=True)
class IndexTerm:
    """A step of the negative-index wrap on an integer activation: `act < 0` ("negative")
    or `act + shift` ("shifted"); `where(negative, shifted, act)` makes a WrappedIndex.
    Read by anything else, a step is the host arithmetic it stands for (`materialize`)."""

    kind: str
    act: Act
    shift: int = 0

    def materialize(self, w: Walker) -> Value:
        if self.kind == "shifted":
            return host_arith(w, "add", self.act, Const(np.array(self.shift)))
        return host_arith(w, "less", self.act, Const(np.array(0)))


@dataclass(frozen=True)
class WrappedIndex:
    """Indices whose negative values count from the end of an axis of size `size`."""

    act: Act
    size: int


def integer_arithmetic(w: Walker, op: str, a: Value, b: Value) -> Value:
    """Arithmetic on an integer tensor: `ids + n` with a constant n may be the shifted side
    of a Gather's negative-index wrap (an IndexTerm until read otherwise); the rest is a
    HostArith."""
    if op == "add" and isinstance(b, Act):
        a, b = b, a
    if op == "add" and isinstance(a, Act) and isinstance(b, Const) and b.value.size == 1:
        return IndexTerm("shifted", a, int(scalar(w, b, "the index shift")))  # type: ignore[return-value]
    return host_arith(w, op, a, b)


def _host_operand(w: Walker, v: Value, op: str, truth: bool) -> tuple[float | str, Act | None]:
    """A HostArith operand: ("input", the tensor) or (the number, None). A bool mask is
    read as its tensor where only its truth counts (`truth`: logic), else as 0s and 1s."""
    if isinstance(v, (IndexTerm, NanOf)):
        v = v.materialize(w)
    if isinstance(v, Cond):
        return "input", v.act
    if isinstance(v, MaskOf):
        act = v.act if v.shape is None else broadcast_mask_act(w, v)
        if not truth and not v.zero_one:
            act = host_arith(w, "not_equal", act, Const(np.array(0))).act  # type: ignore[union-attr]
        return "input", act
    if isinstance(v, Act):
        return "input", v
    if isinstance(v, Const) and np.asarray(v.value).size == 1:
        number = float(np.asarray(v.value).reshape(-1)[0])
        if number != number:
            raise w.fail(f"{op} with a nan constant operand")
        return number, None
    if isinstance(v, Const):
        value = np.asarray(v.value)
        if not np.array_equal(value.astype(np.float32).astype(value.dtype), value,
                              equal_nan=value.dtype.kind == "f"):
            raise w.fail(f"{op} with a constant tensor operand whose values float32 cannot "
                         f"hold exactly (a weights file holds float32)")
        return "constant", None
    raise w.fail(f"{op} of this operand is not supported")


def host_arith(w: Walker, op: str, a: Value, b: Value, to: str | None = None,
               truth: bool = False) -> Value:
    """a op b element by element on the host (HostArith): integer arithmetic, comparisons
    and logic on integer tensors or bool masks, Mod of anything. A comparison or logic op
    gives a bool mask (uint8 0s and 1s), unless `to` asks for another type. `truth`: a
    mask operand counts by its truth only (Not as x == 0), as the logic ops' do."""
    boolean = op in HOST_ARITH_BOOL_OPS
    truth = truth or op in ("and", "or", "xor")
    (ka, xa), (kb, xb) = (_host_operand(w, a, op, truth), _host_operand(w, b, op, truth))
    tensors = [x for x in (xa, xb) if x is not None]
    if not tensors:
        raise w.fail(f"{op} of two constants should have been folded")
    shape = tuple(int(d) for d in np.broadcast_shapes(
        *(tuple(w.tensors[x.name].shape) for x in tensors)))
    types = [w.dtype(x) for x in tensors]
    if not boolean and len(set(types)) > 1:
        raise w.fail(f"{op} of a {types[0]} and a {types[1]} tensor: ONNX takes operands of "
                     f"one type")
    out = to or ("uint8" if boolean else types[0])
    attrs: dict[str, Any] = {"op": op, "to": out, "a": ka, "b": kb}
    weights = {}
    constants = [np.asarray(v.value) for k, v in ((ka, a), (kb, b)) if k == "constant"]
    if len(constants) > 1:
        raise w.fail(f"{op} of two constant tensors should have been folded")
    if constants:
        attrs["constant_shape"] = list(constants[0].shape)
        weights["constant"] = constants[0].astype(np.float32)
        shape = tuple(int(d) for d in np.broadcast_shapes(shape, constants[0].shape))
    attrs["shape"] = list(shape)
    act = w.emit("HostArith", tensors, attrs, weights, part=op)
    return MaskOf(act, zero_one=True) if boolean and to is None else act  # type: ignore[return-value]


def broadcast_mask_act(w: Walker, mask: MaskOf) -> Act:
    """The integers of a broadcast mask, broadcast (a host copy): `mask.act != 0` holds."""
    return w.emit("HostArith", [mask.act], {"op": "not_equal", "to": "uint8",
                                            "shape": list(mask.shape or ()), "a": "input",
                                            "b": 0.0}, part="mask")


def _mod(fmod: bool):  # type: ignore[no-untyped-def]
    def convert(w: Walker, call: Any, args: list[Value]) -> Value:
        a, b = args
        return host_arith(w, "fmod" if fmod else "mod", a, b)
    return convert


# TVM writes ONNX Mod fmod=0 as floor_mod (the divisor's sign), fmod=1 as mod.
converter("relax.floor_mod")(_mod(False))
converter("relax.mod")(_mod(True))


@converter("relax.shape_of", held=True)
def convert_shape_of(w: Walker, call: Any, args: list[Value]) -> Value:
    """Shapes are fixed at compile time: the shape of an activation or constant is a
    constant (TVM asks for it around Gather's index wrap)."""
    (x,) = args
    if isinstance(x, Const):
        return Const(np.array(np.asarray(x.value).shape, dtype=np.int64))
    if isinstance(x, MaskOf):
        return Const(np.array(x.shape or w.tensors[x.act.name].shape, dtype=np.int64))
    return Const(np.array(w.tensors[act_of(w, x).name].shape, dtype=np.int64))


@converter("relax.gather_elements")
def convert_gather_elements(w: Walker, call: Any, args: list[Value]) -> Value:
    data, indices = args
    if isinstance(indices, WrappedIndex):  # the host layer wraps negative indices itself
        indices = indices.act
    if not isinstance(data, Act) or not isinstance(indices, Act):
        raise w.fail("GatherElements is supported of a run-time tensor by run-time integer "
                     "indices (both constant: folded); a constant operand beside a run-time "
                     "one is not")
    if w.dtype(indices) == "float32":
        raise w.fail("GatherElements' indices must be an integer tensor")
    rank = len(w.tensors[data.name].shape)
    return w.emit("HostGatherElements", [data, indices],
                  {"axis": int(call.attrs.axis) % rank}, part="gather")


def gather_indices(w: Walker, indices: Value, size: int) -> Act:
    """GatherV2's int32 indices from integer indices (plain or wrapped): a host cast that
    narrows them and wraps negative ones by `size`, as ONNX Gather reads them."""
    wrap = 0
    if isinstance(indices, WrappedIndex):
        indices, wrap = indices.act, indices.size
    if not isinstance(indices, Act) or w.dtype(indices) == "float32":
        raise w.fail("Gather's indices must be an integer tensor or a constant")
    if wrap and wrap != size:
        raise w.fail(f"Gather's indices wrap by {wrap}, the table's axis has {size}")
    return w.emit("HostCast", [indices], {"to": "int32", "shape": list(
        w.tensors[indices.name].shape), "wrap": size}, part="indices", main=False)


def host_select(w: Walker, mask: MaskOf, test: str, then: float | str, otherwise: float | str) -> Act:
    shape = list(w.current_shape or mask.shape or w.tensors[mask.act.name].shape)
    return w.emit("HostSelect", [mask.act], {"test": test, "shape": shape, "then": then,
                                             "otherwise": otherwise}, part="select")


def reshape_mask(w: Walker, mask: MaskOf, shape: list[int]) -> MaskOf:
    """A reshape of a bool mask: a host copy of the integers it tests."""
    if mask.shape is not None:
        raise w.fail("reshaping a broadcast mask is not supported")
    act = w.emit("HostCast", [mask.act], {"to": w.dtype(mask.act), "shape": shape},
                 part="reshape")
    return MaskOf(act, zero_one=mask.zero_one)


def mask_values(w: Walker, mask: MaskOf) -> Act:
    """A mask of an integer tensor as the device's bools: 1.0 where nonzero, 0.0 where not."""
    shape = list(mask.shape or w.tensors[mask.act.name].shape)
    return w.emit("HostSelect", [mask.act], {"test": "nonzero", "shape": shape, "then": 1.0,
                                             "otherwise": 0.0}, part="mask", main=False)


def broadcast_mask(w: Walker, mask: MaskOf) -> MaskOf:
    return MaskOf(mask.act, tuple(w.current_shape), mask.zero_one)


@converter("relax.isnan")
def convert_isnan(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    if w.dtype(x) != "float32":
        raise w.fail("IsNaN of an integer tensor")
    return NanOf(x)  # type: ignore[return-value]


def bool_output(w: Walker, value: Value) -> Value:
    """A graph output as a layer's tensor: a bool (a mask, a device comparison) as uint8 0s
    and 1s, a held-back value materialized; anything else as it is."""
    if isinstance(value, (IndexTerm, NanOf)):
        value = value.materialize(w)
    if isinstance(value, MaskOf) and value.zero_one and value.shape is None:
        return value.act
    if isinstance(value, MaskOf):
        act = value.act if value.shape is None else broadcast_mask_act(w, value)
        return host_arith(w, "not_equal", act, Const(np.array(0)), to="uint8")
    if isinstance(value, Cond):
        return host_arith(w, "not_equal", value.act, Const(np.array(0.0)), to="uint8")
    return value


onnx_ops({"GridSample": OnnxOp("HostGridSample (4-D, bilinear or nearest; cubic refused)")})


@converter("relax.image.grid_sample")
def convert_grid_sample(w: Walker, call: Any, args: list[Value]) -> Value:
    data, grid = act_of(w, args[0]), args[1]
    attrs = call.attrs
    if str(attrs.layout) != "NCHW":
        raise w.fail(f"GridSample of {str(attrs.layout)} data: only 4-D (NCHW) data is "
                     f"supported")
    mode = str(attrs.method)
    if mode not in GRID_SAMPLE_MODES:
        raise w.fail(f"GridSample mode {mode!r}: the host layer samples bilinearly or at the "
                     f"nearest pixel ({', '.join(GRID_SAMPLE_MODES.values)})")
    layer = {"mode": mode, "padding_mode": str(attrs.padding_mode),
             "align_corners": bool(attrs.align_corners)}
    if isinstance(grid, Const):  # positions from learned queries only: a weight
        value = np.asarray(grid.value, dtype=np.float32)
        return w.emit("HostGridSample", [data], {**layer, "grid": "constant",
                                                 "grid_shape": list(value.shape)},
                      weights={"grid": value}, part="grid_sample")
    return w.emit("HostGridSample", [data, act_of(w, grid)], layer, part="grid_sample")
