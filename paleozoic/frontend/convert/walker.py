"""The state of one walk (Walker) and the helpers converters share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from paleozoic.frontend.convert.values import Act, Const, ConversionError, Tup, Value
from paleozoic.ir import Layer, Operator, TensorInfo
from paleozoic.ops import KINDS

if TYPE_CHECKING:
    from paleozoic.frontend.convert.nodes import NodeInfo


def ints(values: Any) -> list[int]:
    return [int(v) for v in values]


class Walker:
    """Holds the state of one walk; converters call its emit/lookup helpers."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.layers: list[Layer] = []
        self.tensors: dict[str, TensorInfo] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.env: dict[Any, Value] = {}
        self.used_names: set[str] = set()
        self.current_shape: tuple[int, ...] = ()
        self.current_var = ""
        # The ONNX node whose conversion emitted the current binding (None for the few
        # bindings no node owns), and the nodes that have already given a layer their name.
        self.current_node: NodeInfo | None = None
        self.named_nodes: set[int] = set()

    # -- naming ----------------------------------------------------------------------
    def unique(self, base: str) -> str:
        name, n = base, 2
        while name in self.used_names:
            name, n = f"{base}_{n}", n + 1
        self.used_names.add(name)
        return name

    def layer_name(self, kind: str, inputs: list[Act], part: str, main: bool) -> str:
        """The node's name for its first main layer; `<node>_<part>` for the others (part
        defaults to the kind: a BatchNormalization's Scale is `<node>_scale`)."""
        node = self.current_node
        tag = part or kind.lower()
        if node is None:
            return self.unique(f"{inputs[0].name}_{tag}" if inputs else tag)
        if main and node.index not in self.named_nodes:
            self.named_nodes.add(node.index)
            return self.unique(node.ident)
        return self.unique(f"{node.ident}_{tag}")

    # -- emission --------------------------------------------------------------------
    def emit(self, kind: str, inputs: list[Act], attrs: dict[str, Any] | None = None,
             weights: dict[str, np.ndarray] | None = None, part: str = "",
             main: bool = True) -> Act:
        """Appends a layer, checks our shape function against TVM's, returns its output.

        `part` names the layer when it is not its node's first (a bias, a flatten);
        `main=False` marks a helper layer that never takes the node's own name."""
        attrs = attrs or {}
        name = self.layer_name(kind, inputs, part, main)
        spec = KINDS[kind]
        in_shapes = [self.tensors[a.name].shape for a in inputs]
        in_dtypes = [self.tensors[a.name].dtype for a in inputs]
        integer = [a.name for a, t in zip(inputs, in_dtypes) if t != "float32"]
        if integer and not spec.host and not spec.index_inputs:
            raise self.fail(f"{kind} would read the {self.tensors[integer[0]].dtype} tensor "
                            f"{integer[0]!r}; the device computes on floats only, and integer "
                            f"tensors are read by host layers (Cast, ArgMax) and as "
                            f"embedding indices")
        shape = spec.output_shape(attrs, in_shapes)
        if len(shape) > MAX_RANK:
            raise self.fail(f"{kind} layer {name!r} would produce a {len(shape)}-D tensor "
                            f"{shape}; the SDK's tensors have at most {MAX_RANK} axes")
        if 0 in shape:
            raise self.fail(f"{kind} layer {name!r} would produce an empty tensor {shape}; "
                            f"zero-size tensors are not supported")
        layer = Layer(name=name, op=Operator(kind, attrs), inputs=[a.name for a in inputs],
                      output=name, onnx_nodes=[self.current_node.label]
                      if self.current_node else [])
        for role, value in (weights or {}).items():
            key = f"{name}.{role}"
            self.weights[key] = np.ascontiguousarray(value, dtype=np.float32)
            layer.weights[role] = key
        self.layers.append(layer)
        self.tensors[name] = TensorInfo(name, shape, spec.dtype_of(attrs, in_dtypes))
        return Act(name)

    def dtype(self, act: Act) -> str:
        return self.tensors[act.name].dtype

    def check_final_shape(self, act: Act) -> None:
        ours = self.tensors[act.name].shape
        if self.current_shape and ours != self.current_shape:
            raise ConversionError(
                f"{self.source}: shape inference disagrees with TVM at {self.current_var} "
                f"(layer {act.name!r}): ours {ours}, TVM {self.current_shape}")

    def fail(self, message: str) -> ConversionError:
        node = self.current_node
        where = (f"node {node.label!r} ({node.op_type}), {self.current_var}" if node
                 else self.current_var)
        return ConversionError(f"{self.source}: {where}: {message}")


# The most axes an SDK tensor has (CNML's, the mock's kMaxDims).
MAX_RANK = 6
# What a 0-d ONNX tensor (a sum over every axis, a scalar input) is in the queue: the SDK's
# tensors have at least one axis, and broadcasting a [1] gives the same values as a ().
SCALAR_SHAPE = (1,)


def channel_vector(w: Walker, act: Act, const: Const) -> np.ndarray | None:
    """The constant as one value per channel (axis 1) of `act`, or None if it is not."""
    shape = w.tensors[act.name].shape
    if len(shape) < 2:
        raise w.fail(f"per-channel operations need a channel axis (axis 1); the input "
                     f"has shape {shape}")
    value = const.value
    if value.size == 1:
        return np.full(shape[1], float(value.reshape(())), dtype=np.float32)
    channels = shape[1]
    squeezed = value.reshape(-1)
    if squeezed.size != channels:
        return None
    # Accept (C,), (C,1,1), (1,C,1,1) and the like: C must sit on the channel axis.
    dims = list(value.shape)
    trailing = len(shape) - 1 - (len(dims) - 1 - dims.index(channels)) if dims else 0
    if trailing != 1 and not (len(dims) == 1 and len(shape) == 2):
        return None
    return squeezed.astype(np.float32)


def scalar(w: Walker, const: Const, what: str) -> float:
    """One number (exporters write scalars as shape () or (1,) tensors)."""
    value = np.asarray(const.value)
    if value.size != 1:
        raise w.fail(f"{what} must be a single number, got shape {value.shape}")
    return float(value.reshape(-1)[0])


def act_of(w: Walker, value: Value) -> Act:
    if isinstance(value, Act):
        return value
    materialize = getattr(value, "materialize", None)  # a value held back for a pattern
    if materialize is not None:
        return act_of(w, materialize(w))
    raise w.fail("this operation on a constant is not supported")


def const_ints(value: Value) -> list[int]:
    if isinstance(value, Tup):
        return [int(np.asarray(item.value).reshape(())) for item in value.items]
    return ints(np.asarray(value.value).reshape(-1))
