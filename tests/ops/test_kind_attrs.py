"""Each kind's attributes are a dataclass with their defaults (LayerKind.attrs): operators
are completed on creation, and unknown or missing attributes are refused by name."""

from __future__ import annotations

import dataclasses

import pytest

from paleozoic.ir.layer import Operator
from paleozoic.ops import KINDS, ShapeError


def test_defaults_are_filled_in_once() -> None:
    op = Operator("Deconv", {"out_channels": 4, "kernel": [2, 2], "stride": [2, 2],
                             "pads": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1})
    assert op.attrs["output_padding"] == [0, 0]
    pool = Operator("Pool", {"mode": "max", "kernel": [2, 2], "stride": [2, 2],
                             "pads": [0, 0, 0, 0]})
    assert pool.attrs["ceil_mode"] is False and pool.attrs["count_include_pad"] is False
    interp = Operator("Interp", {"mode": "linear", "size": [4, 4], "coordinates": "half_pixel"})
    assert interp.attrs["rounding"] == ""


def test_given_order_is_kept() -> None:
    attrs = {"stride": [1, 1], "mode": "avg", "kernel": [3, 3], "pads": [1, 1, 1, 1]}
    assert list(Operator("Pool", attrs).attrs)[:4] == list(attrs)


def test_unknown_and_missing_attributes_are_refused() -> None:
    with pytest.raises(ShapeError, match="no attribute.*'kernal'"):
        KINDS["Pool"].complete_attrs({"mode": "max", "kernal": [2, 2]})
    with pytest.raises(ShapeError, match="needs attribute 'axis'"):
        KINDS["Softmax"].complete_attrs({})


def test_complete_attributes_come_back_as_a_copy_in_their_order() -> None:
    pool = Operator("Pool", {"stride": [2, 2], "mode": "max", "kernel": [2, 2],
                             "pads": [0, 0, 0, 0]}).attrs
    again = KINDS["Pool"].complete_attrs(pool)
    assert again == pool and list(again) == list(pool) and again is not pool
    again["mode"] = "avg"               # the caller's copy: the operator's stays
    assert pool["mode"] == "max"
    assert KINDS["Pool"].runtime_attrs(pool)["mode"] == "max"
    # As many attributes as the kind has, one of them unknown, is not complete.
    misspelt = {("kernal" if name == "kernel" else name): value for name, value in pool.items()}
    with pytest.raises(ShapeError, match="no attribute.*'kernal'"):
        KINDS["Pool"].complete_attrs(misspelt)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_declares_its_attributes(kind: str) -> None:
    assert dataclasses.is_dataclass(KINDS[kind].attrs)
