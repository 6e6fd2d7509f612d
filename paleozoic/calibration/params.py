"""The quantisation parameters an int8 session needs, from a calibration record: for each
layer with an SDK int8 mode, its input activation's (position, scale) and its filter's, one
per output channel. They travel in weights.bin (not in the emitted source), so a hand edit
of a block's precision needs no recompilation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from paleozoic.calibration.file import CalibrationError
from paleozoic.calibration.quant import quantized_param
from paleozoic.ir import LayerQueue
from paleozoic.ops import KINDS

QuantParam = tuple[int, float]  # (position, scale): real = q * 2^position / scale


def input_key(layer: str) -> str:
    """Name in weights.bin of a layer's input parameters: float32 [position, scale]."""
    return f"{layer}.quant.input"


def filter_key(layer: str) -> str:
    """Name in weights.bin of a layer's filter parameters: float32 [channels, 2]."""
    return f"{layer}.quant.filter"


@dataclass(frozen=True)
class LayerQuantization:
    input: QuantParam
    filter: tuple[QuantParam, ...]

    def weight_tensors(self, layer: str) -> list[tuple[str, np.ndarray]]:
        return [(input_key(layer), np.array(self.input, dtype=np.float32)),
                (filter_key(layer), np.array(self.filter, dtype=np.float32).reshape(-1, 2))]


def quantization_from_tensors(tensors: dict[str, np.ndarray]) -> dict[str, LayerQuantization]:
    """The parameters a weights.bin carries (a session compiled with --calibration)."""
    out: dict[str, LayerQuantization] = {}
    suffix = ".quant.input"
    for key, value in tensors.items():
        if not key.endswith(suffix):
            continue
        layer = key[:-len(suffix)]
        filt = np.asarray(tensors.get(filter_key(layer), np.zeros((0, 2))), dtype=np.float64)
        out[layer] = LayerQuantization(
            input=(int(value[0]), float(value[1])),
            filter=tuple((int(p), float(s)) for p, s in filt.reshape(-1, 2)))
    return out


def layer_quantization(queue: LayerQueue, record: dict[str, Any],
                       source: str = "calibration") -> dict[str, LayerQuantization]:
    """Parameters for every int8-capable layer of `queue`. Positions and scales are derived
    again from the record's thresholds and absmax values, which are what a person edits."""
    activations = record.get("activations", {})
    weights = record.get("weights", {})
    out: dict[str, LayerQuantization] = {}
    for layer in queue.layers:
        if not KINDS[layer.kind].int8_mode:
            continue
        tensor = layer.inputs[0]
        if tensor not in activations:
            raise CalibrationError(f"{source}: no range for tensor {tensor!r}, the input of "
                                   f"layer {layer.name!r}; re-run paleozoic calibrate")
        try:
            absmax = [float(a) for a in weights[layer.name]["weight"]["absmax"]]
        except (KeyError, TypeError):
            raise CalibrationError(f"{source}: no filter ranges for layer {layer.name!r}; "
                                   f"re-run paleozoic calibrate") from None
        channels = queue.weights[layer.weights["weight"]].shape[
            KINDS[layer.kind].weight_channel_axis]
        if len(absmax) != channels:
            raise CalibrationError(f"{source}: layer {layer.name!r} has {channels} output "
                                   f"channels but {len(absmax)} filter ranges")
        out[layer.name] = LayerQuantization(
            input=quantized_param(float(activations[tensor]["threshold"])),
            filter=tuple(quantized_param(a) for a in absmax))
    return out
