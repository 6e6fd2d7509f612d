"""Post-op chains on the oneDNN SDK whose ops are not next to each other in the block: TVM's
order puts another branch's ops between a convolution and the ReLU that reads it
(ShuffleNetV2: a channel split between them), and the fusion still runs the ReLU as the
convolution's post-op (the step runs it early, its inputs being ready), with the numbers of
the mock, the reference."""

from __future__ import annotations

import json
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


_SHUFFLE = textwrap.dedent("""
    import json, sys
    import numpy as np
    from paleozoic.runner.sdk import runtime_module

    out = sys.argv[1]
    r = np.random.default_rng(1)
    # Small integers: the convolution is exact in any summation order, so every value the
    # layout ops move is known exactly.
    x_value = r.integers(-50, 50, (1, 8, 6, 5)).astype(np.float32)
    w = r.integers(-3, 4, (16, 8, 1, 1)).astype(np.float32)
    b = r.integers(-9, 10, 16).astype(np.float32)
    # (name, layers after the convolution): a channel shuffle then a channel split as
    # ShuffleNetV2 writes them; a transpose to NHWC and a flatten; a chain whose middle
    # reshape is a view on neither side (transpose, merge, transpose).
    chains = {
        "shuffle": [("reshape", {"shape": [1, 2, 8, 6, 5]}),
                    ("transpose", {"perm": [0, 2, 1, 3, 4]}),
                    ("reshape", {"shape": [1, 16, 6, 5]})],
        "flatten": [("transpose", {"perm": [0, 2, 3, 1]}), ("reshape", {"shape": [1, 480]})],
        "tangle": [("transpose", {"perm": [0, 2, 1, 3]}), ("reshape", {"shape": [1, 96, 5]}),
                   ("transpose", {"perm": [0, 2, 1]})],
        # Swin's patch merging: every other row and column (steps 2, one from an offset).
        "strided": [("slice", {"begin": [0, 0, 1, 0], "end": [1, 16, 6, 5],
                               "step": [1, 1, 2, 2]})],
    }
    for sdk in ("mock", "onednn"):
        for name, steps in chains.items():
            s = runtime_module(sdk).Session()
            x = s.input("x", [1, 8, 6, 5])
            conv = s.conv("conv", x, out_channels=16, kernel=(1, 1))
            conv.config(w, b)
            layers, value = [conv], conv.output
            for k, (kind, attrs) in enumerate(steps):
                layer = getattr(s, kind)(f"{kind}{k}", value, **attrs)
                layers.append(layer)
                value = layer.output
            outs = [value]
            if name == "shuffle":  # the split: two channel slices, each read by a conv
                halves = [s.slice(f"half{h}", value, begin=[0, 8 * h, 0, 0],
                                  end=[1, 8 * h + 8, 6, 5], step=[1, 1, 1, 1]) for h in (0, 1)]
                layers += halves
                outs = [h.output for h in halves]
            for o in outs:
                s.mark_output(o)
            s.compile_block("b", fuse=True, mp=2, layers=layers)
            s.set_input(x, x_value)
            print("RUN", sdk, name, flush=True)
            s.run()
            print("END", flush=True)
            print("IMPL", json.dumps(s.implementations()), flush=True)
            for i, o in enumerate(outs):
                np.save(f"{out}/{sdk}-{name}-{i}.npy", np.array(s.get(o)))
    np.save(f"{out}/x.npy", x_value); np.save(f"{out}/w.npy", w); np.save(f"{out}/b.npy", b)
""")


def test_shuffle_split_and_layout_chains_are_reorders(tmp_path):
    """Reshape/Transpose chains are one oneDNN reorder between views (the shuffle in channels
    last, between the convolution and the slices, which read sub-memories in channels last
    too): no dense round trip, and the values moved exactly (equal to numpy's reshape and
    transpose of the same convolution output)."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS="2")
    result = subprocess.run([sys.executable, "-c", _SHUFFLE, str(tmp_path)],
                            capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = {}
    for chunk in result.stdout.split("RUN ")[1:]:
        head, *lines = chunk.split("END")[0].splitlines()
        runs[head] = [(f[3], f[4], f[6]) for f in (line.split(",") for line in lines
                      if line.startswith("onednn_verbose,exec,cpu,"))]
    # The shuffle: one reorder for the three layout ops and one per slice, each writing
    # channels last (acdb) as the convolution does; the only dense (abcd) ends are the
    # block's input and its two outputs, which the caller reads dense.
    shuffle = runs["onednn shuffle"]
    reorders = [md for kind, _, md in shuffle if kind == "reorder"]
    assert len(reorders) == 6, shuffle
    moves = [md for md in reorders if "abcd" not in md]
    assert len(moves) == 3 and all("dst_f32::blocked:acdb" in md for md in moves[1:]), moves
    # Every op on oneDNN (no mock kernel), on the mock every op on its own kernels.
    impls = [json.loads(line[5:]) for line in result.stdout.splitlines()
             if line.startswith("IMPL ")]
    assert len(impls) == 8
    assert all(not kernel.startswith("mock kernel") for run in impls[4:] for _, kernel in run)
    assert all(kernel.startswith("mock kernel") for run in impls[:4] for _, kernel in run)
    # NHWC flattened: the convolution's channels-last output is read as it is, one copy.
    flatten = [md for kind, _, md in runs["onednn flatten"] if kind == "reorder"]
    assert len(flatten) == 2 and "dst_f32::blocked:acdb" in flatten[0], flatten
    for name, expected in (
            ("shuffle", lambda c: [c.reshape(1, 2, 8, 6, 5).transpose(0, 2, 1, 3, 4)
                                   .reshape(1, 16, 6, 5)[:, 8 * h:8 * h + 8] for h in (0, 1)]),
            ("flatten", lambda c: [c.transpose(0, 2, 3, 1).reshape(1, 480)]),
            ("tangle", lambda c: [c.transpose(0, 2, 1, 3).reshape(1, 96, 5).transpose(0, 2, 1)]),
            ("strided", lambda c: [c[:, :, 1::2, 0::2]])):
        x, w, b = (np.load(tmp_path / f"{v}.npy") for v in "xwb")
        conv = (np.einsum("oc,nchw->nohw", w[:, :, 0, 0], x) + b[None, :, None, None])
        for sdk in ("mock", "onednn"):
            for i, want in enumerate(expected(conv.astype(np.float32))):
                got = np.load(tmp_path / f"{sdk}-{name}-{i}.npy")
                np.testing.assert_array_equal(got, want, err_msg=f"{sdk} {name} {i}")
