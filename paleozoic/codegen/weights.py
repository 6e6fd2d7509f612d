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


class WeightFileError(ValueError):
    """A weights file that cannot be read back; the message names the file."""


def read_weights(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a file written by write_weights, by name, in file order; checks the
    header and every tensor's CRC (as pz::WeightFile does) so a damaged file is refused."""
    try:
        blob = Path(path).read_bytes()
    except OSError as err:
        raise WeightFileError(f"{path}: cannot read ({err.strerror})") from None
    if blob[:8] != MAGIC:
        raise WeightFileError(f"{path}: not a Paleozoic weights file")
    try:
        version, count = struct.unpack_from("<II", blob, 8)
        if version != VERSION:
            raise WeightFileError(f"{path}: weights file version {version}, expected {VERSION}")
        data_offset = struct.unpack_from("<Q", blob, 32)[0]
        pos, out = 40, {}
        for _ in range(count):
            (length,) = struct.unpack_from("<H", blob, pos)
            name = blob[pos + 2:pos + 2 + length].decode("utf-8")
            pos += 2 + length
            dtype, rank = struct.unpack_from("<BB", blob, pos)
            shape = struct.unpack_from(f"<{rank}I", blob, pos + 2)
            pos += 2 + 4 * rank
            offset, nbytes, crc = struct.unpack_from("<QQI", blob, pos)
            pos += 20
            start = data_offset + offset
            data = blob[start:start + nbytes]
            if dtype != DTYPE_FLOAT32 or len(data) != nbytes or zlib.crc32(data) != crc:
                raise WeightFileError(f"{path}: tensor {name!r} is damaged (size or CRC)")
            out[name] = np.frombuffer(data, dtype="<f4").reshape(shape).astype(np.float32)
        (header_crc,) = struct.unpack_from("<I", blob, pos)
    except struct.error:
        raise WeightFileError(f"{path}: truncated weights file") from None
    if zlib.crc32(blob[:pos]) != header_crc:
        raise WeightFileError(f"{path}: header CRC mismatch (damaged file)")
    return out
