"""Shape functions of the Binary, Slice and PRelu kinds and the relu1 activation."""

from __future__ import annotations

import pytest

from paleozoic.ops import KINDS, ShapeError


@pytest.mark.parametrize("b", [(2, 3, 4, 5), (1, 3, 1, 1), (3, 1, 1), (1, 1, 1, 1), (1,),
                               (1, 1, 4, 5), (4, 5), (5,), (2, 1, 4, 1)])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_binary_broadcasts_b_to_a(op: str, b: tuple[int, ...]) -> None:
    assert KINDS["Binary"].output_shape({"op": op}, [(2, 3, 4, 5), b]) == (2, 3, 4, 5)


@pytest.mark.parametrize("a, b, op, match", [
    ((2, 3, 4, 5), (1, 3, 1, 2), "add", r"b \(1, 3, 1, 2\) does not broadcast to a"),
    ((2, 3, 4, 5), (3, 4), "mul", "does not broadcast"),
    ((3, 4), (2, 3, 4), "sub", "does not broadcast"),      # b's rank above a's
    ((1, 3, 1, 1), (1, 3, 4, 4), "add", "does not broadcast"),  # only b broadcasts
    ((2, 3, 4, 5), (1, 3, 1, 1), "div", "div needs equal shapes"),
    ((2, 3), (2, 3), "mod", "Binary op 'mod' is not one of"),
])
def test_binary_shape_errors(a, b, op, match) -> None:
    with pytest.raises(ShapeError, match=match):
        KINDS["Binary"].output_shape({"op": op}, [a, b])


def test_binary_div_equal_shapes_and_arity() -> None:
    assert KINDS["Binary"].output_shape({"op": "div"}, [(4, 5), (4, 5)]) == (4, 5)
    with pytest.raises(ShapeError, match="takes 2 input"):
        KINDS["Binary"].output_shape({"op": "add"}, [(4, 5)])


@pytest.mark.parametrize("x, begin, end, step, out", [
    ((2, 8, 7, 9), [0, 1, 2, 0], [2, 8, 7, 9], [1, 3, 2, 4], (2, 3, 3, 3)),
    ((1, 6, 5, 5), [0, 2, 0, 0], [1, 5, 5, 5], [1, 1, 1, 1], (1, 3, 5, 5)),
    ((10,), [3], [10], [3], (3,)),
    ((4, 4), [0, 0], [4, 4], [1, 1], (4, 4)),
])
def test_slice_shape(x, begin, end, step, out) -> None:
    attrs = {"begin": begin, "end": end, "step": step}
    assert KINDS["Slice"].output_shape(attrs, [x]) == out


@pytest.mark.parametrize("begin, end, step, match", [
    ([0, 0], [1, 3], [1, 1], "one begin, end and step per axis"),
    ([0, 0, 0], [1, 4, 6], [1, 1, 1], r"axis 1 \(size 3\) from 0 to 4"),
    ([0, 2, 0], [1, 2, 6], [1, 1, 1], "out of range or empty"),
    ([0, 0, 0], [1, 3, 6], [1, 1, 0], "step 0"),
    ([-1, 0, 0], [1, 3, 6], [1, 1, 1], "from -1"),
])
def test_slice_shape_errors(begin, end, step, match) -> None:
    with pytest.raises(ShapeError, match=match):
        KINDS["Slice"].output_shape({"begin": begin, "end": end, "step": step}, [(1, 3, 6)])


def test_prelu_shape_and_weights() -> None:
    prelu = KINDS["PRelu"]
    assert prelu.output_shape({}, [(1, 4, 5, 5)]) == (1, 4, 5, 5)
    assert prelu.weight_roles == ("slope",) and prelu.fusible
    with pytest.raises(ShapeError, match="channel axis"):
        prelu.output_shape({}, [(7,)])


def test_relu1_is_an_activation() -> None:
    assert KINDS["Active"].output_shape({"function": "relu1"}, [(1, 2)]) == (1, 2)
    with pytest.raises(ShapeError):
        KINDS["Active"].output_shape({"function": "gelu"}, [(1, 2)])


@pytest.mark.parametrize("kind", ["Binary", "Slice", "PRelu"])
def test_new_kinds_are_fusible(kind: str) -> None:
    assert KINDS[kind].fusible
