"""The Jinja environment: strict (undefined names are errors), with small C++ helpers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import jinja2
import numpy as np

from paleozoic.ops.enums import ACTIVE, BINARY, INTERP_COORDINATES, INTERP_ROUNDING

def template_dir() -> Path:
    """templates/ of a source checkout, else the copy installed inside the package."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent / "templates", package / "templates"):
        if (candidate / "session.cpp.j2").is_file():
            return candidate
    raise FileNotFoundError(f"Paleozoic's templates are missing (looked in "
                            f"{package.parent / 'templates'} and {package / 'templates'})")


def cpp_list(values: Iterable[Any]) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def cpp_float(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"cannot emit non-finite constant {value}")
    # Shortest text that reads back as the same float32 (attributes are float32 in ONNX).
    text = str(np.float32(value))
    return text if ("." in text or "e" in text) else text + ".0"


def cpp_bool(value: bool) -> str:
    return "true" if value else "false"


def active_enum(function: str) -> str:
    return ACTIVE.cpp(function)


def binary_enum(op: str) -> str:
    return BINARY.cpp(op)


def interp_coordinates(mode: str) -> str:
    return INTERP_COORDINATES.cpp(mode)


def interp_rounding(mode: str) -> str:
    return INTERP_ROUNDING.cpp(mode)


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(cpp_list=cpp_list, cpp_float=cpp_float, cpp_bool=cpp_bool,
                       active_enum=active_enum, binary_enum=binary_enum,
                       interp_coordinates=interp_coordinates, interp_rounding=interp_rounding)
    return env
