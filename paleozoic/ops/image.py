"""The image family: Interp, ONNX Resize of the H and W axes of an NCHW tensor, nearest or
bilinear (TVM groups it as relax.op.image)."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.enums import CppEnum
from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError, nchw_input

# ONNX Resize: how an output pixel maps to the input and how nearest rounds, named in
# messages by the node's attributes that give them.
COORDINATES = CppEnum.sdk_prefixed("InterpCoordinates", "cnmlInterpCoordinateMode_t",
                                   "coordinate_transformation_mode", "CNML_INTERP_",
                                   "half_pixel", "pytorch_half_pixel", "align_corners",
                                   "asymmetric")
ROUNDINGS = CppEnum.sdk_prefixed("InterpRounding", "cnmlNearestNeighborRoundMode_t",
                                 "nearest_mode", "CNML_NEAREST_", "round_prefer_floor",
                                 "round_prefer_ceil", "floor", "ceil")

INTERP_MODES = ("nearest", "linear")


@dataclass(frozen=True)
class InterpAttrs:
    mode: str                        # one of INTERP_MODES
    size: tuple[int, int]            # output H, W
    coordinates: str                 # one of COORDINATES
    rounding: str = ""               # one of ROUNDINGS for nearest, "" for linear


def interp_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    n, c, _, _ = nchw_input(inputs, "Interp")
    mode = attrs["mode"]
    if mode not in INTERP_MODES:
        raise ShapeError(f"Interp mode {mode!r} is not one of {INTERP_MODES}")
    coordinates = attrs["coordinates"]
    if coordinates not in COORDINATES:
        raise ShapeError(f"Interp coordinates {coordinates!r} is not one of {COORDINATES.values}")
    rounding = attrs["rounding"]
    if mode == "nearest" and rounding not in ROUNDINGS:
        raise ShapeError(f"Interp nearest rounding {rounding!r} is not one of {ROUNDINGS.values}")
    if mode == "linear" and rounding:
        raise ShapeError(f"Interp linear takes no rounding (give \"\"), got {rounding!r}")
    size = [int(d) for d in attrs["size"]]
    if len(size) != 2 or min(size) < 1:
        raise ShapeError(f"Interp size must be [out_h, out_w] >= 1, got {attrs['size']}")
    return (n, c, size[0], size[1])


def interp_ops(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
    """One move per output for nearest, four multiply-adds for bilinear."""
    n, c, h, w = out
    return n * c * h * w * (4 if attrs["mode"] == "linear" else 1)


# attrs {"mode": "nearest" | "linear", "size": [out_h, out_w], "coordinates": one of
# COORDINATES, "rounding": one of ROUNDINGS for nearest, "" for linear}.
INTERP = LayerKind(name="Interp", shape=interp_shape, macs=interp_ops, attrs=InterpAttrs)

# The kinds of this family, collected by paleozoic.ops.
FAMILY = (INTERP,)
# The enums of this family, written into runtime_cpp/include/paleozoic/enums.h.
ENUMS = (COORDINATES, ROUNDINGS)
