"""Runs a LayerQueue under a plan through the pybind runtime (paleozoic._runtime): the same
wrapper and mock SDK an emitted session links, without writing and compiling C++."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper

from paleozoic.ir import LayerQueue, Plan


def run_queue(queue: LayerQueue, plan: Plan, feeds: list[np.ndarray],
              sdk: str = "mock") -> list[np.ndarray]:
    from paleozoic.runner.graph import InputRecorder, build_runtime_graph
    from paleozoic.runner.sdk import runtime_module

    session = runtime_module(sdk).Session()
    recorder = InputRecorder(session)
    layers = build_runtime_graph(queue, recorder, bind_weights=True,
                                 sparse={name for block in plan.blocks for name in block.sparse})
    inputs = recorder.inputs
    by_name = {layer.name: built for layer, built in zip(queue.layers, layers)}
    for tensor, value in zip(inputs, feeds):
        session.set_input(tensor, np.ascontiguousarray(value, dtype=np.float32))
    for block in plan.blocks:
        compiled = session.compile_block(block.name, block.fuse, block.mp,
                                         [by_name[name] for name in block.layers])
        compiled.data_parallelism = plan.data_parallelism
    for number, stage in enumerate(plan.stages):
        session.make_stage(f"stage{number}", stage)
    session.run()
    if sdk != "mock":  # a second forward over the buffers the first left (links, in place)
        session.run()
    out_layers = {layer.output: built for layer, built in zip(queue.layers, layers)}
    return [np.array(session.get(out_layers[name].output)) for name in queue.outputs]


def ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if os.environ.get("PZ_FUZZ_THREADS"):  # scripts/fuzz_long.py --cores
        options.intra_op_num_threads = int(os.environ["PZ_FUZZ_THREADS"])
        options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def one_node_model(op: str, x_shape: list[int], inits: list[onnx.TensorProto] = (),
                   extra_inputs: list[str] = (), opset: int = 13, outputs: int = 1,
                   **attrs: object) -> onnx.ModelProto:
    """x -> op(x, *extra_inputs) -> y, named "n0"; y's shape comes from onnxruntime's shape
    inference where it can (the ONNX checker wants graph outputs with a shape)."""
    names = ["y"] + [f"y{i}" for i in range(1, outputs)]
    node = helper.make_node(op, ["x", *extra_inputs], names, name="n0", **attrs)
    graph = helper.make_graph(
        [node], "one_node", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names[:1]],
        list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in inferred.graph.output}
    if known.get("y") is not None and known["y"].type.tensor_type.HasField("shape"):
        model.graph.output[0].CopyFrom(known["y"])
    else:
        model.graph.output[0].CopyFrom(
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["?"]))
    return model
