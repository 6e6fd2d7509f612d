"""The raw emission mode: the same session written as direct CNML/CNRT calls, no wrapper.

It exists to measure what the wrapper saves (the paper's Table 5 and Fig. 15): the raw
session makes the same SDK calls with the same parameters as the wrapper form, so both
give bit-identical outputs and the same simulated device time. Only model loading
(command line, weights.bin, input and output files) goes through the runtime library,
between `// paleozoic: model loading begin/end` markers that the line counter skips.

Templates: templates/raw/session.cpp.j2 and templates/raw/layers/<kind.template>.cpp.j2,
each with the macros construct (tensors, params, op, bound weights), forward (the layer
run alone) and destroy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from paleozoic.ir import Layer, Model
from paleozoic.ops import KINDS

FLOAT_BYTES = 4


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= int(dim)
    return count


@dataclass
class RawTensor:
    """An activation tensor: its descriptor variable, device buffer variable and shape."""

    name: str          # file name of the tensor (as the wrapper's Tensor::name())
    desc: str          # cnmlTensor_t variable
    shape: tuple[int, ...]

    @property
    def mlu(self) -> str:
        return f"{self.desc}_mlu"

    @property
    def elements(self) -> int:
        return _elements(self.shape)

    @property
    def bytes(self) -> int:
        return self.elements * FLOAT_BYTES


@dataclass
class RawLayerView:
    layer: Layer
    ident: str
    inputs: list[RawTensor]
    output: RawTensor
    weight_shapes: dict[str, tuple[int, ...]]
    macros: Any

    @property
    def name(self) -> str:
        return self.layer.name

    @property
    def attrs(self) -> dict[str, Any]:
        return self.layer.op.attrs

    @property
    def op(self) -> str:
        return f"{self.ident}_op"

    @property
    def param(self) -> str:
        return f"{self.ident}_param"

    def const(self, role: str) -> str:
        """Descriptor variable of the layer's FILTER / CONST tensor for `role`."""
        return f"{self.ident}_{role}"

    @property
    def in_shape(self) -> tuple[int, ...]:
        return self.inputs[0].shape

    def weight(self, role: str) -> str | None:
        """Host pointer expression of a weight, or None when the optional role is absent."""
        key = self.layer.weights.get(role)
        if key is None:
            if role in KINDS[self.layer.kind].optional_roles:
                return None
            raise KeyError(f"layer {self.layer.name!r} has no {role!r} weight")
        shape = ", ".join(str(d) for d in self.weight_shapes[key])
        return f'const_cast<float*>(weights.get("{key}", {{{shape}}}).data)'

    def construct(self) -> str:
        return str(self.macros.construct(self)).strip("\n")

    def forward(self) -> str:
        return str(self.macros.forward(self)).strip("\n")

    def destroy(self) -> str:
        return str(self.macros.destroy(self)).strip("\n")


@dataclass
class RawBlockView:
    name: str
    const: str
    index: int
    fuse: bool
    mp: int
    summary: str
    layers: list[RawLayerView]
    inputs: list[RawTensor] = field(default_factory=list)
    outputs: list[RawTensor] = field(default_factory=list)

    @property
    def var(self) -> str:
        return f"{self.const[0].lower()}{self.const[1:]}_fusion"


def raw_context(model: Model, env: Any, unique_ident: Any, block_views: list[Any]) -> dict:
    """What templates/raw/session.cpp.j2 sees, beyond the common header fields."""
    queue = model.queue
    tensors: dict[str, RawTensor] = {}
    inputs = []
    for info in model.inputs:
        tensor = RawTensor(info.name, unique_ident(info.name), tuple(info.shape))
        tensors[info.name] = tensor
        inputs.append(tensor)
    macros: dict[str, Any] = {}
    views: dict[str, RawLayerView] = {}
    for layer in queue.layers:
        ident = unique_ident(layer.name)
        kind = KINDS[layer.kind]
        if kind.template not in macros:
            macros[kind.template] = env.get_template(
                f"raw/layers/{kind.template}.cpp.j2").module
        # The wrapper names a layer's output tensor after the layer (Tensor{name_, ...}).
        out = RawTensor(layer.name, f"{ident}_out", tuple(queue.shape(layer.output)))
        tensors[layer.output] = out
        views[layer.name] = RawLayerView(
            layer=layer, ident=ident, inputs=[tensors[name] for name in layer.inputs],
            output=out,
            weight_shapes={key: tuple(queue.weights[key].shape)
                           for key in layer.weights.values()},
            macros=macros[kind.template])
    blocks: list[RawBlockView] = []
    buffers: list[RawTensor] = list(inputs)

    def need(tensor: RawTensor) -> None:
        if tensor not in buffers:
            buffers.append(tensor)

    for index, (block, view) in enumerate(zip(model.blocks, block_views)):
        layer_views = [views[layer.name] for layer in block.layers]
        raw = RawBlockView(block.name, view.const, index, block.fuse, block.mp, view.summary,
                           layer_views)
        if block.fuse:
            # The block's boundary is the wrapper's (paleozoic.ir.boundary).
            raw.inputs = [tensors[name] for name in block.inputs]
            raw.outputs = [tensors[name] for name in block.outputs]
            for tensor in raw.inputs + raw.outputs:
                need(tensor)
        else:
            for lv in layer_views:
                for tensor in lv.inputs + [lv.output]:
                    need(tensor)
        blocks.append(raw)
    outputs = [tensors[name] for name in queue.outputs]
    for tensor in outputs:
        need(tensor)
    zero_bias = max(
        [_zero_bias_size(lv) for lv in views.values()] + [0])
    return dict(raw_inputs=inputs, raw_outputs=outputs, raw_layers=list(views.values()),
                raw_blocks=blocks, buffers=buffers, zero_bias=zero_bias)


def _zero_bias_size(view: RawLayerView) -> int:
    """Floats of the zero bias the wrapper binds when a conv / deconv / FC layer has none."""
    if "bias" not in KINDS[view.layer.kind].optional_roles or "bias" in view.layer.weights:
        return 0
    if view.layer.kind in ("Conv", "Deconv"):
        return int(view.attrs["out_channels"])
    return int(view.attrs["out_features"])


def raw_title(title: str) -> str:
    return f"{title} (raw CNML/CNRT form)"


__all__ = ["RawBlockView", "RawLayerView", "RawTensor", "raw_context",
           "raw_title"]
