"""Misuse of the wrapper and SDK rule violations surface as rt.Error / rt.SdkError."""

import numpy as np
import pytest

from paleozoic import _runtime as rt

CNML_STATUS_INVALIDPARAM = 8


def conv_session(configure=True):
    s = rt.Session()
    x = s.input("x", [1, 3, 6, 6])
    c = s.conv("conv1", x, out_channels=4, kernel=(3, 3), pads=(1, 1, 1, 1))
    if configure:
        c.config(np.ones((4, 3, 3, 3), np.float32), np.zeros(4, np.float32))
    r = s.active("relu1", c.output, "relu")
    s.mark_output(r.output)
    return s, x, c, r


def test_exception_classes():
    assert issubclass(rt.SdkError, RuntimeError)
    assert issubclass(rt.Error, RuntimeError)


@pytest.mark.parametrize("mp", [0, 33])
def test_mp_out_of_range_unfused_names_layer(mp):
    s, _, c, _ = conv_session()
    with pytest.raises(rt.SdkError, match=r"conv1: cnmlCompileBaseOp failed with "
                                          r"CNML_STATUS_INVALIDPARAM \(8\)") as info:
        s.compile_block("b0", fuse=False, mp=mp, layers=[c])
    assert info.value.layer == "conv1"
    assert info.value.status == CNML_STATUS_INVALIDPARAM


@pytest.mark.parametrize("mp", [0, 33])
def test_mp_out_of_range_fused_names_block(mp):
    s, _, c, r = conv_session()
    with pytest.raises(rt.SdkError, match=r"blk: cnmlCompileFusionOp failed with "
                                          r"CNML_STATUS_INVALIDPARAM") as info:
        s.compile_block("blk", fuse=True, mp=mp, layers=[c, r])
    assert info.value.layer == "blk"


def test_run_before_compile():
    s, x, c, r = conv_session()
    with pytest.raises(rt.Error, match="conv1: run before compile"):
        c.run()
    block = s.make_block("b0", fuse=True, mp=4, layers=[c, r])
    with pytest.raises(rt.Error, match="block b0: run before compile"):
        s.run()
    block.compile()
    s.set_input(x, np.ones((1, 3, 6, 6), np.float32))
    s.run()
    assert s.get(r.output).shape == (1, 4, 6, 6)


def test_unfused_layer_runs_alone_after_compile():
    s, x, c, _ = conv_session()
    c.compile(2)
    s.set_input(x, np.ones((1, 3, 6, 6), np.float32))
    c.run()
    assert s.get(c.output)[0, 0, 2, 2] == pytest.approx(27.0)


def test_fuse_after_compile():
    s, _, c, r = conv_session()
    s.compile_block("alone", fuse=False, mp=4, layers=[c])
    with pytest.raises(rt.Error, match="conv1: already compiled alone.*block fused"):
        s.compile_block("fused", fuse=True, mp=4, layers=[c, r])


def test_compile_twice():
    _, _, c, _ = conv_session()
    c.compile(4)
    with pytest.raises(rt.Error, match="conv1: compileOp called twice"):
        c.compile(4)


def test_layer_fused_into_two_blocks():
    s, _, c, r = conv_session()
    s.compile_block("first", fuse=True, mp=4, layers=[c, r])
    with pytest.raises(rt.Error, match="conv1: already fused into block first.*block second"):
        s.compile_block("second", fuse=True, mp=4, layers=[c])
    with pytest.raises(rt.Error, match="conv1: cannot compile alone.*fused into block first"):
        s.compile_block("third", fuse=False, mp=4, layers=[c])


@pytest.mark.parametrize("fuse", [False, True])
def test_config_missing(fuse):
    s, _, c, r = conv_session(configure=False)
    with pytest.raises(rt.Error, match="conv1: configLayer was not called"):
        s.compile_block("b0", fuse=fuse, mp=4, layers=[c, r])


def test_config_wrong_size():
    s, _, c, _ = conv_session(configure=False)
    with pytest.raises(rt.Error, match="conv1: weight has 10 values, expected 108"):
        c.config(np.ones(10, np.float32), None)


def test_layer_without_weights_rejects_config():
    _, _, _, r = conv_session()
    with pytest.raises(rt.Error, match="relu1: .* has no weights"):
        r.config(np.ones(4, np.float32))


def test_wrong_input_size():
    s, x, c, r = conv_session()
    s.compile_block("b0", fuse=True, mp=4, layers=[c, r])
    with pytest.raises(rt.Error, match=r"tensor x: copyFromHost got 100 floats, expected 108"):
        s.set_input(x, np.ones(100, np.float32))


@pytest.mark.parametrize("build,match", [
    (lambda s, x: s.conv("bad", x, out_channels=4, kernel=(3, 3), groups=2),
     "bad: conv: groups = 2 must divide the input channels"),
    (lambda s, x: s.pool("bad", x, mode="max", kernel=(9, 9)), "bad: pool: window of 9"),
    (lambda s, x: s.reshape("bad", x, [5, 5]), r"bad: cannot reshape \[1, 3, 6, 6\]"),
    (lambda s, x: s.transpose("bad", x, [0, 1, 1, 2]), "bad: perm .* is not a permutation"),
    (lambda s, x: s.softmax("bad", x, 4), "bad: axis 4 is out of range"),
    (lambda s, x: s.active("bad", x, "gelu"), "unknown activation 'gelu'"),
])
def test_bad_layer_parameters(build, match):
    s = rt.Session()
    x = s.input("x", [1, 3, 6, 6])
    with pytest.raises(rt.Error, match=match):
        build(s, x)


def test_shape_helpers():
    assert rt.output_shape("conv", [[1, 3, 224, 224]], out_channels=64, kernel=(7, 7),
                           stride=(2, 2), pads=(3, 3, 3, 3)) == (1, 64, 112, 112)
    assert rt.output_shape("pool", [[1, 64, 112, 112]], mode="max", kernel=(3, 3),
                           stride=(2, 2), ceil_mode=True) == (1, 64, 56, 56)
    assert rt.output_shape("pool", [[1, 1, 5, 5]], mode="max", kernel=(2, 2), stride=(2, 2),
                           pads=(1, 1, 1, 1), ceil_mode=True) == (1, 1, 3, 3)
    with pytest.raises(rt.Error, match="a pool layer has no attribute 'groups'"):
        rt.output_shape("pool", [[1, 1, 5, 5]], mode="max", kernel=(2, 2), groups=2)
    with pytest.raises(rt.Error, match="unknown layer kind 'gelu'; known kinds: conv, "):
        rt.output_shape("gelu", [[1, 1, 5, 5]])
