"""Values bound to Relax variables while walking: activations, constants, tuples, and
the inner bindings of a pattern match, which its root binding converts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Tup:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Deferred:
    """A tuple field whose layer is emitted only when a binding reads it: a node whose
    outputs are separate layers computes only those the model reads."""

    make: Callable[[], Any]


@dataclass(frozen=True)
class Absorbed:
    """An inner binding of a pattern match (patterns.py): no layer of its own; only
    the match's root reads it."""

    pattern: str


Value = Act | Const | Tup | Absorbed


class ConversionError(UnsupportedModelError):
    pass


@dataclass(frozen=True)
class Cond:
    """A bool tensor computed on the device: `act` holds 1.0 where true and 0.0 where not."""

    act: Act

    def materialize(self, w: Any) -> Act:
        return self.act
