"""Reads an ONNX file without copying its weights into memory.

onnx.load parses every initializer's bytes into the protobuf arena, and converting them to
numpy makes a second copy: two copies of the weights at the peak (VGG-19: 1.3 GB for
575 MB). Here the file is memory-mapped and its protobuf wire format walked just deep
enough (ModelProto.graph -> GraphProto.initializer -> TensorProto.raw_data) to find where
each large float32 initializer's bytes lie. The model handed to the rest of the frontend is
parsed from the file with those byte ranges left out, and the weights become read-only
numpy views of the mapping: the operating system pages them in from the file as the
weights file is written, and can drop them again.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

# Field numbers from onnx.proto.
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_DIMS = 1
_TENSOR_DATA_TYPE = 2
_TENSOR_NAME = 8
_TENSOR_RAW_DATA = 9
_TENSOR_DATA_LOCATION = 14

# Smaller initializers stay in the model (they are few bytes and TVM reads some of them).
STREAM_MIN_ELEMENTS = 1024


class WireFormatError(ValueError):
    """The file is not a well-formed protobuf message."""


@dataclass(frozen=True)
class _Field:
    number: int
    wire_type: int
    start: int          # offset of the key
    value_start: int    # offset of the value (after the length, for length-delimited)
    end: int


def _varint(buf: memoryview | bytes, pos: int, limit: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= limit:
            raise WireFormatError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireFormatError("varint too long")


def _fields(buf: memoryview | bytes, start: int, end: int):
    pos = start
    while pos < end:
        key, value_start = _varint(buf, pos, end)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, stop = _varint(buf, value_start, end)
        elif wire_type == 1:
            stop = value_start + 8
        elif wire_type == 2:
            length, value_start = _varint(buf, value_start, end)
            stop = value_start + length
        elif wire_type == 5:
            stop = value_start + 4
        else:
            raise WireFormatError(f"unsupported wire type {wire_type}")
        if stop > end:
            raise WireFormatError("field runs past the end of its message")
        yield _Field(number, wire_type, pos, value_start, stop)
        pos = stop


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


@dataclass(frozen=True)
class _StreamedTensor:
    name: str
    dims: tuple[int, ...]
    offset: int
    nbytes: int


def _streamable(buf: memoryview, field: _Field) -> tuple[_StreamedTensor, bytes] | None:
    """The tensor's location and its bytes without raw_data, if it is a large float32
    initializer stored inline; None otherwise."""
    name, dims, data_type, raw, external = "", [], 0, None, False
    for sub in _fields(buf, field.value_start, field.end):
        if sub.number == _TENSOR_NAME and sub.wire_type == 2:
            name = bytes(buf[sub.value_start:sub.end]).decode("utf-8")
        elif sub.number == _TENSOR_DIMS and sub.wire_type == 0:
            dims.append(_varint(buf, sub.value_start, sub.end)[0])
        elif sub.number == _TENSOR_DIMS and sub.wire_type == 2:  # packed
            pos = sub.value_start
            while pos < sub.end:
                value, pos = _varint(buf, pos, sub.end)
                dims.append(value)
        elif sub.number == _TENSOR_DATA_TYPE and sub.wire_type == 0:
            data_type = _varint(buf, sub.value_start, sub.end)[0]
        elif sub.number == _TENSOR_RAW_DATA and sub.wire_type == 2:
            raw = sub
        elif sub.number == _TENSOR_DATA_LOCATION and sub.wire_type == 0:
            external = _varint(buf, sub.value_start, sub.end)[0] == onnx.TensorProto.EXTERNAL
    count = int(np.prod(dims)) if dims else 1
    if (raw is None or external or data_type != onnx.TensorProto.FLOAT
            or count < STREAM_MIN_ELEMENTS or raw.end - raw.value_start != 4 * count):
        return None
    rest = bytes(buf[field.value_start:raw.start]) + bytes(buf[raw.end:field.end])
    return _StreamedTensor(name, tuple(dims), raw.value_start, 4 * count), rest


class StreamedModel:
    """An ONNX model whose large float32 initializers are views of the memory-mapped
    file. `proto` holds those initializers with their name, type and dims but no data;
    `weights` maps their names to read-only arrays."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        with open(path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        buf = memoryview(self._map)
        try:
            model_bytes, streamed = self._split(buf)
        finally:
            buf.release()
        self.proto = onnx.ModelProto.FromString(model_bytes)
        self.weights: dict[str, np.ndarray] = {}
        for tensor in streamed:
            array = np.frombuffer(self._map, dtype="<f4", count=tensor.nbytes // 4,
                                  offset=tensor.offset)
            self.weights[tensor.name] = array.reshape(tensor.dims)

    @staticmethod
    def _split(buf: memoryview) -> tuple[bytes, list[_StreamedTensor]]:
        model_parts: list[bytes] = []
        streamed: list[_StreamedTensor] = []
        for field in _fields(buf, 0, len(buf)):
            if field.number != _MODEL_GRAPH or field.wire_type != 2:
                model_parts.append(bytes(buf[field.start:field.end]))
                continue
            graph_parts: list[bytes] = []
            for sub in _fields(buf, field.value_start, field.end):
                found = (_streamable(buf, sub) if sub.number == _GRAPH_INITIALIZER
                         and sub.wire_type == 2 else None)
                if found is None:
                    graph_parts.append(bytes(buf[sub.start:sub.end]))
                else:
                    streamed.append(found[0])
                    graph_parts.append(_length_delimited(_GRAPH_INITIALIZER, found[1]))
            model_parts.append(_length_delimited(_MODEL_GRAPH, b"".join(graph_parts)))
        return b"".join(model_parts), streamed
