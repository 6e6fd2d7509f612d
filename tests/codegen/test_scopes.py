"""Section comments from ONNX name scopes (paleozoic.codegen.scopes): where they go, what
they say, and that a hostile node name cannot leave its comment."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import paleozoic
from paleozoic.codegen.scopes import scope_of, section_comments
from paleozoic.ir import Layer
from paleozoic.ir.layer import Operator


def _layers(*node_names: str) -> list[Layer]:
    return [Layer(name=f"l{i}", op=Operator("Softmax", {"axis": 1}), inputs=["x"], output=f"y{i}",
                  onnx_nodes=[node] if node else [])
            for i, node in enumerate(node_names)]


@pytest.mark.parametrize("node, scope", [
    ("/encoder/layer.3/attention/self/query/MatMul", ("encoder", "layer.3", "attention",
                                                      "self", "query")),
    ("/layer1/layer1.0/conv1/Conv", ("layer1.0", "conv1")),   # torch repeats the parent
    ("/features/features.1/features.1.0/block/block.1/Mul", ("features.1.0", "block.1")),
    ("conv1", ()),                                              # a plain name has no scope
    ("fire2/squeeze1x1", ("fire2",)),
])
def test_scope_of(node: str, scope: tuple[str, ...]) -> None:
    assert scope_of(node) == scope


def test_a_section_is_the_deepest_scope_with_four_layers() -> None:
    attention = [f"/enc/layer.0/attention/{op}" for op in
                 ("q/MatMul", "q/Add", "k/MatMul", "Softmax", "MatMul")]
    ffn = [f"/enc/layer.0/ffn/{op}" for op in ("lin1/MatMul", "Relu", "lin2/MatMul", "Add")]
    names = ["stem", *attention, "/enc/layer.0/Add", "", *ffn, "/enc/layer.0/norm/LayerNorm"]
    comments = section_comments(_layers(*names))
    assert comments == ["", "enc.layer.0.attention", "", "", "", "",
                        "enc.layer.0", "", "enc.layer.0.ffn", "", "", "",
                        "enc.layer.0"]


def test_no_scopes_no_comments() -> None:
    assert section_comments(_layers("conv1", "relu1", "pool1", "fc", "softmax")) == [""] * 5
    assert section_comments([]) == []


def test_sessions_carry_the_sections_and_hostile_names_stay_in_them(
        tmp_path: Path, small_cnn: onnx.ModelProto) -> None:
    """Node names are the model file's text: a scope holding a newline and a trailing
    backslash (a line splice would swallow the next statement) must stay inside its comment,
    and the session must build and pass."""
    evil = "stem*/\n#include <evil>\\"  # "/" splits it: scope ("stem*", "\n#include ...")
    model = onnx.ModelProto()
    model.CopyFrom(small_cnn)
    for i, node in enumerate(model.graph.node):
        node.name = f"/{evil if i < 5 else 'head'}/{node.op_type}_{i}"
    path = tmp_path / "scoped.onnx"
    onnx.save(model, str(path))
    out = paleozoic.compile(path, tmp_path / "session")
    lines = (out / "session.cpp").read_text().splitlines()
    assert '  // "stem*.\\n#include <evil>\\\\"' in lines
    assert "  // head" in lines
    assert not any(line.startswith("#include <evil>") or line.endswith("\\") for line in lines)
    paleozoic.build(out)
    assert paleozoic.verify(out, seed=1).passed
