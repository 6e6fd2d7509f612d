"""Host copies: each host layer costs a round trip (a queue sync, copies, a launch), and
the frontend makes one per integer Reshape/Unsqueeze (HuggingFace's mask is Unsqueeze,
Unsqueeze, Cast): a host cast that only reshapes merges into the host cast reading it."""

from __future__ import annotations

from paleozoic.ir import Layer, LayerQueue
from paleozoic.passes.rewrite import rewrite_pairs


def merge_host_copies(queue: LayerQueue) -> int:
    """HostCast(HostCast(x, to=type of x, shape=s), to=t, shape=s2) -> HostCast(x, t, s2),
    when the first is a pure copy (no type change, no index wrap) read by the second only."""

    def merge(before: Layer, layer: Layer) -> bool:
        if before.op.attrs["wrap"] or before.op.attrs["to"] != queue.tensors[
                before.inputs[0]].dtype:
            return False
        layer.inputs = list(before.inputs)
        layer.onnx_nodes = list(dict.fromkeys(before.onnx_nodes + layer.onnx_nodes))
        queue.layers.remove(before)
        queue.onnx_tensors.pop(before.output, None)
        return True

    return rewrite_pairs(queue, "HostCast", "HostCast", merge)
