"""Shared fixtures for the runtime wrapper tests (paleozoic._runtime over the mock SDK)."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def ort_node():
    """Runs one ONNX node on x with onnxruntime; weights become initializers."""

    def run(op_type, x, weights=(), **attrs):
        names = ["w%d" % i for i in range(len(weights))]
        node = helper.make_node(op_type, ["x", *names], ["y"], **attrs)
        graph = helper.make_graph(
            [node], "one_node",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(w, n) for w, n in zip(weights, names)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])
        return sess.run(None, {"x": x})[0]

    return run


@pytest.fixture
def run_layer():
    """Builds one layer on a fresh session, compiles it alone (mp) and returns its output.

    build(s, x) adds the layer (and configures it) and returns its handle.
    """
    from paleozoic import _runtime as rt

    def run(build, *inputs, mp=4, fuse=False):
        s = rt.Session()
        xs = [s.input("x%d" % i, list(a.shape)) for i, a in enumerate(inputs)]
        layer = build(s, *xs)
        s.mark_output(layer.output)
        s.compile_block("b0", fuse=fuse, mp=mp, layers=[layer])
        for t, a in zip(xs, inputs):
            s.set_input(t, a)
        s.run()
        out = s.get(layer.output)
        assert out.dtype == np.float32 and tuple(out.shape) == layer.output.shape
        return out

    return run
