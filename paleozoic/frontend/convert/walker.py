"""The state of one walk (Walker) and the helpers converters share."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from paleozoic.frontend.convert.values import (
    Act,
    Const,
    ConversionError,
    Pending,
    Tup,
    Value,
)
from paleozoic.ir import Layer, Operator, TensorInfo
from paleozoic.ops import KINDS


def ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def clean_identifier(name: str) -> str:
    """A readable C++ identifier from an ONNX name ("gpu_0/res2_0_branch2a_w_0" ->
    "res2_0_branch2a_w")."""
    name = re.sub(r"^gpu_\d+/", "", name)
    name = re.sub(r"_0$", "", name)
    ident = re.sub(r"\W+", "_", name).strip("_") or "t"
    if ident[0].isdigit():
        ident = "t" + ident
    return ident


_WEIGHT_SUFFIX = re.compile(r"(_w|_weight|_W|_kernel|_s|_scale|_gamma)$")


def stem_from_weight(origin: str) -> str:
    return _WEIGHT_SUFFIX.sub("", clean_identifier(origin)) if origin else ""


class Walker:
    """Holds the state of one walk; converters call its emit/lookup helpers."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.layers: list[Layer] = []
        self.tensors: dict[str, TensorInfo] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.env: dict[Any, Value] = {}
        self.stems: dict[str, str] = {}  # tensor -> stem of the layer that made it
        self.used_names: set[str] = set()
        self.current_shape: tuple[int, ...] = ()
        self.current_var = ""
        # Operators that read each binding ("relax.expand_dims", "tir:minimum"), for the
        # patterns that decide by what comes next.
        self.consumers: dict[Any, list[str]] = {}
        # LRN parameters of the ONNX nodes, in graph order, and how many were matched.
        self.lrn_attrs: list[dict[str, Any]] = []
        self.lrn_count = 0
        self.current_binding: Any = None

    # -- naming ----------------------------------------------------------------------
    def unique(self, base: str) -> str:
        name, n = base, 2
        while name in self.used_names:
            name, n = f"{base}_{n}", n + 1
        self.used_names.add(name)
        return name

    def read_only_by(self, operator: str) -> bool:
        """True when the current binding's value is read by `operator` alone."""
        return self.consumers.get(self.current_binding, []) == [operator]

    def lrn_ahead(self, act: Act) -> bool:
        """x * x opens TVM's LRN decomposition only when expand_dims reads it."""
        return self.read_only_by("relax.expand_dims")

    def stem_of(self, act: Act) -> str:
        return self.stems.get(act.name, act.name)

    # -- emission --------------------------------------------------------------------
    def emit(self, kind: str, inputs: list[Act], attrs: dict[str, Any] | None = None,
             weights: dict[str, np.ndarray] | None = None, stem: str = "",
             suffix: str = "") -> Act:
        """Appends a layer, checks our shape function against TVM's, returns its output."""
        attrs = attrs or {}
        stem = stem or (self.stem_of(inputs[0]) if inputs else "layer")
        name = self.unique(f"{stem}_{suffix}" if suffix else stem)
        spec = KINDS[kind]
        in_shapes = [self.tensors[a.name].shape for a in inputs]
        shape = spec.output_shape(attrs, in_shapes)
        if 0 in shape:
            raise self.fail(f"{kind} layer {name!r} would produce an empty tensor {shape}; "
                            f"zero-size tensors are not supported")
        layer = Layer(name=name, op=Operator(kind, attrs), inputs=[a.name for a in inputs],
                      output=name)
        for role, value in (weights or {}).items():
            key = f"{name}.{role}"
            self.weights[key] = np.ascontiguousarray(value, dtype=np.float32)
            layer.weights[role] = key
        self.layers.append(layer)
        self.tensors[name] = TensorInfo(name, shape)
        self.stems[name] = stem
        return Act(name)

    def check_final_shape(self, act: Act) -> None:
        ours = self.tensors[act.name].shape
        if self.current_shape and ours != self.current_shape:
            raise ConversionError(
                f"{self.source}: shape inference disagrees with TVM at {self.current_var} "
                f"(layer {act.name!r}): ours {ours}, TVM {self.current_shape}")

    def fail(self, message: str) -> ConversionError:
        return ConversionError(f"{self.source}: {self.current_var}: {message}")


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


def act_of(w: Walker, value: Value) -> Any:
    if isinstance(value, (Act, Pending)):
        return value
    raise w.fail("this operation on a constant is not supported")


def const_ints(value: Value) -> list[int]:
    if isinstance(value, Tup):
        return [int(np.asarray(item.value).reshape(())) for item in value.items]
    return ints(np.asarray(value.value).reshape(-1))
