"""Values bound to Relax variables while walking: activations, constants, tuples
and the partial patterns (Pending) that later bindings complete."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paleozoic.errors import UnsupportedModelError


@dataclass(frozen=True)
class Act:
    """An activation tensor of the layer queue."""

    name: str


@dataclass(frozen=True)
class Const:
    value: np.ndarray
    origin: str = ""  # ONNX name of the weight it came from, for naming layers


@dataclass(frozen=True)
class Tup:
    items: tuple[Any, ...]


@dataclass
class Pending:
    """A partly matched multi-binding pattern."""

    pattern: str
    source: Act | None = None
    items: list[Act] = field(default_factory=list)
    attrs: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # the layer's, once known


Value = Act | Const | Tup | Pending


class ConversionError(UnsupportedModelError):
    pass
