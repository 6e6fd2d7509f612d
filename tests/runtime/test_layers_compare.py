"""The SDK's comparison and logic ops (Binary equal .. xor, Unary not) and the host's
Where (HostWhereLayer) against numpy, on both SDKs, with the values that break a careless
kernel: nan (every comparison false but not-equal; nonzero, so true to the logic ops), the
infinities, and -0.0 == 0.0; element-wise and broadcast (the Cycle* ops) forms."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.runner.sdk import runtime_module, sdk_available

SDKS = [s for s in ("mock", "onednn") if sdk_available(s)]

NUMPY = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "and": lambda a, b: (a != 0) & (b != 0), "or": lambda a, b: (a != 0) | (b != 0),
    "xor": lambda a, b: (a != 0) ^ (b != 0),
}

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, 1e-45],
                    np.float32)


def _operands(b_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """a [2, 9, 9] holding every pair of SPECIALS (a[.., i, j] = SPECIALS[i]), plus normals;
    b of b_shape with SPECIALS along its last axis where that axis is 9."""
    rng = np.random.default_rng(0)
    a = np.empty((2, 9, 9), np.float32)
    a[0] = SPECIALS[:, None]
    a[1] = rng.standard_normal((9, 9))
    b = rng.standard_normal(b_shape).astype(np.float32)
    if b_shape[-1] == 9:
        b[..., :] = SPECIALS
    b.reshape(-1)[:3] = a.reshape(-1)[:3]  # some equal pairs where b is not SPECIALS
    return a, b


def _run(sdk: str, build, inputs: dict[str, np.ndarray], fuse: bool) -> np.ndarray:
    s = runtime_module(sdk).Session()
    tensors = {n: s.input(n, list(v.shape)) for n, v in inputs.items()}
    layers = build(s, tensors)
    s.mark_output(layers[-1].output)
    s.compile_block("b", fuse=fuse, mp=2, layers=layers)
    for n, v in inputs.items():
        s.set_input(tensors[n], v)
    s.run()
    return np.array(s.get(layers[-1].output))


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("b_shape", [(2, 9, 9), (9,), (1, 9, 1)], ids=["equal", "row", "col"])
@pytest.mark.parametrize("op", list(NUMPY))
def test_comparisons_and_logic_against_numpy(sdk, op, b_shape):
    a, b = _operands(b_shape)
    got = _run(sdk, lambda s, t: [s.binary(op, t["a"], t["b"], op)], {"a": a, "b": b},
               fuse=False)
    want = NUMPY[op](a, b).astype(np.float32)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("sdk", SDKS)
def test_not_and_a_fused_chain(sdk):
    """Not(x == y) and a comparison feeding a logic op inside one fusion op."""
    a, b = _operands((2, 9, 9))

    def build(s, t):
        eq = s.binary("eq", t["a"], t["b"], "equal")
        ne = s.unary("ne", eq.output, "not")
        gt = s.binary("gt", t["a"], t["b"], "greater")
        return [eq, ne, gt, s.binary("both", ne.output, gt.output, "and")]

    got = _run(sdk, build, {"a": a, "b": b}, fuse=True)
    want = ((a != b) & (a > b)).astype(np.float32)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("sdk", SDKS)
def test_unequal_shapes_need_the_broadcast_form(sdk):
    """b broadcasts to a, never a to b: the layer names the rule."""
    s = runtime_module(sdk).Session()
    a, b = s.input("a", [9]), s.input("b", [2, 9])
    lt = s.binary("lt", a, b, "less")
    s.mark_output(lt.output)
    with pytest.raises(Exception, match="lt.*b must broadcast to a"):
        s.compile_block("b", fuse=False, mp=1, layers=[lt])


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("then,otherwise", [("input", "input"), (-np.inf, "input"),
                                            ("input", 0.0), (1.0, 0.0)])
def test_host_where_selects_without_mixing(sdk, then, otherwise):
    """cond != 0 ? then : otherwise, each broadcast: an inf or nan on the unselected side
    never reaches the result (a blend c*x + (1-c)*y would make it nan)."""
    rng = np.random.default_rng(1)
    cond = (rng.random((1, 4, 1)) < 0.5).astype(np.float32)
    cond[0, 0, 0], cond[0, 1, 0] = 1.0, 0.0
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    x[0, 1, :] = np.nan   # unselected where cond is 0
    y[0, :] = np.inf      # unselected where cond is 1
    inputs = {"cond": cond}
    if then == "input":
        inputs["x"] = x
    if otherwise == "input":
        inputs["y"] = y

    def build(s, t):
        kwargs = {"then": "input" if then == "input" else float(then),
                  "otherwise": "input" if otherwise == "input" else float(otherwise)}
        values = [t[n] for n in ("x", "y") if n in t]
        return [s.host_where("where", [t["cond"], *values], shape=[3, 4, 5], **kwargs)]

    got = _run(sdk, build, inputs, fuse=False)
    want = np.broadcast_to(np.where(cond != 0, x if then == "input" else np.float32(then),
                                    y if otherwise == "input" else np.float32(otherwise)),
                           (3, 4, 5))
    np.testing.assert_array_equal(got, want)  # nan where want has nan, nowhere else
