"""How much output noise each layer adds in each reduced precision, measured once, kept as
JSON, and read by the accuracy-aware search (paleozoic.optimize.accuracy).

The measure is the noise power at the model output,

    noise = ||y - y_fp32||^2 / ||y_fp32||^2          (SQNR dB = -10 log10(noise))

with one layer in fp16 or int8 and every other layer in fp32. For small independent
quantisation noises these add up (the assumption HAWQ and others make), so a plan's
predicted noise is the sum over its layers of their sensitivity in their precision; fp32
adds none.

Measuring needs the precision runtime, which is not part of this module: the runtime side
implements `NoiseProbe`, and `measure_sensitivities` only decides what to measure.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from paleozoic.ir import LayerQueue
from paleozoic.ir.file_format import format_problem
from paleozoic.ir.plan import Precision

SENSITIVITIES_FORMAT = "paleozoic-sensitivities"
SENSITIVITIES_VERSION = 1


@dataclass(frozen=True)
class Sensitivities:
    """layers[name][precision] = output noise power with that layer alone in `precision`.

    fp32 is the reference and is never stored (it adds no noise). `model` names what was
    measured and `data` how (free text: data set, batch count), for the record.
    """

    layers: Mapping[str, Mapping[Precision, float]]
    model: str = ""
    data: str = ""
    notes: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clean: dict[str, dict[Precision, float]] = {}
        for name, row in self.layers.items():
            clean[str(name)] = {}
            for precision, value in row.items():
                precision = Precision(precision)
                value = float(value)
                if not math.isfinite(value) or value < 0:
                    raise ValueError(f"sensitivity of layer {name!r} in {precision.value} is "
                                     f"{value}; it must be a finite noise power >= 0")
                if precision == Precision.FP32 and value != 0.0:
                    raise ValueError(f"layer {name!r}: fp32 is the reference and adds no "
                                     f"noise (got {value})")
                clean[str(name)][precision] = value
        object.__setattr__(self, "layers", clean)  # frozen: normalised once, here

    def noise(self, layer: str, precision: Precision) -> float:
        """The layer's noise power in `precision`; KeyError when it was not measured."""
        precision = Precision(precision)
        if precision == Precision.FP32:
            return 0.0
        try:
            return self.layers[layer][precision]
        except KeyError:
            raise KeyError(f"no {precision.value} sensitivity for layer {layer!r}") from None

    def matrix(self, queue: LayerQueue, precisions: Sequence[Precision]) -> np.ndarray:
        """[n, len(precisions)] noise of queue layer l in precisions[p]; ValueError naming
        every layer that lacks a measurement the search needs."""
        missing = []
        out = np.zeros((len(queue.layers), len(precisions)))
        for l, layer in enumerate(queue.layers):
            for p, precision in enumerate(precisions):
                try:
                    out[l, p] = self.noise(layer.name, precision)
                except KeyError:
                    missing.append(f"{layer.name} ({Precision(precision).value})")
        if missing:
            raise ValueError(f"sensitivities lack {len(missing)} measurement(s) the search "
                             f"needs: {', '.join(missing[:8])}"
                             f"{' ...' if len(missing) > 8 else ''}")
        return out

    # ---- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SENSITIVITIES_FORMAT,
            "version": SENSITIVITIES_VERSION,
            "model": self.model,
            "data": self.data,
            "metric": "noise power ||y - y_fp32||^2 / ||y_fp32||^2 at the model output, "
                      "one layer in the precision, the rest fp32",
            "notes": dict(self.notes),
            "layers": {name: {p.value: v for p, v in row.items()}
                       for name, row in self.layers.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "sensitivities") -> Sensitivities:
        problem = format_problem(data, source, SENSITIVITIES_FORMAT, SENSITIVITIES_VERSION,
                                 "sensitivities file")
        if problem:
            raise ValueError(problem)
        try:
            layers = {name: {Precision(p): v for p, v in row.items()}
                      for name, row in data.get("layers", {}).items()}
        except (ValueError, AttributeError) as err:
            raise ValueError(f"{source}: bad layers entry ({err})") from None
        return cls(layers, model=str(data.get("model", "")), data=str(data.get("data", "")),
                   notes=dict(data.get("notes", {})))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Sensitivities:
        path = Path(path)
        return cls.from_dict(json.loads(path.read_text()), str(path))


class NoiseProbe(Protocol):
    """What the precision runtime provides to measure sensitivities (implemented there, not
    here): run the model on the caller's held-out data with the named layers in the given
    precisions and every other layer in fp32, and return the output noise power
    ||y - y_fp32||^2 / ||y_fp32||^2 summed over the data (outputs concatenated)."""

    def output_noise(self, precisions: Mapping[str, Precision]) -> float:
        ...


def measure_sensitivities(queue: LayerQueue, probe: NoiseProbe,
                          precisions: Sequence[Precision] = (Precision.FP16, Precision.INT8),
                          model: str = "", data: str = "") -> Sensitivities:
    """One probe run per (layer, reduced precision): n * len(precisions) runs in all."""
    layers: dict[str, dict[Precision, float]] = {}
    for layer in queue.layers:
        layers[layer.name] = {}
        for precision in precisions:
            precision = Precision(precision)
            if precision == Precision.FP32:
                continue
            layers[layer.name][precision] = float(
                probe.output_noise({layer.name: precision}))
    return Sensitivities(layers, model=model or queue.source, data=data)
