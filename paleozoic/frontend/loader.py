"""Loading and checking ONNX models before anything else looks at them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from paleozoic.errors import ModelLoadError
from paleozoic.frontend.weight_stream import StreamedModel, WireFormatError

logger = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    """A checked model. Loaded from a file, its large float32 initializers carry no data
    in `proto`; `weights` holds them as read-only views of the memory-mapped file."""

    proto: onnx.ModelProto
    source: str                      # a short name for messages (the file name)
    weights: dict[str, np.ndarray] = field(default_factory=dict)


def load_onnx(model: str | Path | onnx.ModelProto) -> LoadedModel:
    if isinstance(model, onnx.ModelProto):
        _check(model, model.graph.name or "<model>")
        return LoadedModel(model, model.graph.name or "<model>")
    path = Path(model)
    name = str(path)
    if not path.is_file():
        raise ModelLoadError(f"{path}: no such file; pass the path of an .onnx model")
    try:
        streamed = StreamedModel(path)
        proto = streamed.proto
        if _has_external_data(proto):
            load_external_data(proto, path)
    except (DecodeError, WireFormatError, ValueError, RuntimeError, OSError) as err:
        raise ModelLoadError(
            f"{path}: not a readable ONNX model ({type(err).__name__}: {err}); the file "
            f"may be truncated or of another format") from None
    if not proto.graph.node:
        raise ModelLoadError(f"{path}: the ONNX graph has no nodes; the file may be "
                             f"truncated or not an ONNX model")
    # The checker serialises whatever it is given and parses that copy again in C++, so it
    # sees the streamed weights as typed graph inputs: it checks the structure without
    # copying the data (whose size the stream already checked against the dims).
    _check(as_inputs(proto, streamed.weights), name)
    return LoadedModel(proto, name, streamed.weights)


def _check(proto: onnx.ModelProto, name: str) -> None:
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0]
        raise ModelLoadError(f"{name}: fails the ONNX checker: {first}") from None


def as_inputs(proto: onnx.ModelProto, streamed: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `proto` without the data-less streamed initializers, declared as graph
    inputs of their type and shape instead."""
    if not streamed:
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    kept = [t for t in copy.graph.initializer if t.name not in streamed]
    del copy.graph.initializer[:]
    copy.graph.initializer.extend(kept)
    declared = {v.name for v in copy.graph.input}
    copy.graph.input.extend(
        onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, list(value.shape))
        for name, value in streamed.items() if name not in declared)
    return copy


def _has_external_data(proto: onnx.ModelProto) -> bool:
    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer)


def load_external_data(proto: onnx.ModelProto, path: Path) -> None:
    """Reads the initializers that `proto` (loaded from `path`) keeps in external files;
    a missing or unreadable file is a ModelLoadError naming it and the tensor."""
    for tensor in proto.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        data = path.parent / location
        if not location or not data.is_file():
            raise ModelLoadError(
                f"{path}: initializer {tensor.name!r} keeps its data in external file "
                f"{str(data)!r}, which does not exist; put the data file next to the model "
                f"(onnx.save_model(..., save_as_external_data=True) writes both)")
    try:
        onnx.external_data_helper.load_external_data_for_model(proto, str(path.parent))
    except (onnx.checker.ValidationError, OSError, ValueError) as err:
        raise ModelLoadError(f"{path}: cannot read the model's external data: {err}") from None


def load_full_model(path: str | Path) -> onnx.ModelProto:
    """The whole model with every weight in memory (for onnxruntime and the float64
    reference), with the loader's errors for missing, unreadable or truncated files."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"{path}: no such file; pass the path of an .onnx model")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError) as err:
        raise ModelLoadError(f"{path}: not a readable ONNX model ({type(err).__name__}: "
                             f"{err})") from None
    if _has_external_data(proto):
        load_external_data(proto, path)
    return proto
