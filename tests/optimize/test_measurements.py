"""Measured timings kept by what was measured: block keys and the store that outlives a run."""

from __future__ import annotations

import random

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from paleozoic.frontend import import_onnx
from paleozoic.optimize.measurements import (
    BlockKeys, Measured, MeasurementStore, block_key, board_fingerprint,
)
from paleozoic.passes import run_passes


def _twin_convs() -> onnx.ModelProto:
    """Two conv + relu pairs of equal shapes and different weights, then a conv with
    another kernel size."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w0", (4, 4, 3, 3)), ("w1", (4, 4, 3, 3)),
                                   ("w2", (4, 4, 1, 1)))]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(
        nodes, "twins", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_same_block_anywhere_has_one_key_and_any_knob_changes_it() -> None:
    queue = run_passes(import_onnx(_twin_convs()))
    assert [layer.kind for layer in queue.layers] == ["Conv", "Active"] * 2 + ["Conv"]
    board = board_fingerprint("mock")

    def key(start: int, stop: int, mp: int = 4, **knobs) -> str:
        return block_key(queue, start, stop, mp, fused=stop - start > 1,
                         board=knobs.pop("board", board), **knobs)

    assert key(0, 1) == key(2, 3)           # same shapes and kind, other weights
    assert key(0, 2) == key(2, 4)
    assert key(2, 3) != key(4, 5)           # another kernel
    assert key(1, 3) != key(3, 5)
    assert key(0, 2) != key(0, 2, mp=8)
    assert key(0, 2) != key(0, 2, board="onednn|other cpu|64|paleozoic 0")
    assert key(0, 2) != key(0, 2, data_parallelism=2)
    # The sparse mode's time depends on the weights' zero pairs: their values count.
    assert key(0, 1, sparse={queue.layers[0].name}) != key(2, 3, sparse={queue.layers[2].name})
    assert block_key(queue, 0, 2, 4, fused=False, board=board) != key(0, 2)


def _described(queue, start: int, stop: int, mp: int, fused: bool, board: str,
               sparse=frozenset()) -> str:
    """The key's text as json.dumps writes it (what BlockKeys.key builds from pieces)."""
    import hashlib
    import json

    from paleozoic.ir.boundary import block_boundary, read_counts

    block = queue.layers[start:stop]
    inputs, outputs = block_boundary(block, read_counts(queue.layers), set(queue.outputs))
    local = {name: f"i{k}" for k, name in enumerate(inputs)}
    local.update({layer.output: f"l{k}" for k, layer in enumerate(block)})

    def layer_text(layer) -> str:
        weights = {}
        for role, name in sorted(layer.weights.items()):
            value = queue.weights[name]
            weights[role] = [list(value.shape), str(value.dtype)]
            if layer.name in sparse:
                weights[role].append(hashlib.sha256(
                    np.ascontiguousarray(value).tobytes()).hexdigest())
        return json.dumps([layer.kind, layer.op.attrs, weights, layer.precision,
                           layer.name in sparse], sort_keys=True, separators=(",", ":"),
                          default=lambda v: v.item() if isinstance(v, np.generic) else list(v))

    described = {
        "layers": [[layer_text(layer), [local[t] for t in layer.inputs]] for layer in block],
        "shapes": [[local[t], list(queue.tensors[t].shape), queue.tensors[t].dtype]
                   for t in (*inputs, *(layer.output for layer in block))],
        "outputs": [local[t] for t in outputs], "mp": mp, "fused": fused, "dp": 1,
        "board": board}
    text = json.dumps(described, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_key_is_the_hash_of_its_blocks_canonical_json(small_cnn) -> None:
    """Keys built from per-layer pieces hash the very text json.dumps writes of the block, on
    every block of a branchy model (a residual Add, a classifier head), so the stores kept
    before stay valid."""
    queue = run_passes(import_onnx(small_cnn))
    board = board_fingerprint("mock")
    sparse = {queue.layers[0].name}
    n = len(queue.layers)
    blocks = [(start, stop, mp, fused) for start in range(n) for stop in range(start + 1, n + 1)
              for mp, fused in ((1, False), (32, stop - start > 1), (4, False), (2, True))]
    # All in one call, in no particular order: a block's text is a prefix of the longer
    # blocks' from its start, and several MPs share the text around the MP.
    random.Random(0).shuffle(blocks)
    together = BlockKeys(queue, board).keys(blocks)
    for (start, stop, mp, fused), key in zip(blocks, together):
        assert block_key(queue, start, stop, mp, fused=fused, board=board) == key == \
            _described(queue, start, stop, mp, fused, board)
    for start in range(n):
        for stop in range(start + 1, n + 1):
            assert block_key(queue, start, stop, 4, fused=True, board=board, sparse=sparse) == \
                _described(queue, start, stop, 4, True, board, sparse)


def test_the_store_outlives_its_run_and_skips_a_torn_line(tmp_path) -> None:
    path = tmp_path / "m.jsonl"
    store = MeasurementStore(path)
    store.add([("a", Measured(1.5)), ("b", Measured(2.0, 0.25))])
    with open(path, "a", encoding="utf-8") as out:
        out.write('{"key": "c", "us"')   # a run killed mid-line
    again = MeasurementStore(path)
    assert len(again) == 2 and again.get("b") == Measured(2.0, 0.25) and again.get("c") is None
    again.add([("c", Measured(3.0))])
    assert MeasurementStore(path).get("c") == Measured(3.0)  # on a line of its own
