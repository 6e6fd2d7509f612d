"""The converter of Resize (the Interp layer)."""

from __future__ import annotations

from typing import Any

from paleozoic.frontend.convert.registry import OnnxNode, OnnxOp, converter, onnx_ops
from paleozoic.frontend.convert.values import Value
from paleozoic.frontend.convert.walker import Walker, act_of
from paleozoic.ops.image import COORDINATES as INTERP_COORDINATES
from paleozoic.ops.image import ROUNDINGS as INTERP_ROUNDING


def _check_resize(n: OnnxNode) -> list[str]:
    if int(n.attrs.get("antialias", 0)):
        return ["antialias=1; the SDK's interpolation has no antialiasing filter"]
    return []


onnx_ops({
    "Resize": OnnxOp("Interp", parameters=(1, 2, 3), check=_check_resize),
})


@converter("relax.image.resize2d")
def convert_resize2d(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    a = call.attrs
    if a.layout != "NCHW":
        raise w.fail(f"resize layout {a.layout} is not NCHW")
    method = {"nearest_neighbor": "nearest", "linear": "linear"}.get(str(a.method))
    if method is None:
        raise w.fail(f"resize method {a.method} is not supported (nearest and linear are)")
    coordinates = str(a.coordinate_transformation_mode)
    if coordinates not in INTERP_COORDINATES:
        raise w.fail(f"resize coordinate_transformation_mode {coordinates} is not supported "
                     f"({', '.join(INTERP_COORDINATES.values)} are)")
    rounding = str(a.rounding_method) or "round_prefer_floor"
    if method == "nearest" and rounding not in INTERP_ROUNDING:
        raise w.fail(f"resize nearest_mode {rounding} is not supported")
    shape = w.tensors[x.name].shape
    size = list(w.current_shape[2:]) if len(w.current_shape) == 4 else None
    if size is None:
        raise w.fail("resize needs a static output size")
    attrs = {"mode": method, "size": [int(size[0]), int(size[1])],
             "coordinates": coordinates, "rounding": rounding if method == "nearest" else ""}
    if len(shape) != 4:
        raise w.fail("resize is supported on NCHW tensors only")
    return w.emit("Interp", [x], attrs, part="resize")
