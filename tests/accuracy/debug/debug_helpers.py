"""Models and edits the debugger tests share (not in conftest.py, whose module name
other test folders also use)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from paleozoic.codegen.weights import read_weights, write_weights

DIGITS = Path(__file__).resolve().parents[3] / "examples" / "digits"


def branch_model(seed: int = 0) -> onnx.ModelProto:
    """conv-relu-pool, then two branches (conv-relu, conv) joined by Add, concatenated with
    the pooled tensor, a conv, global average pool, flatten, gemm."""
    rng = np.random.default_rng(seed)
    inits: list[onnx.TensorProto] = []

    def weight(name: str, *shape: int) -> str:
        scale = 1.0 / np.sqrt(np.prod(shape[1:]))
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def conv(name: str, x: str, cin: int, cout: int, k: int = 3) -> onnx.NodeProto:
        return helper.make_node("Conv", [x, weight(f"{name}_w", cout, cin, k, k),
                                         weight(f"{name}_b", cout)], [name], name=name,
                                pads=[k // 2] * 4)

    nodes = [
        conv("stem/conv", "x", 3, 8),
        helper.make_node("Relu", ["stem/conv"], ["stem/relu"], name="stem/relu"),
        helper.make_node("MaxPool", ["stem/relu"], ["stem/pool"], name="stem/pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        conv("a/conv", "stem/pool", 8, 8),
        helper.make_node("Relu", ["a/conv"], ["a/relu"], name="a/relu"),
        conv("b/conv", "stem/pool", 8, 8, k=1),
        helper.make_node("Add", ["a/relu", "b/conv"], ["join/add"], name="join/add"),
        helper.make_node("Concat", ["join/add", "stem/pool"], ["join/cat"], name="join/cat",
                         axis=1),
        conv("head/conv", "join/cat", 16, 8),
        helper.make_node("GlobalAveragePool", ["head/conv"], ["head/gap"], name="head/gap"),
        helper.make_node("Flatten", ["head/gap"], ["head/flat"], name="head/flat"),
        helper.make_node("Gemm", ["head/flat", weight("fc_w", 10, 8), weight("fc_b", 10)],
                         ["logits"], name="head/fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "branch", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def corrupt_filter(folder: Path, layer: str, factor: float = -4.0) -> None:
    """Scales the first output channel of `layer`'s filter in weights.bin by `factor`
    (the file stays well formed: a wrong number, not a damaged file)."""
    path = folder / "weights.bin"
    tensors = read_weights(path)
    weight = tensors[f"{layer}.weight"].copy()
    weight[0] *= factor
    tensors[f"{layer}.weight"] = weight
    write_weights(path, tensors.items())


def write_plan(folder: Path, blocks: list[tuple[str, list[str], bool]]) -> None:
    plan = json.loads((folder / "plan.json").read_text())
    plan["blocks"] = [{"name": name, "layers": layers, "mp": 4, "fuse": fuse}
                      for name, layers, fuse in blocks]
    plan["strategy"] = "custom"
    (folder / "plan.json").write_text(json.dumps(plan))
