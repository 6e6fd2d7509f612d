"""The SDK's Clip op (ClipLayer) against numpy on both SDKs: any bounds, infinite ones,
lower above upper (ONNX's min(max(x, lower), upper): upper everywhere), nan kept, -0.0
kept, alone and fused after a convolution."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.runner.sdk import runtime_module, sdk_available

SDKS = [s for s in ("mock", "onednn") if sdk_available(s)]
BOUNDS = [(1e-12, np.inf), (-np.inf, -2.0), (-0.5, 0.25), (2.0, 1.0), (0.0, 0.0)]


def _x() -> np.ndarray:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 4, 5, 6)) * 3).astype(np.float32)
    x.reshape(-1)[:7] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-13, -1e-45]
    return x


def _want(x: np.ndarray, lower: float, upper: float) -> np.ndarray:
    t = np.where(x < np.float32(lower), np.float32(lower), x)
    return np.where(t > np.float32(upper), np.float32(upper), t).astype(np.float32)


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("lower,upper", BOUNDS)
def test_clip_against_numpy(sdk, lower, upper):
    x = _x()
    s = runtime_module(sdk).Session()
    t = s.input("x", list(x.shape))
    clip = s.clip("clip", t, lower=lower, upper=upper)
    s.mark_output(clip.output)
    s.compile_block("b", fuse=False, mp=2, layers=[clip])
    s.set_input(t, x)
    s.run()
    got = np.array(s.get(clip.output))
    np.testing.assert_array_equal(got.view(np.uint32), _want(x, lower, upper).view(np.uint32))


@pytest.mark.parametrize("sdk", SDKS)
def test_clip_as_a_convolutions_post_op(sdk):
    x = _x()
    x[~np.isfinite(x)] = 0.0
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 4, 1, 1)).astype(np.float32)
    outs = []
    for fuse in (False, True):
        s = runtime_module(sdk).Session()
        t = s.input("x", list(x.shape))
        conv = s.conv("conv", t, out_channels=4, kernel=(1, 1))
        conv.config(w, None)
        clip = s.clip("clip", conv.output, lower=-0.5, upper=0.75)
        s.mark_output(clip.output)
        s.compile_block("b", fuse=fuse, mp=2, layers=[conv, clip])
        s.set_input(t, x)
        s.run()
        outs.append(np.array(s.get(clip.output)))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[1].min() == np.float32(-0.5) and outs[1].max() == np.float32(0.75)


@pytest.mark.parametrize("sdk", SDKS)
def test_nan_bounds_are_refused(sdk):
    s = runtime_module(sdk).Session()
    t = s.input("x", [2, 3])
    with pytest.raises(Exception, match="clip bounds must be numbers"):
        s.clip("clip", t, lower=float("nan"), upper=1.0)
