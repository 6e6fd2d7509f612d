"""The Jinja environment: strict (undefined names are errors), every printed value guarded
against text from outside (escape.py), with small C++ helpers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import jinja2
import numpy as np

from paleozoic.codegen.escape import (
    Code, cmake_comment, cmake_name, cpp_comment, cpp_ident, cpp_string, guard)
from paleozoic.ir.plan import ENUMS as PLAN_ENUMS
from paleozoic.ops import ENUMS as LAYER_ENUMS
from paleozoic.ops.enums import CppEnum

# Every enum enums.h declares (paleozoic.codegen.cpp_enums writes it) and the templates
# spell (cpp_enum): the plan's knobs, then the layer kinds' attributes by family.
CPP_ENUMS: tuple[CppEnum, ...] = PLAN_ENUMS + LAYER_ENUMS


def template_dir() -> Path:
    """templates/ of a source checkout, else the copy installed inside the package."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent / "templates", package / "templates"):
        if (candidate / "session.cpp.j2").is_file():
            return candidate
    raise FileNotFoundError(f"Paleozoic's templates are missing (looked in "
                            f"{package.parent / 'templates'} and {package / 'templates'})")


def cpp_list(values: Iterable[Any]) -> Code:
    return Code("{" + ", ".join(str(int(v)) for v in values) + "}")


def cpp_float(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"cannot emit non-finite constant {value}")
    # Shortest text that reads back as the same float32 (attributes are float32 in ONNX).
    text = str(np.float32(value))
    return text if ("." in text or "e" in text) else text + ".0"


def cpp_bool(value: bool) -> str:
    return "true" if value else "false"


def cpp_element_type(dtype: str) -> str:
    """A tensor's element type (TensorInfo.dtype) as pz::ElementType spells it."""
    try:
        return cpp_enum(dtype, "ElementType")
    except KeyError as err:
        raise ValueError(f"no pz::ElementType for {dtype!r}: {err.args[0]}") from None


def cpp_enum(value: str, enum: str) -> str:
    """The pz:: enumerator of an IR value, for the enums enums.h declares (CPP_ENUMS)
    ("relu"|cpp_enum("Active") -> "pz::Active::kRelu")."""
    for table in CPP_ENUMS:
        if table.cpp_name == enum:
            return f"pz::{enum}::{table.cpp(value)}"
    raise KeyError(f"no enum {enum!r} in enums.h; known: "
                   f"{', '.join(t.cpp_name for t in CPP_ENUMS)}")


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        # The autoescape of this environment: text a template prints without one of the
        # escape filters must be unable to break out of its place (escape.guard).
        finalize=guard,
    )
    env.filters.update(cpp_list=cpp_list, cpp_float=cpp_float, cpp_bool=cpp_bool,
                       cpp_element_type=cpp_element_type,
                       cpp_enum=cpp_enum, cpp_string=cpp_string, cpp_comment=cpp_comment,
                       cpp_ident=cpp_ident, cmake_comment=cmake_comment,
                       cmake_name=cmake_name)
    return env
