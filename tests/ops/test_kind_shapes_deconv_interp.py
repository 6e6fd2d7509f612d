"""Shape functions and counters of the Deconv and Interp kinds, and their agreement with the
runtime wrapper's shape function."""

from __future__ import annotations

import pytest

from paleozoic import _runtime as rt
from paleozoic.ops import KINDS, ShapeError


def deconv_attrs(co=6, k=3, s=2, pads=(1, 1, 1, 1), d=1, g=1, op=(0, 0)):
    return {"out_channels": co, "kernel": [k, k], "stride": [s, s], "pads": list(pads),
            "dilation": [d, d], "groups": g, "output_padding": list(op)}


@pytest.mark.parametrize("x, attrs, out", [
    ((1, 4, 5, 7), deconv_attrs(), (1, 6, 9, 13)),
    ((1, 4, 5, 7), deconv_attrs(op=(1, 1)), (1, 6, 10, 14)),
    ((2, 4, 5, 7), deconv_attrs(pads=(0, 0, 0, 0), op=(1, 0)), (2, 6, 12, 15)),
    ((1, 4, 5, 5), deconv_attrs(s=1, pads=(1, 0, 2, 1)), (1, 6, 6, 4)),
    ((1, 4, 5, 5), deconv_attrs(d=2, g=2), (1, 6, 11, 11)),
    ((1, 8, 4, 4), deconv_attrs(co=8, k=4, g=8), (1, 8, 8, 8)),
    ((1, 4, 3, 3), deconv_attrs(k=1, s=3, pads=(0, 0, 0, 0), op=(2, 1)), (1, 6, 9, 8)),
])
def test_deconv_shape_matches_onnx_and_the_runtime(x, attrs, out) -> None:
    assert KINDS["Deconv"].output_shape(attrs, [x]) == out
    assert rt.output_shape("deconv", [list(x)], **attrs) == out


def test_deconv_output_padding_defaults_to_zero() -> None:
    attrs = deconv_attrs()
    del attrs["output_padding"]
    assert KINDS["Deconv"].output_shape(attrs, [(1, 4, 5, 7)]) == (1, 6, 9, 13)


@pytest.mark.parametrize("x, attrs, match", [
    ((1, 4, 5), deconv_attrs(), "NCHW"),
    ((1, 4, 5, 5), deconv_attrs(g=3), "groups=3 does not divide"),
    ((1, 4, 5, 5), deconv_attrs(co=5, g=2), "groups=2 does not divide"),
    ((1, 4, 5, 5), deconv_attrs(op=(2, 0)), "output_padding"),
    ((1, 4, 5, 5), deconv_attrs(s=1, op=(1, 1)), "output_padding"),
    ((1, 4, 5, 5), deconv_attrs(pads=(-1, 0, 0, 0)), "pads >= 0"),
    ((1, 4, 1, 1), deconv_attrs(k=1, s=1, pads=(1, 0, 0, 0)), "crop away the whole"),
])
def test_deconv_shape_errors(x, attrs, match) -> None:
    with pytest.raises(ShapeError, match=match):
        KINDS["Deconv"].output_shape(attrs, [x])


def test_deconv_macs_weights_and_flags() -> None:
    deconv = KINDS["Deconv"]
    attrs = deconv_attrs(co=6, k=3, g=2)
    x = (2, 4, 5, 7)
    out = deconv.output_shape(attrs, [x])
    # each input pixel meets co / groups * kh * kw filter taps
    assert deconv.macs(attrs, [x], out) == 2 * 4 * 5 * 7 * 3 * 9
    assert deconv.weight_roles == ("weight",) and deconv.optional_roles == ("bias",)
    assert deconv.fusible


def interp_attrs(mode="nearest", size=(12, 9), coordinates="half_pixel",
                 rounding="round_prefer_floor"):
    return {"mode": mode, "size": list(size), "coordinates": coordinates,
            "rounding": rounding if mode == "nearest" else ""}


@pytest.mark.parametrize("coordinates", ["half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric"])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_interp_shape(mode, coordinates) -> None:
    attrs = interp_attrs(mode, (12, 9), coordinates)
    assert KINDS["Interp"].output_shape(attrs, [(2, 3, 5, 7)]) == (2, 3, 12, 9)
    assert KINDS["Interp"].output_shape(interp_attrs(mode, (3, 5), coordinates),
                                        [(1, 2, 8, 8)]) == (1, 2, 3, 5)


@pytest.mark.parametrize("x, attrs, match", [
    ((1, 3, 5), interp_attrs(), "NCHW"),
    ((1, 3, 5, 5), interp_attrs(mode="cubic"), "mode 'cubic'"),
    ((1, 3, 5, 5), interp_attrs(coordinates="tf_crop_and_resize"), "coordinates"),
    ((1, 3, 5, 5), interp_attrs(rounding="simple"), "rounding 'simple'"),
    ((1, 3, 5, 5), dict(interp_attrs(mode="linear"), rounding="floor"), "takes no rounding"),
    ((1, 3, 5, 5), interp_attrs(size=(0, 4)), "size must be"),
    ((1, 3, 5, 5), interp_attrs(size=(4,)), "size must be"),
])
def test_interp_shape_errors(x, attrs, match) -> None:
    with pytest.raises(ShapeError, match=match):
        KINDS["Interp"].output_shape(attrs, [x])


def test_interp_counts_and_flags() -> None:
    interp = KINDS["Interp"]
    out = (1, 2, 6, 4)
    assert interp.macs(interp_attrs("nearest"), [(1, 2, 3, 2)], out) == 48
    assert interp.macs(interp_attrs("linear"), [(1, 2, 3, 2)], out) == 4 * 48
    assert interp.weight_roles == () and interp.fusible
