"""Section comments from the ONNX name scopes, so that a session reads like its model: a
transformer's layers under `// encoder.layer.3.attention`, a ResNet's under `// layer2.1`.

Exporters name nodes by the module that made them (torch: `/encoder/layer.3/attention/
self/query/MatMul`, the last part the op). A layer's scope is its first ONNX node's path
without the op. A section is the deepest scope whose consecutive run of layers holds at
least MIN_SECTION of them: each module's own ops fall into their module, and a module of up
to three layers (a linear layer and its reshapes, a convolution and its activation) joins
its parent's section instead of getting a comment per layer. A layer with no scope (a plain
node name, or made by a pass) stays in the section before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from paleozoic.ir import Layer

MIN_SECTION = 4


def scope_of(node_name: str) -> tuple[str, ...]:
    """The module path of an ONNX node's name: `/a/b.1/Conv` -> ("a", "b.1"). torch repeats
    a parent in its children (`/layer1/layer1.0/conv1/Conv`); the parent's name is dropped
    where the child spells it out, so the path reads `layer1.0.conv1`."""
    parts = [part for part in node_name.split("/")[:-1] if part]
    return tuple(part for part, child in zip(parts, [*parts[1:], ""])
                 if not child.startswith(part + "."))


def _run_lengths(scopes: Sequence[tuple[str, ...]], depth: int) -> list[int]:
    """Per layer, how many consecutive layers share its scope's first `depth` parts (0 for
    a scope shallower than that)."""
    lengths = [0] * len(scopes)
    i = 0
    while i < len(scopes):
        prefix = scopes[i][:depth]
        stop = i + 1
        while len(prefix) == depth and stop < len(scopes) and scopes[stop][:depth] == prefix:
            stop += 1
        if len(prefix) == depth:
            lengths[i:stop] = [stop - i] * (stop - i)
        i = stop
    return lengths


def section_comments(layers: Sequence[Layer]) -> list[str]:
    """Per layer, the section comment to print before it ("" for none): the section's
    scope, dotted, where it differs from the previous layer's section."""
    scopes = [scope_of(layer.onnx_nodes[0]) if layer.onnx_nodes else () for layer in layers]
    runs = [_run_lengths(scopes, depth) for depth in range(max(map(len, scopes), default=0) + 1)]
    comments: list[str] = []
    current: tuple[str, ...] = ()
    for i, scope in enumerate(scopes):
        section = next((scope[:depth] for depth in range(len(scope), 0, -1)
                        if runs[depth][i] >= MIN_SECTION), ())
        if section and section != current:
            comments.append(".".join(section))
            current = section
        else:
            comments.append("")
    return comments
