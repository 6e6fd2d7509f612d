"""Pruning for the SDK's sparse mode (paleozoic/frontend/prune.py, `paleozoic prune`): the
pair rule of Cambricon's tools against a plain loop over the pairs, exact counts, which
layers it applies to, the written model against onnxruntime, and the command's errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from helpers import float_model
from paleozoic.cli import main
from paleozoic.frontend.loader import load_onnx
from paleozoic.frontend.prune import (
    PruneError,
    parse_sparsity,
    prune,
    prune_pairs,
    prune_unstructured,
    sparsity_of,
    targets,
)


def _pairs_by_loop(weight: np.ndarray, sparsity: float, axis: int) -> np.ndarray:
    """The rule written out: for each pair of output channels (2i, 2i+1; an odd last one
    alone) at each other index, the larger |w|; the round(s x pairs) smallest pairs (first
    in position on ties) lose both weights."""
    w = np.moveaxis(weight, axis, 0).copy()
    channels = w.shape[0]
    rest = w.reshape(channels, -1)
    pairs = []
    for i in range(0, channels, 2):
        for j in range(rest.shape[1]):
            members = [i] if i + 1 == channels else [i, i + 1]
            pairs.append((max(abs(float(rest[c, j])) for c in members), len(pairs), members, j))
    count = int(np.floor(sparsity * len(pairs) + 0.5))
    for _, _, members, j in sorted(pairs)[:count]:
        for c in members:
            rest[c, j] = 0.0
    return np.moveaxis(rest.reshape(w.shape), 0, axis)


def test_a_pair_of_output_channels_goes_together_by_its_larger_weight():
    # Channels 0/1 and 2/3 at two kernel positions: pair magnitudes 0.5, 4, 3, 0.2.
    w = np.array([[0.1, -4.0], [-0.5, 1.0], [3.0, 0.2], [0.1, -0.1]], np.float32)
    w = w.reshape(4, 1, 1, 2)
    got = prune_pairs(w, 0.5, axis=0)
    want = np.array([[0.0, -4.0], [0.0, 1.0], [3.0, 0.0], [0.1, 0.0]], np.float32)
    np.testing.assert_array_equal(got, want.reshape(4, 1, 1, 2))
    assert sparsity_of(got, 0).pairs == 0.5


@pytest.mark.parametrize("shape,axis", [((8, 3, 3, 3), 0), ((7, 5), 0), ((6, 9), 1),
                                        ((5, 4, 1, 1), 0)])
@pytest.mark.parametrize("sparsity", [0.0, 0.3, 0.5, 0.8, 0.95])
def test_pairs_match_the_rule_written_out(shape, axis, sparsity):
    rng = np.random.default_rng(abs(hash((shape, axis))) % 2**32)
    w = rng.standard_normal(shape).astype(np.float32)
    w[rng.random(shape) < 0.1] = 0.0  # existing zeros, and ties among them
    got = prune_pairs(w, sparsity, axis)
    np.testing.assert_array_equal(got, _pairs_by_loop(w, sparsity, axis))
    untouched = got != 0
    np.testing.assert_array_equal(got[untouched], w[untouched])


def test_unstructured_zeroes_exactly_the_smallest_weights():
    w = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
    got = prune_unstructured(w, 0.75)
    assert int(np.sum(got == 0)) == 96
    assert np.abs(w[got == 0]).max() <= np.abs(w[got != 0]).min()


def test_parse_sparsity():
    assert parse_sparsity("0.5") == (0.5, {})
    assert parse_sparsity("conv1=0.8, fc=0.25") == (None, {"conv1": 0.8, "fc": 0.25})
    assert parse_sparsity("0.5,fc=0.9") == (0.5, {"fc": 0.9})
    for bad, match in (("1.0", "outside"), ("-0.1", "outside"), ("half", "not a number"),
                       ("", "empty"), ("0.5,0.6", "two values")):
        with pytest.raises(PruneError, match=match):
            parse_sparsity(bad)


def _model_with_every_target() -> onnx.ModelProto:
    """Conv, a grouped Conv (no sparse mode), Gemm with and without transB, MatMul."""
    rng = np.random.default_rng(0)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c1", "wg"], ["c2"], name="grouped", group=4),
        helper.make_node("Flatten", ["c2"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "g1"], ["h1"], name="gemm_t", transB=1),
        helper.make_node("Gemm", ["h1", "g2"], ["h2"], name="gemm"),
        helper.make_node("MatMul", ["h2", "m"], ["y"], name="matmul"),
    ]
    inits = [init("w1", 8, 3, 3, 3), init("wg", 8, 2, 1, 1), init("g1", 12, 8 * 4 * 4),
             init("g2", 12, 10), init("m", 10, 6)]
    return float_model(nodes, {"x": [1, 3, 4, 4]}, {"y": [1, 6]}, inits, name="targets")


def test_targets_are_convolutions_and_fully_connected_layers():
    found = {t.node: (t.initializer, t.axis) for t in targets(_model_with_every_target())}
    assert found == {"conv": ("w1", 0), "gemm_t": ("g1", 0), "gemm": ("g2", 1),
                     "matmul": ("m", 1)}


def test_the_pruned_model_computes_with_the_pruned_weights(tmp_path: Path):
    model = _model_with_every_target()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    pruned, report = prune(load_onnx(path), 0.5, {"matmul": 0.0}, "pairs")
    onnx.checker.check_model(pruned)
    assert {row.target.node: row.after.pairs for row in report} == {
        "conv": 0.5, "gemm_t": 0.5, "gemm": 0.5, "matmul": 0.0}
    weights = {i.name: numpy_helper.to_array(i) for i in pruned.graph.initializer}
    original = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    np.testing.assert_array_equal(weights["wg"], original["wg"])  # grouped: untouched
    np.testing.assert_array_equal(weights["m"], original["m"])
    np.testing.assert_array_equal(weights["g2"], prune_pairs(original["g2"], 0.5, 1))
    # Only the weights changed: the original graph given the pruned weights computes the
    # same, bit for bit, and not what the dense one does.
    by_hand = onnx.ModelProto()
    by_hand.CopyFrom(model)
    for init in by_hand.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(weights[init.name], init.name))
    x = np.random.default_rng(1).standard_normal((1, 3, 4, 4)).astype(np.float32)

    def run(m: onnx.ModelProto) -> np.ndarray:
        session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return session.run(None, {"x": x})[0]

    np.testing.assert_array_equal(run(pruned), run(by_hand))
    assert not np.allclose(run(pruned), run(model))


def test_prune_command_writes_a_model_inspect_sees_sparse(
        tmp_path: Path, small_cnn_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "pruned.onnx"
    assert main(["prune", str(small_cnn_path), "--sparsity", "0.5,fc=0.8", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "3 layer(s) pruned (pairs)" in text
    assert main(["inspect", str(out)]) == 0
    table = capsys.readouterr().out
    assert "zeros (pairs)" in table and "50% (50%)" in table and "80% (80%)" in table


@pytest.mark.parametrize("argv,match", [
    (["--sparsity", "nosuch=0.5"], "no convolution or fully connected layer named nosuch"),
    (["--sparsity", "1.5"], "outside"),
    (["--sparsity", "0.5", "--pattern", "blocks"], None),
])
def test_prune_command_refuses_without_writing(tmp_path: Path, small_cnn_path: Path,
                                               capsys: pytest.CaptureFixture[str], argv, match):
    out = tmp_path / "pruned.onnx"
    if match is None:  # argparse's own refusal
        with pytest.raises(SystemExit) as exit_info:
            main(["prune", str(small_cnn_path), *argv, "-o", str(out)])
        assert exit_info.value.code == 2
    else:
        assert main(["prune", str(small_cnn_path), *argv, "-o", str(out)]) == 2
        assert match in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".pruned.onnx.*"))


def test_prune_command_keeps_an_existing_output_without_force(
        tmp_path: Path, small_cnn_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "pruned.onnx"
    out.write_bytes(b"keep")
    assert main(["prune", str(small_cnn_path), "--sparsity", "0.5", "-o", str(out)]) != 0
    assert out.read_bytes() == b"keep"
    assert main(["prune", str(small_cnn_path), "--sparsity", "0.5", "-o", str(out),
                 "--force"]) == 0
    assert onnx.load(str(out)).graph.node
