"""The checked binary weights file read by pz::WeightFile (format in runtime.h)."""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path
from typing import Iterable

import numpy as np

MAGIC = b"PZWEIGHT"
VERSION = 1
DTYPE_FLOAT32 = 1
ALIGN = 64


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def write_weights(path: Path, tensors: Iterable[tuple[str, np.ndarray]]) -> str:
    """Writes the file and returns its model id (hex of the first 16 bytes of the sha256
    of the data section). Tensor bytes are hashed and written through zero-copy views, so
    writing adds no copy of the weights (VGG-19's fc6 alone is 411 MB)."""
    items = [(name, np.ascontiguousarray(value, dtype="<f4")) for name, value in tensors]
    entries = []
    offset = 0
    digest = hashlib.sha256()
    for name, value in items:
        data = memoryview(value).cast("B")
        padding = _align(len(data)) - len(data)
        digest.update(data)
        digest.update(b"\0" * padding)
        entries.append((name, value.shape, offset, len(data), zlib.crc32(data)))
        offset += len(data) + padding
    model_id = digest.digest()[:16]

    table = bytearray()
    for name, shape, tensor_offset, nbytes, crc in entries:
        encoded = name.encode("utf-8")
        table += struct.pack("<H", len(encoded)) + encoded
        table += struct.pack("<BB", DTYPE_FLOAT32, len(shape))
        table += struct.pack(f"<{len(shape)}I", *shape)
        table += struct.pack("<QQI", tensor_offset, nbytes, crc)
    fixed_size = 8 + 4 + 4 + 16 + 8
    data_offset = _align(fixed_size + len(table) + 4)
    header = MAGIC + struct.pack("<II", VERSION, len(entries)) + model_id
    header += struct.pack("<Q", data_offset) + bytes(table)
    header += struct.pack("<I", zlib.crc32(header))

    with open(path, "wb") as out:
        out.write(header)
        out.write(b"\0" * (data_offset - len(header)))
        for _, value in items:
            data = memoryview(value).cast("B")
            out.write(data)
            out.write(b"\0" * (_align(len(data)) - len(data)))
    return model_id.hex()
