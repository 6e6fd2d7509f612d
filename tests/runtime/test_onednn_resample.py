"""Resize on the oneDNN SDK as oneDNN's resampling, where its coordinates are ONNX's
(bilinear with half-pixel centres, nearest with an integer upscale of floor-rounded
asymmetric coordinates), fused after a convolution and alone; other modes stay on the
mock's kernels. Numbers against onnxruntime and a float64 evaluation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from paleozoic.runner.sdk import sdk_available

pytestmark = pytest.mark.skipif(not sdk_available("onednn"),
                                reason="the oneDNN SDK is not built")

# (mode, coordinate_transformation_mode, nearest_mode, input H x W, output H x W, oneDNN?)
CASES = [
    ("linear", "half_pixel", "round_prefer_floor", (8, 8), (16, 16), True),
    ("linear", "pytorch_half_pixel", "round_prefer_floor", (7, 5), (17, 11), True),
    ("linear", "half_pixel", "round_prefer_floor", (12, 12), (5, 7), True),
    ("nearest", "asymmetric", "floor", (6, 5), (12, 15), True),
    ("linear", "align_corners", "round_prefer_floor", (8, 8), (16, 16), False),
    ("nearest", "asymmetric", "floor", (6, 6), (9, 9), False),
]

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from paleozoic.optimize.plans import fuse_all, per_layer
    from paleozoic.pipeline import load_queue
    from paleozoic.runner.plan_runner import PlanRunner
    from paleozoic.accuracy.truth import Float64Reference

    mode, coords, nearest, (h, w), (ho, wo), offset = json.loads(sys.argv[1])
    r = np.random.default_rng(0)
    wgt = (r.standard_normal((8, 8, 1, 1)) * 0.5).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Resize", ["c", "", "", "sizes"], ["y"], name="resize",
                              mode=mode, coordinate_transformation_mode=coords,
                              nearest_mode=nearest)]
    graph = helper.make_graph(
        nodes, "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, ho, wo])],
        [numpy_helper.from_array(wgt, "w"),
         numpy_helper.from_array(np.array([1, 8, ho, wo], np.int64), "sizes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = (offset + r.standard_normal((1, 8, h, w)) * 10).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    truth = Float64Reference(model).run({"x": x})[0]
    queue = load_queue(model)
    errors = {}
    for name, plan in (("fuse-all", fuse_all(queue, mp=2)), ("per-layer", per_layer(queue, mp=2))):
        print("RUN", name, flush=True)
        y = next(iter(PlanRunner(queue, plan, sdk="onednn").run([x]).values()))
        scale = float(np.abs(truth).max())
        errors[name] = [float(np.abs(y - ref).max() / scale),
                        float(np.abs(y - truth).max() / scale),
                        float(np.abs(ref - truth).max() / scale)]
    print("ERRORS", json.dumps(errors), flush=True)
""")


# offset 1e3: interpolating values of 1e3 that differ by about 10 (cancellation in the
# weighted sums).
@pytest.mark.parametrize("offset", [0.0, 1000.0])
@pytest.mark.parametrize("mode,coords,nearest,size_in,size_out,mapped", CASES)
def test_resize(mode, coords, nearest, size_in, size_out, mapped, offset):
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS="2")
    args = json.dumps([mode, coords, nearest, size_in, size_out, offset])
    result = subprocess.run([sys.executable, "-c", _SCRIPT, args], capture_output=True,
                            text=True, env=env, cwd="/")
    assert result.returncode == 0, result.stderr[-2000:]
    execs = [line for line in result.stdout.splitlines()
             if line.startswith("onednn_verbose,exec,cpu,")]
    resampling = [e for e in execs if ",resampling," in e]
    assert not [e for e in execs if "ref:" in e], execs
    assert len(resampling) == (2 if mapped else 0), execs
    errors = json.loads(result.stdout.split("ERRORS ")[1])
    for plan, (vs_ort, ours, theirs) in errors.items():
        assert vs_ort < 1e-5, (plan, errors)
        assert ours <= 2 * theirs + 2.0 ** -22, (plan, errors)
