"""The checked-in enums.h is what the CppEnums generate, and the C++ build parses and maps
every value the Python side can write (through the pybind module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paleozoic.codegen.cpp_enums import enums_header
from paleozoic.codegen.environment import CPP_ENUMS
from paleozoic.ir.plan import PREPROCESS, Precision
from paleozoic.ops.elementwise import ACTIVATIONS as ACTIVE
from paleozoic.ops.elementwise import BINARY_OPS as BINARY
from paleozoic.ops.image import COORDINATES as INTERP_COORDINATES
from paleozoic.ops.image import ROUNDINGS as INTERP_ROUNDING

HEADER = Path(__file__).resolve().parents[2] / "runtime_cpp/include/paleozoic/enums.h"


def test_header_is_current() -> None:
    """Also: enums.h repeats no code of its own, only tables (enum_table.h does the rest)."""
    assert HEADER.read_text() == enums_header(), (
        "runtime_cpp/include/paleozoic/enums.h is stale: run "
        "`python -m paleozoic.codegen.cpp_enums > runtime_cpp/include/paleozoic/enums.h`")


def test_values_and_spellings_are_unique() -> None:
    for e in CPP_ENUMS:
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


@pytest.mark.parametrize("precision", [p.value for p in Precision])
def test_runtime_takes_every_precision(precision: str) -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    layer = session.active("a", session.input("x", [1, 2, 3, 3]), "relu")
    layer.set_precision(precision)
    assert layer.precision == precision
    block = session.make_block("b", False, 1, [layer], precision=precision)
    assert block.precision == precision


def test_runtime_takes_every_preprocess_strategy() -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    x = session.input("x", [1, 2, 3, 3])
    for strategy in PREPROCESS.values:
        x.set_data_preprocess_strategy(strategy)
    with pytest.raises(rt.Error, match="unknown data-preprocess strategy 'gpu_priority'; "
                                       "use cpu_priority, mlu_priority or balance"):
        x.set_data_preprocess_strategy("gpu_priority")


def test_unknown_precision_names_the_choices() -> None:
    from paleozoic import _runtime as rt

    session = rt.Session()
    layer = session.active("a", session.input("x", [1, 2]), "relu")
    with pytest.raises(rt.Error, match="a: unknown precision 'bf16'; use fp32, fp16 or int8"):
        layer.set_precision("bf16")
