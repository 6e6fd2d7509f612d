"""onnxruntime's fp32 values of the ONNX tensors the queue's tensors equal: a copy of the
model with those tensors added as graph outputs, run unoptimised (so each is exactly what
its node computes; adding outputs would block most of onnxruntime's fusions anyway)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from paleozoic.ir import LayerQueue


class OnnxReference:
    def __init__(self, model: onnx.ModelProto, queue: LayerQueue,
                 only: Collection[str] | None = None) -> None:
        """`only`: the queue tensors wanted (default: every one with an ONNX tensor)."""
        from paleozoic.accuracy.verify import onnxruntime_session

        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        graph_inputs = {v.name for v in copy.graph.input}
        present = {o.name for o in copy.graph.output}
        # One ONNX tensor per queue tensor (the first: the one its layer produces).
        self.names = {tensor: names[0] for tensor, names in queue.onnx_tensors.items()
                      if only is None or tensor in only}
        for name in dict.fromkeys(self.names.values()):
            if name not in present and name not in graph_inputs:
                copy.graph.output.append(helper.make_tensor_value_info(
                    name, TensorProto.FLOAT, None))
                present.add(name)
        self.input_names = list(queue.onnx_input_names)
        self.session = onnxruntime_session(copy, optimize=False)
        self.output_names = [o.name for o in self.session.get_outputs()]

    def run(self, feeds: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        """Queue tensor name -> onnxruntime's value of its ONNX tensor."""
        given = dict(zip(self.input_names, feeds))
        values = dict(zip(self.output_names, self.session.run(None, given)))
        values.update(given)
        return {tensor: values[name] for tensor, name in self.names.items() if name in values}
