"""Helpers shared by test modules (imported as `helpers`)."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from paleozoic.ir import LayerQueue, Plan
from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.accuracy.inputs import random_inputs
from paleozoic.accuracy.verify import reference_outputs


def model_of(graph: onnx.GraphProto, opset: int = 13) -> onnx.ModelProto:
    """`graph` as a model of the default domain at `opset`, IR version 8."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def float_model(nodes: list, inputs: dict[str, list], outputs: dict[str, list],
                inits: list | tuple = (), opset: int = 13, name: str = "g") -> onnx.ModelProto:
    """A model of `nodes` with float inputs and outputs of the given shapes, by name."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in outputs.items()],
        list(inits))
    return model_of(graph, opset)


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list:
    return reference_outputs(model, feeds)


def compile_build_compare(model: onnx.ModelProto, out: Path, plan: str = "per-layer",
                          seed: int = 0, rtol: float = 1e-3, atol: float = 1e-5) -> str:
    """Compiles, builds and runs the session; asserts it matches onnxruntime; returns the
    session's report."""
    compile_model(model, out, plan=plan)
    build_session(out)
    feeds = random_inputs(model, seed)
    result = run_session(out, list(feeds.values()))
    assert_outputs_match(result.outputs, onnxruntime_outputs(model, feeds), rtol, atol)
    return result.report


def plan_outputs(queue: LayerQueue, plan: str | Plan, inputs: list[np.ndarray],
                 sdk: str | None = None) -> list[np.ndarray]:
    """The queue's outputs for `inputs`, run in-process (PlanRunner) under `plan`."""
    from paleozoic.pipeline import resolve_plan
    from paleozoic.runner.plan_runner import PlanRunner

    kwargs = {} if sdk is None else {"sdk": sdk}
    return list(PlanRunner(queue, resolve_plan(queue, plan), **kwargs).run(inputs).values())


def built_session_outputs(model: onnx.ModelProto, folder: Path, inputs: list[np.ndarray],
                          **compile_options) -> tuple[str, list[np.ndarray]]:
    """Compiles `model` into `folder` (compile_model's options), builds the session with
    g++ and runs `inputs`; returns session.cpp's text and the outputs."""
    out = compile_model(model, folder, **compile_options)
    build_session(out)
    return (out / "session.cpp").read_text(), run_session(out, inputs).outputs


def assert_outputs_match(ours: list[np.ndarray], refs: list[np.ndarray], rtol: float = 1e-3,
                         atol: float = 1e-5) -> None:
    """As many outputs as references, each close to its reference (reshaped to it)."""
    assert len(ours) == len(refs)
    for out, ref in zip(ours, refs):
        ref = ref.reshape(out.shape)
        err = float(np.abs(out - ref).max())
        assert np.allclose(out, ref, rtol=rtol, atol=atol), f"max abs error {err}"


class _MadeZoo:
    """The zoo models this test run made (load_zoo_model: seeded weights, and normalisation
    calibrated through onnxruntime one level at a time; VGG-19 took 7 s a time here,
    DenseNet-121 3.6 s), kept serialised, least recently used dropped first past `budget`
    bytes: a model asked for again is parsed back instead of made again. The last one asked
    for is kept as an object too, and returned as it is while it stays the last."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._made: OrderedDict[str, bytes] = OrderedDict()
        self._last: tuple[str, onnx.ModelProto] | None = None

    def model(self, name: str) -> onnx.ModelProto:
        from paleozoic_testing.zoo import load_zoo_model

        if self._last is not None and self._last[0] == name:
            return self._last[1]
        self._last = None  # VGG-19 alone holds 575 MB of weights: one object at a time
        if name in self._made:
            self._made.move_to_end(name)
            model = onnx.load_from_string(self._made[name])
        else:
            model = load_zoo_model(name, seed=0)
            made = model.SerializeToString()
            if len(made) <= self._budget:
                self._made[name] = made
                while sum(map(len, self._made.values())) > self._budget:
                    self._made.popitem(last=False)
        self._last = (name, model)
        return model


# The nine made models come to 1.3 GB, and all are kept: under 768 MB, least recently used
# dropped the small ones to fit the large ones, and a run still made VGG-19 and DenseNet-121
# three times each.
_zoo = _MadeZoo(budget=1536 << 20)


def zoo_model(name: str) -> onnx.ModelProto:
    """The zoo model `name` (seed 0), made once per test run where it fits (_MadeZoo); the
    same object while no other model is asked for in between."""
    return _zoo.model(name)


def dp_plan(queue: LayerQueue) -> Plan:
    """The plan the exact DP finds under the device model: mixed fused and single-layer
    blocks on MPs other than 1 and 32."""
    from paleozoic.optimize import load_optimizer, run_optimizer
    from paleozoic.optimize.device_cost import DeviceModelOracle

    return run_optimizer(load_optimizer("dp"), queue, DeviceModelOracle(queue))


def runtime_outputs(queue: LayerQueue, batches: list[np.ndarray],
                    plan: str | Plan = "per-layer") -> np.ndarray:
    """The queue's first output for each batch, run in-process on the pybind runtime (the
    wrapper and mock SDK an emitted session links) under `plan`, the session built and
    compiled once; the batches' outputs concatenated along the first axis."""
    from paleozoic import _runtime
    from paleozoic.runner.graph import InputRecorder, build_runtime_graph
    from paleozoic.pipeline import resolve_plan

    session = _runtime.Session()
    recorder = InputRecorder(session)
    layers = build_runtime_graph(queue, recorder, bind_weights=True)
    by_name = {layer.name: built for layer, built in zip(queue.layers, layers)}
    for block in resolve_plan(queue, plan).blocks:
        session.compile_block(block.name, block.fuse, block.mp,
                              [by_name[name] for name in block.layers])
    output = {layer.output: built for layer, built in zip(queue.layers, layers)}[
        queue.outputs[0]].output
    results = []
    for batch in batches:
        session.set_input(recorder.inputs[0], np.ascontiguousarray(batch, dtype=np.float32))
        session.run()
        results.append(np.array(session.get(output)))
    return np.concatenate(results)


def onnx_pads(pads: tuple[int, int, int, int]) -> list[int]:
    """The runtime's pads (top, bottom, left, right) in ONNX's order."""
    top, bottom, left, right = pads
    return [top, left, bottom, right]


def np_lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """ONNX LRN in float64: channel window [c - floor((size-1)/2), c + ceil((size-1)/2)],
    clipped."""
    sq = x.astype(np.float64) ** 2
    out = np.empty_like(sq)
    channels = x.shape[1]
    for c in range(channels):
        lo, hi = max(0, c - (size - 1) // 2), min(channels - 1, c + size // 2)
        out[:, c] = x[:, c] / (bias + alpha / size * sq[:, lo:hi + 1].sum(axis=1)) ** beta
    return out


def run_chain_blocks(session, x, layers, x_data: np.ndarray, fuse: bool, mp: int) -> np.ndarray:
    """Compiles `layers` (built on `session` from input `x`) as one fused block, or else one
    unfused block a layer, runs `x_data` through them, asserts every block took device time
    and returns the last layer's output."""
    if fuse:
        session.compile_block("all", fuse=True, mp=mp, layers=layers)
    else:
        for i, layer in enumerate(layers):
            session.compile_block(f"b{i}", fuse=False, mp=mp, layers=[layer])
    session.set_input(x, x_data)
    session.run()
    assert all(us > 0 for us in session.block_micros())
    return session.get(layers[-1].output)


def assert_split_blocks_take_their_estimates(session, x, layers, split: int,
                                             x_shape: tuple[int, ...], mp: int = 8) -> None:
    """Compiles `layers` as two fused blocks cut before `layers[split]`, runs ones through
    them and asserts each block's device time is the device model's estimate for it."""
    want = [session.estimate_block(layers[:split], mp), session.estimate_block(layers[split:], mp)]
    session.compile_block("first", fuse=True, mp=mp, layers=layers[:split])
    session.compile_block("second", fuse=True, mp=mp, layers=layers[split:])
    session.set_input(x, np.ones(x_shape, np.float32))
    session.run()
    np.testing.assert_allclose(session.block_micros(), want, rtol=1e-5)


def head_middle_tail_plan(queue: LayerQueue, head: int, middle: int) -> Plan:
    """Three blocks of several layers, fused and not, each on its own MP: the first `head`
    layers fused on MP 4, the next `middle` unfused on MP 2, the rest fused on MP 16."""
    from paleozoic.ir.plan import PlannedBlock

    names = [layer.name for layer in queue.layers]
    return Plan([PlannedBlock("head", names[:head], 4, True),
                 PlannedBlock("middle", names[head:head + middle], 2, False),
                 PlannedBlock("tail", names[head + middle:], 16, True)], strategy="mixed")


def wrapper_and_raw_outputs(model, folder: Path, feed: np.ndarray) -> tuple[list, list]:
    """Writes, builds (-Wall -Wextra -Werror) and runs `model`'s session in both emitted
    forms under `folder`; asserts they report the same total device time; returns the
    wrapper form's outputs and the raw form's."""
    import re

    from paleozoic.codegen.emit import write_session

    results = {}
    for emit in ("wrapper", "raw"):
        (folder / emit).mkdir()
        write_session(model, folder / emit, "t", emit=emit)
        build_session(folder / emit)
        results[emit] = run_session(folder / emit, [feed])
    device = [re.search(r"total device time: ([\d.]+) us", results[e].report).group(1)
              for e in ("wrapper", "raw")]
    assert device[0] == device[1]
    return results["wrapper"].outputs, results["raw"].outputs


# The start of a C++ program against the mock SDK alone (no wrapper): tensors and a line
# "<case> <status>" per SDK call, for tests of the SDK's own rules.
SDK_PROGRAM_PRELUDE = r"""
#include <cnml.h>
#include <cnrt.h>

#include <cmath>
#include <cstdio>
#include <vector>

static cnmlTensor_t tensor(cnmlTensorType_t type, std::vector<int> dims) {
  cnmlTensor_t t = nullptr;
  cnmlCreateTensor_V2(&t, type);
  cnmlSetTensorShape_V2(t, static_cast<int>(dims.size()), dims.data(), nullptr);
  cnmlSetTensorDataType(t, CNML_DATA_FLOAT32);
  return t;
}

static void report(const char* name, int status) { std::printf("%s %d\n", name, status); }
"""

# The start of such a program's main(): the SDK up, a queue.
SDK_MAIN_START = r"""
int main() {
  cnmlInit(0);
  cnrtQueue_t queue = nullptr;
  cnrtCreateQueue(&queue);
"""

# The end of such a program's main(), after it freed its own tensors and ops.
SDK_PROGRAM_EPILOGUE = r"""
  cnrtDestroyQueue(queue);
  cnmlExit();
  return 0;
}
"""

# The statuses those programs report (cnmlStatus_t).
SUCCESS, INVALIDARG, INVALIDPARAM, UNSUPPORT = 0, 2, 8, 12

_PROGRAM_CMAKE = """cmake_minimum_required(VERSION 3.18)
project(program LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(PaleozoicRuntime CONFIG REQUIRED)
add_executable(program program.cpp)
target_compile_options(program PRIVATE -Wall -Wextra -Werror)
target_link_libraries(program PRIVATE {target})
"""


def cpp_program_output(source: str, folder: Path, target: str = "Paleozoic::mock_sdk") -> str:
    """Builds `source` (a whole program) in `folder` against `target` of the installed
    runtime (Paleozoic::mock_sdk: the mock SDK alone; Paleozoic::runtime: the wrapper over
    it), runs it, and returns what it printed."""
    import subprocess

    from paleozoic.pipeline import runtime_prefix

    (folder / "CMakeLists.txt").write_text(_PROGRAM_CMAKE.format(target=target))
    (folder / "program.cpp").write_text(source)
    build = folder / "build"
    for command in (["cmake", "-S", str(folder), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     f"-DCMAKE_PREFIX_PATH={runtime_prefix()}"],
                    ["cmake", "--build", str(build)]):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    return subprocess.run([str(build / "program")], capture_output=True, text=True,
                          check=True).stdout


def sdk_program_statuses(source: str, folder: Path) -> dict[str, int]:
    """Builds `source` (a whole program printing "<case> <status>" lines) against the
    installed mock SDK in `folder`, runs it, and returns the statuses by case."""
    return {name: int(status) for name, status in
            (line.split() for line in cpp_program_output(source, folder).splitlines())}


def hand_built_queue(layers: list, input_shape: tuple[int, ...], outputs: list[str]):
    """A LayerQueue from (name, kind, inputs, attrs, {role: weight}) rows over one input
    "x", with shapes from the kinds' own shape functions: for emitting kinds the frontend
    is not needed for."""
    from paleozoic.ir import Layer, LayerQueue, TensorInfo
    from paleozoic.ir.layer import Operator
    from paleozoic.ops import KINDS

    tensors = {"x": TensorInfo("x", tuple(input_shape))}
    weights: dict[str, np.ndarray] = {}
    queue_layers = []
    for name, kind, inputs, attrs, roles in layers:
        shape = KINDS[kind].output_shape(attrs, [tensors[i].shape for i in inputs])
        tensors[name] = TensorInfo(name, shape)
        layer = Layer(name=name, op=Operator(kind, dict(attrs)), inputs=list(inputs),
                      output=name)
        for role, value in roles.items():
            weights[f"{name}.{role}"] = value
            layer.weights[role] = f"{name}.{role}"
        queue_layers.append(layer)
    return LayerQueue(layers=queue_layers, inputs=[tensors["x"]], outputs=list(outputs),
                      tensors=tensors, weights=weights, source="hand.onnx", opset=13,
                      ir_version=8)


def small_cnn_model() -> onnx.ModelProto:
    """Conv(bias) -> BN -> Relu -> MaxPool -> residual Add -> GAP -> Flatten -> Gemm -> Softmax."""
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int, scale: float = 0.3) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        init("w1", 8, 3, 3, 3), init("b1", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "gamma"),
        init("beta", 8), init("mean", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "var"),
        init("w2", 8, 8, 3, 3), init("fc_w", 10, 8), init("fc_b", 10),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"],
                         ["bn1"], name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p1"], ["sum"], name="residual"),
        helper.make_node("GlobalAveragePool", ["sum"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def runtime_if_model(form: str = "plain") -> onnx.ModelProto:
    """x0 [1, 8] -> x = Exp(x0); If(ReduceSum(x0) > 0) then Relu(x) * 2 else Sigmoid(x) + 1;
    z = that + x. form "nested": the else branch holds an If(ReduceMax(x) < 0.5) choosing
    Tanh(x) or Neg(x) before its Sigmoid. form "flag": the condition is a bool input
    `flag` [1] and the If's second output is ArgMax of x (then) or of -x (else), an int64
    tensor only one branch writes."""
    f32 = TensorProto.FLOAT

    def branch(name: str, nodes: list, outs: list, inits: list) -> onnx.GraphProto:
        return helper.make_graph(nodes, name, [], outs, inits)

    def scalar(name: str, value: float) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    y = helper.make_tensor_value_info
    flag = form == "flag"
    then_nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"],
                                                                          ["t_out"])]
    else_nodes = [helper.make_node("Sigmoid", ["x"], ["s"]),
                  helper.make_node("Add", ["s", "one"], ["e_out"])]
    then_outs, else_outs = [y("t_out", f32, [1, 8])], [y("e_out", f32, [1, 8])]
    else_inits = [scalar("one", 1.0)]
    if flag:
        then_nodes.append(helper.make_node("ArgMax", ["x"], ["t_idx"], axis=1))
        else_nodes += [helper.make_node("Neg", ["x"], ["negated"]),
                       helper.make_node("ArgMax", ["negated"], ["e_idx"], axis=1)]
        then_outs.append(y("t_idx", TensorProto.INT64, [1, 1]))
        else_outs.append(y("e_idx", TensorProto.INT64, [1, 1]))
    if form == "nested":
        inner_then = branch("inner_then", [helper.make_node("Tanh", ["x"], ["it"])],
                            [y("it", f32, [1, 8])], [])
        inner_else = branch("inner_else", [helper.make_node("Neg", ["x"], ["ie"])],
                            [y("ie", f32, [1, 8])], [])
        else_nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=1),
                      helper.make_node("Less", ["m", "half"], ["c2"]),
                      helper.make_node("If", ["c2"], ["e_in"], name="inner_if",
                                       then_branch=inner_then, else_branch=inner_else),
                      helper.make_node("Sigmoid", ["e_in"], ["s"]),
                      helper.make_node("Add", ["s", "one"], ["e_out"])]
        else_inits.append(scalar("half", 0.5))
    nodes = [helper.make_node("Exp", ["x0"], ["x"])]
    inputs = [y("x0", f32, [1, 8])]
    if flag:
        inputs.append(y("flag", TensorProto.BOOL, [1]))
        condition = "flag"
    else:
        nodes += [helper.make_node("ReduceSum", ["x0"], ["sum"], keepdims=1),
                  helper.make_node("Greater", ["sum", "zero"], ["c"])]
        condition = "c"
    outs = ["y", "idx"] if flag else ["y"]
    nodes += [helper.make_node("If", [condition], outs, name="outer_if",
                               then_branch=branch("then", then_nodes, then_outs,
                                                  [scalar("two", 2.0)]),
                               else_branch=branch("else", else_nodes, else_outs, else_inits)),
              helper.make_node("Add", ["y", "x"], ["z"])]
    outputs = [y("z", f32, [1, 8])] + ([y("idx", TensorProto.INT64, [1, 1])] if flag else [])
    graph = helper.make_graph(nodes, f"runtime_if_{form}", inputs, outputs,
                              [scalar("zero", 0.0)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
