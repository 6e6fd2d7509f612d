"""Seeded inputs for a model (`paleozoic verify --seed`, tests, benchmarks): standard normal
or uniform floats, and integer inputs that mean something: token ids within the embedding
table they index, uint8 pixels, attention masks that really mask."""

from __future__ import annotations

import numpy as np
import onnx


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs that are real data inputs (not initializers)."""
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def random_inputs(model: onnx.ModelProto, seed: int = 0,
                  shapes: dict[str, tuple[int, ...]] | None = None,
                  distribution: str = "normal") -> dict[str, np.ndarray]:
    """Seeded inputs, standard normal (default) or uniform in [0, 1); `shapes` (by input
    name) overrides the model's declared shapes (needed where those are symbolic)."""
    if distribution not in ("normal", "uniform"):
        raise ValueError(f"unknown input distribution {distribution!r} (normal, uniform)")
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    ranges = integer_input_ranges(model)
    for value in graph_inputs(model):
        dims = (shapes or {}).get(value.name) or [
            d.dim_value for d in value.type.tensor_type.shape.dim]
        elem = value.type.tensor_type.elem_type
        if elem in _INTEGER_INPUTS:
            feeds[value.name] = _integer_input(rng, dims, ranges.get(value.name),
                                               _INTEGER_INPUTS[elem])
            continue
        draw = rng.standard_normal if distribution == "normal" else rng.random
        feeds[value.name] = draw(dims).astype(np.float32)
    return feeds


_INTEGER_INPUTS = {onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
                   onnx.TensorProto.UINT8: np.uint8}
# Nodes that pass an integer input's values on unchanged (on the way to a Gather).
_VALUE_PRESERVING = {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Identity", "Flatten"}


def integer_input_ranges(model: onnx.ModelProto) -> dict[str, int]:
    """For each integer graph input whose values index a Gather's constant table (token
    ids into an embedding, through casts and reshapes), the number of valid indices: the
    smallest table's size along the gathered axis."""
    graph = model.graph
    tables = {t.name: tuple(t.dims) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    tables[node.output[0]] = tuple(attr.t.dims)
    origin = {v.name: v.name for v in graph_inputs(model)
              if v.type.tensor_type.elem_type in _INTEGER_INPUTS}
    ranges: dict[str, int] = {}
    for node in graph.node:
        if node.op_type in _VALUE_PRESERVING and node.input and node.input[0] in origin:
            origin[node.output[0]] = origin[node.input[0]]
        elif node.op_type == "Gather" and len(node.input) > 1 and node.input[1] in origin \
                and node.input[0] in tables:
            axis = next((int(a.i) for a in node.attribute if a.name == "axis"), 0)
            dims = tables[node.input[0]]
            size = int(dims[axis % len(dims)]) if dims else 0
            name = origin[node.input[1]]
            ranges[name] = min(ranges.get(name, size), size)
    return ranges


def _integer_input(rng: np.random.Generator, dims: list[int], limit: int | None,
                   dtype: type) -> np.ndarray:
    """Indices in [0, limit) for an input that indexes a table; pixels over [0, 256) for
    uint8; otherwise an attention-style 0/1 mask that really masks: ones with a random tail
    of zeros in every row (the first position always kept)."""
    if limit is not None:
        return rng.integers(0, limit, size=dims).astype(dtype)
    if dtype is np.uint8:
        return rng.integers(0, 256, size=dims).astype(dtype)
    mask = np.ones(dims, dtype=dtype)
    if mask.ndim and mask.shape[-1] > 1:
        rows = mask.reshape(-1, mask.shape[-1])
        for row in rows:
            row[int(rng.integers(1, row.size + 1)):] = 0
        mask = rows.reshape(dims)
    return mask
