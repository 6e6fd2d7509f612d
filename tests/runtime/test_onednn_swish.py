"""SiLU as exporters write it (Sigmoid, then Mul of the sigmoid's input by its output) on the
oneDNN SDK: the SDK's own SiLU over a convolution's destination when the value comes from
one (runtime_cpp/backends/onednn/swish.cpp), one eltwise_swish primitive when the sigmoid
reads a block input; never the logistic with a binary_mul post-op that oneDNN 3.2 runs on its
reference kernel. Numbers against float64, around the bend and saturated."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from paleozoic.runner.sdk import sdk_available

pytestmark = pytest.mark.skipif(not sdk_available("onednn"),
                                reason="the oneDNN SDK is not built")

_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from paleozoic.runner.sdk import runtime_module

    out, scale = sys.argv[1], float(sys.argv[2])
    r = np.random.default_rng(0)
    x_value = (r.standard_normal((1, 16, 12, 12)) * scale).astype(np.float32)
    w = (r.standard_normal((16, 16, 3, 3)) * 0.3).astype(np.float32)
    b = r.standard_normal(16).astype(np.float32)
    for sdk in ("mock", "onednn"):
        s = runtime_module(sdk).Session()
        x = s.input("x", [1, 16, 12, 12])
        conv = s.conv("conv", x, out_channels=16, kernel=(3, 3), pads=(1, 1, 1, 1))
        conv.config(w, b)
        sig = s.active("sig", conv.output, "sigmoid")
        silu = s.binary("silu", conv.output, sig.output, "mul")
        sig2 = s.active("sig2", x, "sigmoid")          # reads the block's input
        silu2 = s.binary("silu2", sig2.output, x, "mul")  # operands the other way round
        both = s.add("both", silu.output, silu2.output)
        s.mark_output(both.output)
        s.compile_block("b", fuse=True, mp=2, layers=[conv, sig, silu, sig2, silu2, both])
        s.set_input(x, x_value)
        print("RUN", sdk, flush=True)
        s.run()
        s.run()
        np.save(f"{out}/{sdk}.npy", np.array(s.get(both.output)))
    np.save(f"{out}/x.npy", x_value); np.save(f"{out}/w.npy", w); np.save(f"{out}/b.npy", b)
""")


def _truth(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, w, b = (a.astype(np.float64) for a in (x, w, b))
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 16, 12, 12))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("oc,nchw->nohw", w[:, :, i, j], padded[:, :, i:i + 12, j:j + 12])
    conv += b[None, :, None, None]

    def silu(v: np.ndarray) -> np.ndarray:
        return v * 0.5 * (1.0 + np.tanh(0.5 * v))  # no overflow at -1e3

    return silu(conv) + silu(x)


def _assert_near_truth(folder, truth: np.ndarray) -> None:
    """oneDNN's output within 1e-6 of the largest true value, and at most 4x the mock's."""
    scale = np.abs(truth).max()
    mock, onednn = np.load(folder / "mock.npy"), np.load(folder / "onednn.npy")
    mock_err = np.abs(mock - truth).max() / scale
    onednn_err = np.abs(onednn - truth).max() / scale
    assert onednn_err < 1e-6, (onednn_err, mock_err)
    assert onednn_err <= 4 * mock_err + 1e-7, (onednn_err, mock_err)


# 4: around the nonlinearity's bend; 1e3: saturated, where x * sigmoid(x) is x or 0 up to
# float32's rounding of the large values.
@pytest.mark.parametrize("scale", [4.0, 1000.0])
def test_silu_is_one_swish_and_accurate(tmp_path, scale):
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS="2")
    result = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path), str(scale)],
                            capture_output=True,
                            text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    execs = [line for line in result.stdout.split("RUN onednn")[1].splitlines()
             if line.startswith("onednn_verbose,exec,cpu,")]
    assert not [e for e in execs if "ref:" in e], execs
    # The convolution's SiLU is the SDK's own pass over its destination (swish.cpp: oneDNN's
    # eltwise_swish costs 3x the convolution); never a logistic with a binary_mul.
    convs = [e for e in execs if ",convolution," in e]
    assert len(convs) == 2 and not [c for c in convs if "binary_mul" in c or "logistic" in c]
    swish = [e for e in execs if ",eltwise," in e and "alg:eltwise_swish" in e]
    assert len(swish) == 2, execs  # the sigmoid of the block input, both forwards
    truth = _truth(*(np.load(tmp_path / f"{n}.npy") for n in ("x", "w", "b")))
    _assert_near_truth(tmp_path, truth)


_HARDSWISH = textwrap.dedent("""
    import sys
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from paleozoic.optimize.plans import fuse_all
    from paleozoic.pipeline import load_queue
    from paleozoic.runner.plan_runner import PlanRunner

    out, scale, form = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    r = np.random.default_rng(1)
    w = (r.standard_normal((16, 16, 1, 1)) * 0.5).astype(np.float32)
    b = r.standard_normal(16).astype(np.float32)
    consts = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]

    def hardswish(v, name):
        if form == "onnx":
            return [helper.make_node("HardSwish", [v], [name], name=name)]
        # Paddle's export: Add 3, Clip 0..6, Mul by the value, then Div 6 (or none: 6x)
        last = name + "_mul" if form == "paddle" else name
        return [helper.make_node("Add", [v, "three"], [name + "_add"], name=name + "_add"),
                helper.make_node("Clip", [name + "_add", "zero", "six"], [name + "_clip"],
                                 name=name + "_clip"),
                helper.make_node("Mul", [v, name + "_clip"], [last], name=name + "_mul")] + (
                [helper.make_node("Div", [last, "six"], [name], name=name + "_div")]
                if form == "paddle" else [])

    if form != "onnx":
        consts += [numpy_helper.from_array(np.array(v, np.float32), n)
                   for n, v in (("three", 3.0), ("zero", 0.0), ("six", 6.0))]
    nodes = ([helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv")]
             + hardswish("c", "h") + hardswish("x", "hx")
             + [helper.make_node("Add", ["h", "hx"], ["y"], name="sum")])
    shape = [1, 16, 12, 12]
    graph = helper.make_graph(
        nodes, "hardswish", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    queue = load_queue(model)
    x = (r.standard_normal((1, 16, 12, 12)) * scale).astype(np.float32)
    for sdk in ("mock", "onednn"):
        runner = PlanRunner(queue, fuse_all(queue, mp=2), sdk=sdk)
        print("RUN", sdk, flush=True)
        y = runner.run([x])
        runner.session.run()
        np.save(f"{out}/{sdk}.npy", next(iter(y.values())))
    np.save(f"{out}/x.npy", x); np.save(f"{out}/w.npy", w); np.save(f"{out}/b.npy", b)
""")


@pytest.mark.parametrize("form", ["onnx", "paddle", "undivided"])
@pytest.mark.parametrize("scale", [4.0, 1000.0])
def test_hardswish_is_one_eltwise_and_accurate(tmp_path, scale, form):
    """HardSwish is one eltwise_hardswish, the convolution's post-op or the primitive reading
    a block input, in each form the layer queue holds it: the ONNX op's (Scale x + 3, Clip
    0..6, Scale / 6, Mul by x), Paddle's export (Add 3, Clip, Mul by x, Div 6: a binary_mul
    post-op by a whole tensor cost 20x the binary it followed, PP-OCR's classifier 1.2x
    onnxruntime), and x * relu6(x + 3) without the division (a factor 6 after the eltwise)."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS="2")
    result = subprocess.run([sys.executable, "-c", _HARDSWISH, str(tmp_path), str(scale),
                             form], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    execs = [line for line in result.stdout.split("RUN onednn")[1].splitlines()
             if line.startswith("onednn_verbose,exec,cpu,")]
    assert not [e for e in execs if "ref:" in e], execs
    convs = [e for e in execs if ",convolution," in e]
    assert len(convs) == 2 and all("eltwise_hardswish" in c for c in convs), convs
    if form != "undivided":
        assert not [e for e in execs if "binary_mul" in e or "alg:binary_mul" in e], execs
        assert len([e for e in execs if "alg:eltwise_hardswish" in e]) == 2, execs
    # Undivided on the block input, the factor 6 would be a post-op of the eltwise primitive,
    # which oneDNN 3.2 runs on its reference kernel: the chain splits (no `ref:` above).
    x, w, b = (np.load(tmp_path / f"{n}.npy").astype(np.float64) for n in ("x", "w", "b"))
    conv = np.einsum("oc,nchw->nohw", w[:, :, 0, 0], x) + b[None, :, None, None]

    def hardswish(v: np.ndarray) -> np.ndarray:
        return v * np.clip(v + 3.0, 0.0, 6.0) / (1.0 if form == "undivided" else 6.0)

    truth = hardswish(conv) + hardswish(x)
    _assert_near_truth(tmp_path, truth)
