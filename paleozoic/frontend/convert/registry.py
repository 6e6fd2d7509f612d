"""The converter tables: which function converts each Relax operator (and each TIR
primitive TVM's frontend lowers straight to call_tir), filled by the decorators below as
the family modules of this package are imported (the shape of TVM's own converter table).
"""

from __future__ import annotations

from typing import Any, Callable

ConverterFn = Callable[[Any, Any, list[Any]], Any]   # (walker, call, args) -> value

CONVERTERS: dict[str, ConverterFn] = {}
TIR_CONVERTERS: dict[str, ConverterFn] = {}


def _register(table: dict[str, ConverterFn], op: str) -> Callable[[ConverterFn], ConverterFn]:
    def add(fn: ConverterFn) -> ConverterFn:
        if op in table:
            raise ValueError(f"{op} has two converters: {table[op].__name__} and "
                             f"{fn.__name__}")
        table[op] = fn
        return fn
    return add


def converter(relax_op: str) -> Callable[[ConverterFn], ConverterFn]:
    """Registers the decorated function as the converter of `relax_op` ("relax.nn.conv2d")."""
    return _register(CONVERTERS, relax_op)


def tir_converter(primitive: str) -> Callable[[ConverterFn], ConverterFn]:
    """Registers the decorated function for call_tir of `primitive` ("maximum")."""
    return _register(TIR_CONVERTERS, primitive)
