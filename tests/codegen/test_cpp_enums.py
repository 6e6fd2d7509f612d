"""The checked-in enums.h is what paleozoic.ops.enums generates, and the C++ build parses
and maps every IR value the Python side can write (through the pybind module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paleozoic.codegen.cpp_enums import enums_header
from paleozoic.ops import ENUMS
from paleozoic.ops.elementwise import ACTIVATIONS as ACTIVE
from paleozoic.ops.elementwise import BINARY_OPS as BINARY
from paleozoic.ops.interp import COORDINATES as INTERP_COORDINATES
from paleozoic.ops.interp import ROUNDINGS as INTERP_ROUNDING

HEADER = Path(__file__).resolve().parents[2] / "runtime_cpp/include/paleozoic/enums.h"


def test_header_is_current() -> None:
    assert HEADER.read_text() == enums_header(), (
        "runtime_cpp/include/paleozoic/enums.h is stale: run "
        "`python -m paleozoic.codegen.cpp_enums > runtime_cpp/include/paleozoic/enums.h`")


def test_values_and_spellings_are_unique() -> None:
    for e in ENUMS:
        for field in ("value", "cpp"):
            spelled = [getattr(m, field) for m in e.members]
            assert len(set(spelled)) == len(spelled), (e.cpp_name, field)


@pytest.mark.parametrize("value", ACTIVE.values)
def test_runtime_takes_every_activation(value: str) -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    session.active("a", session.input("x", [1, 2, 3, 3]), value)


@pytest.mark.parametrize("value", BINARY.values)
def test_runtime_takes_every_binary_op(value: str) -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    x = session.input("x", [1, 2, 3, 3])
    session.binary("b", x, session.input("y", [1, 2, 3, 3]), value)


@pytest.mark.parametrize("coordinates", INTERP_COORDINATES.values)
@pytest.mark.parametrize("rounding", INTERP_ROUNDING.values)
def test_runtime_takes_every_interp_mode(coordinates: str, rounding: str) -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    session.interp("i", session.input("x", [1, 2, 3, 3]), "nearest", (6, 6), coordinates,
                   rounding)


def test_unknown_value_names_the_choices() -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    with pytest.raises(Exception, match="relu, sigmoid, tanh, relu6 or relu1"):
        session.active("a", session.input("x", [1, 2]), "gelu")
