"""The Jinja environment: strict (undefined names are errors), with small C++ helpers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import jinja2
import numpy as np

from paleozoic.ops.enums import ACTIVE, BINARY, INTERP_COORDINATES, INTERP_ROUNDING

# The SDK op of a Binary layer, as pz::BinaryLayer picks it: equal shapes use the element-wise
# ops, a broadcast b the Broadcast* ops; RealDiv has no broadcast form.
_BINARY_SDK = {"add": ("Add", "BroadcastAdd"), "sub": ("Sub", "BroadcastSub"),
               "mul": ("Mult", "BroadcastMult"), "div": ("RealDiv", "RealDiv")}


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


def binary_sdk(op: str, broadcast: bool) -> str:
    """The CNML op name (cnmlCreate<name>Op) of a Binary layer."""
    return _BINARY_SDK[op][1 if broadcast else 0]


def interp_coordinates(mode: str, sdk: bool = False) -> str:
    return INTERP_COORDINATES.sdk(mode) if sdk else INTERP_COORDINATES.cpp(mode)


def interp_rounding(mode: str, sdk: bool = False) -> str:
    return INTERP_ROUNDING.sdk(mode) if sdk else INTERP_ROUNDING.cpp(mode)


def deconv_needs_v2(attrs: dict[str, Any]) -> bool:
    """pz::DeconvLayer's choice of param creator: CNML's cnmlCreateDeconvOpParam (crops only)
    unless the layer is dilated or its output padding reaches past the bottom / right pad,
    which need the mock's cnmlCreateDeconvOpParam_V2."""
    oh, ow = attrs["output_padding"]
    _, bottom, _, right = attrs["pads"]
    return list(attrs["dilation"]) != [1, 1] or oh > bottom or ow > right


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
                       active_enum=active_enum, binary_enum=binary_enum, binary_sdk=binary_sdk,
                       interp_coordinates=interp_coordinates, interp_rounding=interp_rounding,
                       deconv_needs_v2=deconv_needs_v2)
    return env
