"""Layers and the LayerQueue: what the frontend produces and the passes rewrite."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paleozoic.ops import KINDS

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: Shape
    dtype: str = "float32"


@dataclass
class Operator:
    """An operator kind and its attributes (kernel, stride, pads, axis, ...), completed
    with the kind's defaults (LayerKind.attrs) so nothing downstream supplies one."""

    op_type: str
    attrs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kind = KINDS.get(self.op_type)
        if kind is not None:
            self.attrs = kind.complete_attrs(self.attrs)


@dataclass
class Layer:
    """One layer of the queue: an operator bound to tensors and weights.

    `weights` maps a role of the layer kind ("weight", "bias", "mean", ...) to the name of
    a tensor in LayerQueue.weights. MP is a knob of the F-Block (the plan), not of the
    layer; precision is the per-layer knob of the paper's IR (fp32 until the precision
    issue gives it a reader).
    """

    name: str
    op: Operator
    inputs: list[str]
    output: str
    weights: dict[str, str] = field(default_factory=dict)
    precision: str = "fp32"
    # The ONNX nodes (labels as Netron shows them) whose computation this layer does, in
    # graph order: one, or several when a pass merged layers (a bias Add folded into its
    # Conv names the Conv then the Add). Empty for the output copies no node owns.
    onnx_nodes: list[str] = field(default_factory=list)
    # The run-time If (its ONNX name) this layer selects an output of: its Where of the two
    # branches' values (frontend/control_flow.py). Empty for every other layer.
    selects_if: str = ""
    # The branches this layer runs in, outermost first: (If name, True for its then branch).
    # Empty for layers every run computes (passes/branches.py sets it).
    branch: tuple[tuple[str, bool], ...] = ()

    @property
    def kind(self) -> str:
        return self.op.op_type


@dataclass
class LayerQueue:
    """Layers in topological order with every tensor's shape and the weight values."""

    layers: list[Layer]
    inputs: list[TensorInfo]
    outputs: list[str]
    tensors: dict[str, TensorInfo]
    weights: dict[str, np.ndarray]
    source: str = "<model>"
    opset: int = 0
    ir_version: int = 0
    source_path: str = ""  # absolute path of the ONNX file, when loaded from one
    onnx_input_names: list[str] = field(default_factory=list)
    onnx_output_names: list[str] = field(default_factory=list)
    # Graph inputs made constants at compile time (--input-value), by ONNX name.
    input_values: dict[str, np.ndarray] = field(default_factory=dict)
    # Queue tensor -> the ONNX tensors holding the same values (same data, possibly another
    # shape, as a flatten's output), in graph order; tensors no ONNX tensor equals (inside
    # a node that became several layers) have no entry. For mapping numbers back to ONNX.
    onnx_tensors: dict[str, list[str]] = field(default_factory=dict)
    # Run-time If (ONNX name) -> the tensor holding its condition, for the layers whose
    # `branch` names it (passes/branches.py).
    conditions: dict[str, str] = field(default_factory=dict)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"no layer named {name!r}")

    def shape(self, tensor: str) -> Shape:
        return self.tensors[tensor].shape

    def producers(self) -> dict[str, Layer]:
        return {layer.output: layer for layer in self.layers}

    def consumers(self) -> dict[str, list[Layer]]:
        users: dict[str, list[Layer]] = {}
        for layer in self.layers:
            for name in layer.inputs:
                users.setdefault(name, []).append(layer)
        return users

    def prune_unused_weights(self) -> None:
        used = {w for layer in self.layers for w in layer.weights.values()}
        self.weights = {k: v for k, v in self.weights.items() if k in used}
        live = {t.name for t in self.inputs} | {layer.output for layer in self.layers}
        self.tensors = {k: v for k, v in self.tensors.items() if k in live}
        self.onnx_tensors = {k: v for k, v in self.onnx_tensors.items() if k in live}
