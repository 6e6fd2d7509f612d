"""Post-op chains on the oneDNN SDK whose ops are not next to each other in the block: TVM's
order puts another branch's ops between a convolution and the ReLU that reads it
(ShuffleNetV2: a channel split between them), and the fusion still runs the ReLU as the
convolution's post-op (the step runs it early, its inputs being ready), with the numbers of
the mock, the reference."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from paleozoic.sdk import sdk_available

pytestmark = pytest.mark.skipif(not sdk_available("onednn"),
                                reason="the oneDNN SDK is not built")

_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from paleozoic.sdk import runtime_module

    out = sys.argv[1]
    r = np.random.default_rng(0)
    x_value = (r.standard_normal((1, 16, 10, 10)) * 3).astype(np.float32)
    w = (r.standard_normal((8, 8, 1, 1)) * 0.5).astype(np.float32)
    b = r.standard_normal(8).astype(np.float32)
    for sdk in ("mock", "onednn"):
        s = runtime_module(sdk).Session()
        x = s.input("x", [1, 16, 10, 10])
        right = s.slice("right", x, begin=[0, 8, 0, 0], end=[1, 16, 10, 10], step=[1, 1, 1, 1])
        conv = s.conv("conv", right.output, out_channels=8, kernel=(1, 1))
        conv.config(w, b)
        left = s.slice("left", x, begin=[0, 0, 0, 0], end=[1, 8, 10, 10], step=[1, 1, 1, 1])
        relu = s.active("relu", conv.output, "relu")  # after `left`, as TVM orders it
        both = s.concat("both", [left.output, relu.output], axis=1)
        s.mark_output(both.output)
        s.compile_block("b", fuse=True, mp=2, layers=[right, conv, left, relu, both])
        s.set_input(x, x_value)
        print("RUN", sdk, flush=True)
        s.run()
        np.save(f"{out}/{sdk}.npy", np.array(s.get(both.output)))
""")


def test_relu_after_another_branch_is_a_post_op(tmp_path):
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS="2")
    result = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path)], capture_output=True,
                            text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    onednn_lines = result.stdout.split("RUN onednn", 1)[1].splitlines()
    executed = [line for line in onednn_lines if line.startswith("onednn_verbose,exec,cpu,")]
    convs = [line for line in executed if ",convolution," in line]
    assert len(convs) == 1 and "eltwise_relu" in convs[0], executed
    assert not [line for line in executed if ",eltwise," in line], executed
    # The same block on the mock (one op at a time, in the block's order): equal numbers,
    # up to the convolution's summation order.
    mock, onednn = np.load(tmp_path / "mock.npy"), np.load(tmp_path / "onednn.npy")
    np.testing.assert_allclose(onednn, mock, rtol=0, atol=1e-5 * np.abs(mock).max())
    assert (onednn[:, 8:] >= 0).all() and np.array_equal(onednn[:, :8], mock[:, :8])
