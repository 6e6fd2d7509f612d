"""What Paleozoic knows about one layer kind, in one place.

Each kind names its wrapper class (runtime_cpp), its template snippet (templates/layers/),
its weight roles, its shape function and its cost counters. The frontend's converters
produce layers of these kinds; the registry test checks each kind has a template, a
wrapper class, a pybind binding and a kernel test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

Shape = tuple[int, ...]
Attrs = dict[str, Any]
ShapeFn = Callable[[Attrs, list[Shape]], Shape]
CountFn = Callable[[Attrs, list[Shape], Shape], int]


class ShapeError(ValueError):
    """Inputs a layer kind cannot take; raised by shape functions."""


def _elements(shape: Shape) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def elementwise_ops(attrs: Attrs, inputs: list[Shape], output: Shape) -> int:
    return _elements(output)


@dataclass(frozen=True)
class LayerKind:
    name: str                       # the IR's op_type, e.g. "Conv"
    cpp_class: str                  # wrapper class in runtime_cpp, e.g. "pz::ConvLayer"
    template: str                   # templates/layers/<template>.cpp.j2
    binding: str                    # method of paleozoic._runtime.Session
    shape: ShapeFn
    macs: CountFn = elementwise_ops
    weight_roles: tuple[str, ...] = ()
    optional_roles: tuple[str, ...] = ()
    arity: int | None = 1           # None: any number of inputs
    fusible: bool = True            # may join a fusion op with other layers
    spatial: bool = False           # tiles across cores with overlapping windows when fused

    def output_shape(self, attrs: Attrs, inputs: list[Shape]) -> Shape:
        if self.arity is not None and len(inputs) != self.arity:
            raise ShapeError(f"{self.name} takes {self.arity} input(s), got {len(inputs)}")
        return tuple(int(d) for d in self.shape(attrs, inputs))


def elements(shape: Shape) -> int:
    return _elements(shape)
