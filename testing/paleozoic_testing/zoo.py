"""The nine classic CNNs that ship inside the onnx wheel, with real (seeded random) weights.

The light_* models in onnx/backend/test/data/light fill every weight with one constant
through ConstantOfShape nodes, which makes all outputs equal and proves nothing. We
re-materialise each such weight as an initializer with seeded values of a sensible
scale for its role (He-style for conv and fully-connected weights, near-one scales and
positive variances for normalisation), so comparisons against onnxruntime are meaningful.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from paleozoic.accuracy.inputs import random_inputs
from paleozoic.frontend.loader import as_inputs

logger = logging.getLogger(__name__)

ZOO_MODELS: tuple[str, ...] = (
    "bvlc_alexnet",
    "zfnet512",
    "vgg19",
    "resnet50",
    "squeezenet",
    "inception_v1",
    "inception_v2",
    "densenet121",
    "shufflenet",
)


def zoo_dir() -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def zoo_path(name: str) -> Path:
    path = zoo_dir() / f"light_{name}.onnx"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: the installed onnx package has no light_{name}.onnx "
            f"(known models: {', '.join(ZOO_MODELS)})"
        )
    return path


def _role_values(
    rng: np.random.Generator, shape: tuple[int, ...], consumer: onnx.NodeProto | None,
    slot: int, chain_op: str | None, feeds_sum: bool,
) -> np.ndarray:
    """Values for one weight given the node that reads it and at which input slot."""
    op = consumer.op_type if consumer is not None else None
    if op == "Conv" and slot == 1:
        return rng.normal(0.0, np.sqrt(2.0 / int(np.prod(shape[1:]))), size=shape)
    if op == "Gemm" and slot == 1:
        return rng.normal(0.0, np.sqrt(1.0 / _gemm_fan_in(consumer, shape)), size=shape)
    if op == "BatchNormalization":
        if slot == 1 and feeds_sum:
            # Small gamma on residual branches keeps the sum near unit scale across
            # dozens of blocks (the zero-gamma initialisation of residual networks).
            return rng.uniform(0.1, 0.3, size=shape)
        if slot == 1:
            return rng.uniform(0.5, 1.5, size=shape)
        if slot == 4:  # variance must be positive
            return rng.uniform(0.5, 1.5, size=shape)
        return rng.uniform(-0.2, 0.2, size=shape)  # beta, mean
    if chain_op == "Mul":
        return rng.uniform(0.5, 1.5, size=shape)
    return rng.uniform(-0.1, 0.1, size=shape)  # biases and additive constants


def _gemm_fan_in(node: onnx.NodeProto, shape: tuple[int, ...]) -> int:
    trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
    return shape[1] if trans_b else shape[0]


def materialise(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """Returns a copy of `model` with every float ConstantOfShape weight made an initializer."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    rng = np.random.default_rng(seed)
    inits = {t.name: t for t in graph.initializer}
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, slot))

    def seeded(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        users = consumers.get(name, [])
        consumer, slot = users[0] if users else (None, 0)
        chain_op = None
        if consumer is not None and consumer.op_type == "Unsqueeze":
            chain = consumers.get(consumer.output[0], [])
            chain_op = chain[0][0].op_type if chain else None
        feeds_sum = consumer is not None and any(
            user.op_type in ("Sum", "Add")
            for out in consumer.output for user, _ in consumers.get(out, []))
        values = _role_values(rng, shape, consumer, slot, chain_op, feeds_sum)
        return numpy_helper.from_array(values.astype(np.float32), name)

    kept: list[onnx.NodeProto] = []
    new_inits: list[onnx.TensorProto] = []
    dropped_shape_inputs: set[str] = set()
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            kept.append(node)
            continue
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        dtype = value.data_type if value is not None else onnx.TensorProto.FLOAT
        if dtype != onnx.TensorProto.FLOAT:
            kept.append(node)
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
        new_inits.append(seeded(node.output[0], shape))
        dropped_shape_inputs.add(node.input[0])
    # Some models mix in weights stored as initializers; seed those too so that every
    # weight of the model under test comes from the same seeded recipe.
    for i, tensor in enumerate(graph.initializer):
        if tensor.data_type == onnx.TensorProto.FLOAT and tensor.name in consumers:
            graph.initializer[i].CopyFrom(seeded(tensor.name, tuple(tensor.dims)))

    still_used = {name for node in kept for name in node.input}
    del graph.node[:]
    graph.node.extend(kept)
    remaining = [t for t in graph.initializer
                 if t.name not in dropped_shape_inputs or t.name in still_used]
    del graph.initializer[:]
    graph.initializer.extend(remaining + new_inits)
    real_inputs = [i for i in graph.input
                   if i.name not in dropped_shape_inputs or i.name in still_used]
    del graph.input[:]
    graph.input.extend(real_inputs)
    # Weights were graph inputs in these IR-3 models; keep them declared so the checker
    # and onnxruntime accept the graph at any IR version.
    declared = {i.name for i in graph.input}
    for t in new_inits:
        if t.name not in declared:
            graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, t.dims))
    onnx.checker.check_model(out)
    return out


def _batchnorm_levels(model: onnx.ModelProto) -> list[list[onnx.NodeProto]]:
    """Groups BatchNormalization nodes so that no group depends on a later one."""
    level_of_tensor: dict[str, int] = {}
    levels: dict[int, list[onnx.NodeProto]] = {}
    for node in model.graph.node:  # ONNX nodes are topologically sorted
        level = max((level_of_tensor.get(name, 0) for name in node.input), default=0)
        if node.op_type == "BatchNormalization":
            levels.setdefault(level, []).append(node)
            level += 1
        for name in node.output:
            level_of_tensor[name] = level
    return [levels[k] for k in sorted(levels)]


def calibrate_batchnorm(model: onnx.ModelProto, seed: int = 0) -> None:
    """Sets each BatchNormalization's mean/variance to the statistics it actually sees.

    Random running statistics normalise nothing, so residual networks blow up (ResNet-50
    logits reach 1e5 and the softmax saturates to one-hot, which hides errors). This is
    data-dependent initialisation, level by level in topological order so each group is
    measured with its upstream already calibrated. Needs onnxruntime; modifies `model`.
    """
    import onnxruntime as ort  # test-time dependency only

    levels = _batchnorm_levels(model)
    if not levels:
        return
    index = {t.name: i for i, t in enumerate(model.graph.initializer)}
    stat_names = {node.input[slot] for group in levels for node in group for slot in (3, 4)}
    stats = {name: numpy_helper.to_array(model.graph.initializer[index[name]])
             for name in sorted(stat_names)}
    # One session for all levels: the statistics become inputs we feed, every
    # normalisation input becomes an output we can fetch.
    probe = as_inputs(model, stats)
    del probe.graph.output[:]
    bn_inputs = list(dict.fromkeys(node.input[0] for group in levels for node in group))
    for name in bn_inputs:
        probe.graph.output.append(helper.make_tensor_value_info(name, 1, None))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    feeds = {**random_inputs(model, seed), **stats}
    for group in levels:
        wanted = list(dict.fromkeys(node.input[0] for node in group))
        values = dict(zip(wanted, session.run(wanted, feeds)))
        for node in group:
            x = values[node.input[0]].astype(np.float64)
            axes = (0,) + tuple(range(2, x.ndim))
            mean = x.mean(axis=axes)
            # Dead (constant) channels get a floor rather than a thousandfold gain.
            var = np.maximum(x.var(axis=axes), 0.05 * x.var(axis=axes).mean() + 1e-3)
            feeds[node.input[3]] = mean.astype(np.float32)
            feeds[node.input[4]] = var.astype(np.float32)
    for name in stat_names:
        model.graph.initializer[index[name]].CopyFrom(
            numpy_helper.from_array(feeds[name], name))


def load_zoo_model(name: str, seed: int = 0) -> onnx.ModelProto:
    """A zoo model with seeded weights and calibrated normalisation (needs onnxruntime)."""
    model = materialise(onnx.load(str(zoo_path(name))), seed)
    calibrate_batchnorm(model, seed)
    return model
