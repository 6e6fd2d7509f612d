"""ONNX LSTM / GRU / RNN in the frontend (convert/recurrent.py, beside_tvm.py): cut out of
the graph TVM parses and spliced back as one layer per consumed output, in topological
order, named after the node; Y_h sliced from Y; constant zero states and full constant
sequence_lens accepted; everything the layers cannot compute refused naming the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.pipeline import import_onnx, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference
from paleozoic_testing.recurrent import random_weights, recurrent_stack


def _single(op: str, outputs: tuple[str, ...] = ("y",), *, extra: dict[str, Any] | None = None,
            inits: dict[str, np.ndarray] | None = None, slots: dict[int, str] | None = None,
            graph_inputs: dict[str, list[int]] | None = None, peepholes: bool = False,
            **attrs: Any) -> onnx.ModelProto:
    """One `op` node on x [5, 2, 3] (hidden 4) whose `outputs` are graph outputs; `slots`
    fills optional input slots by position with `inits` or `graph_inputs` names."""
    rng = np.random.default_rng(0)
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    w = random_weights(op, 3, 4, dirs, rng, peepholes=peepholes)
    values = {"W": w["W"], "R": w["R"], "B": w["B"], **(inits or {})}
    if peepholes:
        values["P"] = w["P"]
    names = ["x", "W", "R", "B", "", "", "", "P" if peepholes else ""]
    for slot, name in (slots or {}).items():
        names[slot] = name
    while names and not names[-1]:
        names.pop()
    roles = ("y", "y_h", "y_c")
    node_outputs = [r if r in outputs else "" for r in roles[:max(roles.index(o) for o in
                                                                   outputs) + 1]]
    node = helper.make_node(op, names, node_outputs, name="rec", hidden_size=4, **attrs)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, 3])]
    ins += [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in (graph_inputs or {}).items()]
    shapes = {"y": [5, dirs, 2, 4], "y_h": [dirs, 2, 4], "y_c": [dirs, 2, 4]}
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outputs]
    graph = helper.make_graph([node], "g", ins, outs,
                              [numpy_helper.from_array(np.asarray(v), k)
                               for k, v in values.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], plan: str = "fuse-all"):
    queue = import_onnx(model)
    out = PlanRunner(queue, resolve_plan(queue, plan)).run(list(feeds.values()))
    return queue, list(out.values())


def test_stack_layers_named_in_topological_order() -> None:
    model, _ = recurrent_stack("LSTM", direction="bidirectional", layout=0, layers=2)
    queue = import_onnx(model)
    kinds = [(layer.name, layer.kind) for layer in queue.layers]
    assert kinds[0] == ("lstm0", "Lstm") and ("lstm1", "Lstm") in kinds
    # Y and Y_h of lstm1 are both read: Y_h is a step of Y, sliced, not a second Lstm.
    assert [k for _, k in kinds].count("Lstm") == 2
    assert ("lstm1_y_h", "Reshape") in kinds
    produced = {i.name for i in queue.inputs}
    for layer in queue.layers:
        assert set(layer.inputs) <= produced, f"{layer.name} reads before it is produced"
        produced.add(layer.output)
    assert queue.layers[0].weights == {"W": "lstm0.W", "R": "lstm0.R", "B": "lstm0.B"}


def test_y_c_is_its_own_layer_sharing_weights() -> None:
    model = _single("LSTM", ("y", "y_c"), direction="reverse")
    x = np.random.default_rng(1).standard_normal((5, 2, 3)).astype(np.float32)
    queue, outs = _run(model, {"x": x})
    layers = {layer.name: layer for layer in queue.layers}
    assert layers["rec"].op.attrs["output"] == "y"
    assert layers["rec_y_c"].op.attrs["output"] == "y_c"
    assert layers["rec_y_c"].weights == layers["rec"].weights
    for ours, truth in zip(outs, Float64Reference(model).run({"x": x})):
        assert np.abs(ours.reshape(truth.shape) - truth).max() < 1e-6


def test_zero_constant_state_and_full_sequence_lens() -> None:
    zeros = np.zeros((2, 2, 4), np.float32)
    model = _single("GRU", ("y_h",), direction="bidirectional", linear_before_reset=1,
                    inits={"h0": zeros, "lens": np.array([5, 5], np.int32)},
                    slots={4: "lens", 5: "h0"})
    x = np.random.default_rng(2).standard_normal((5, 2, 3)).astype(np.float32)
    queue, outs = _run(model, {"x": x}, plan="per-layer")
    assert [layer.kind for layer in queue.layers] == ["Gru"]
    assert queue.layers[0].inputs == ["x"]  # the zero state is the layer's default
    truth = Float64Reference(model).run({"x": x})[0]
    assert np.abs(outs[0].reshape(truth.shape) - truth).max() < 1e-6


def test_peepholes_and_states_as_inputs() -> None:
    model = _single("LSTM", ("y",), peepholes=True, slots={5: "h0", 6: "c0"},
                    graph_inputs={"h0": [1, 2, 4], "c0": [1, 2, 4]})
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((5, 2, 3)).astype(np.float32),
             "h0": rng.standard_normal((1, 2, 4)).astype(np.float32),
             "c0": rng.standard_normal((1, 2, 4)).astype(np.float32)}
    queue, outs = _run(model, feeds)
    assert queue.layers[0].op.attrs["peepholes"] is True
    assert queue.layers[0].inputs == ["x", "h0", "c0"]
    truth = Float64Reference(model).run(feeds)[0]
    assert np.abs(outs[0].reshape(truth.shape) - truth).max() < 1e-6


@pytest.mark.parametrize("build, reason", [
    (lambda: _single("LSTM", inits={"lens": np.array([5, 3], np.int32)}, slots={4: "lens"}),
     r"node 'rec' \(LSTM\): sequence_lens is \[5, 3\]; only a constant equal to the full"),
    (lambda: _single("GRU", clip=3.0), r"node 'rec' \(GRU\): clip=3.0"),
    (lambda: _single("LSTM", input_forget=1), r"node 'rec' \(LSTM\): input_forget=1"),
    (lambda: _single("LSTM", activations=["Sigmoid", "Relu", "Tanh"]),
     r"node 'rec' \(LSTM\): activations=\['sigmoid', 'relu', 'tanh'\] are not supported"),
    (lambda: _single("RNN", activations=["LeakyRelu"]),
     r"node 'rec' \(RNN\): activation 'leakyrelu' is not supported"),
    (lambda: _single("RNN", direction="bidirectional", activations=["Tanh", "Relu"]),
     r"node 'rec' \(RNN\): activations=\['tanh', 'relu'\]: both directions"),
    (lambda: _single("GRU", inits={"h0": np.ones((1, 2, 4), np.float32)}, slots={5: "h0"}),
     r"node 'rec' \(GRU\): initial_h \('h0'\) is a constant that is not all zero"),
])
def test_refusals_name_the_node(build, reason: str) -> None:
    with pytest.raises(UnsupportedModelError, match=reason):
        import_onnx(build())


def test_run_time_sequence_lens_refused() -> None:
    """sequence_lens given as a graph input (int32 inputs are allowed now) is refused at
    the node: the steps run for the whole sequence, so padded batches would be wrong."""
    model = _single("RNN", slots={4: "lens"}, graph_inputs={})
    model.graph.input.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [2]))
    with pytest.raises(UnsupportedModelError, match="node 'rec' \\(RNN\\): sequence_lens is a run-time input"):
        import_onnx(model)
