"""The weights file reader against a small Python writer that follows the format spec."""

import hashlib
import struct
import zlib

import numpy as np
import pytest

from paleozoic import _runtime as rt

TENSORS = {
    "conv1.weight": np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3) / 7,
    "conv1.bias": np.array([1.5, -2.25], np.float32),
    "fc.weight": np.random.default_rng(5).standard_normal((4, 6), dtype=np.float32),
}


def write_weights(path, tensors, *, version=1, model_id=None, magic=b"PZWEIGHT"):
    """Writes the format documented above pz::WeightFile; returns (model_id hex, data_offset)."""
    data = b""
    table = []
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
        data += b"\0" * (-len(data) % 64)
        table.append((name, array.shape, len(data), raw))
        data += raw
    if model_id is None:
        model_id = hashlib.sha256(data).digest()[:16]
    entries = b""
    for name, shape, offset, raw in table:
        encoded = name.encode()
        entries += struct.pack("<H", len(encoded)) + encoded
        entries += struct.pack("<BB", 1, len(shape)) + struct.pack("<%dI" % len(shape), *shape)
        entries += struct.pack("<QQI", offset, len(raw), zlib.crc32(raw))
    header_len = 8 + 4 + 4 + 16 + 8 + len(entries) + 4
    data_offset = (header_len + 63) // 64 * 64
    header = magic + struct.pack("<II", version, len(tensors)) + model_id
    header += struct.pack("<Q", data_offset) + entries
    header += struct.pack("<I", zlib.crc32(header))
    path.write_bytes(header + b"\0" * (data_offset - len(header)) + data)
    return model_id.hex(), data_offset


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "model.weights"
    model_id, data_offset = write_weights(path, TENSORS)
    return path, model_id, data_offset


def test_reads_back_exact_values(good):
    path, model_id, _ = good
    wf = rt.WeightFile(str(path), model_id)
    assert wf.tensor_count == 3
    for name, array in TENSORS.items():
        np.testing.assert_array_equal(wf.get(name, list(array.shape)), array)
    assert rt.WeightFile(str(path), model_id.upper()).tensor_count == 3


def test_weights_configure_a_layer(good):
    path, model_id, _ = good
    wf = rt.WeightFile(str(path), model_id)
    s = rt.Session()
    x = s.input("x", [1, 3, 4, 4])
    c = s.conv("conv1", x, out_channels=2, kernel=(3, 3))
    c.config(wf.get("conv1.weight", [2, 3, 3, 3]), wf.get("conv1.bias", [2]))
    s.mark_output(c.output)
    s.compile_block("b0", fuse=True, mp=1, layers=[c])
    s.set_input(x, np.ones((1, 3, 4, 4), np.float32))
    s.run()
    want = TENSORS["conv1.weight"].sum(axis=(1, 2, 3)) + TENSORS["conv1.bias"]
    np.testing.assert_allclose(s.get(c.output)[0, :, 0, 0], want, rtol=1e-5)


def corrupt(path, data_offset, how):
    raw = bytearray(path.read_bytes())
    if how == "truncated_data":
        del raw[-10:]
    elif how == "truncated_header":
        del raw[30:]
    elif how == "flipped_data":
        raw[data_offset + 5] ^= 0x40
    elif how == "flipped_header":
        raw[60] ^= 0x01   # inside the tensor table
    path.write_bytes(bytes(raw))


CORRUPTIONS = {
    "truncated_data": r"is truncated: tensor 'fc.weight' needs data bytes",
    "truncated_header": r"is truncated: expected 16 bytes of model id",
    "flipped_data": r"checksum mismatch in tensor 'conv1.weight'",
    "flipped_header": r"header checksum mismatch",
}


@pytest.mark.parametrize("how,match", CORRUPTIONS.items())
def test_corrupted_file(good, how, match):
    path, model_id, data_offset = good
    corrupt(path, data_offset, how)
    with pytest.raises(rt.Error, match=match) as info:
        rt.WeightFile(str(path), model_id)
    assert str(path) in str(info.value)


def test_bad_magic(tmp_path):
    path = tmp_path / "w.bin"
    model_id, _ = write_weights(path, TENSORS, magic=b"NOTPZWTS")
    with pytest.raises(rt.Error, match=r"not a Paleozoic weights file: expected magic "
                                       r"\"PZWEIGHT\", found \"NOTPZWTS\""):
        rt.WeightFile(str(path), model_id)


def test_other_version(tmp_path):
    path = tmp_path / "w.bin"
    model_id, _ = write_weights(path, TENSORS, version=2)
    with pytest.raises(rt.Error, match="has format version 2, expected 1"):
        rt.WeightFile(str(path), model_id)


def test_other_model(good):
    path, model_id, _ = good
    other = "00" * 16
    with pytest.raises(rt.Error, match="weights are for another model: expected id %s, file has "
                                       "%s .* re-run paleozoic compile" % (other, model_id)):
        rt.WeightFile(str(path), other)


def test_missing_file(tmp_path):
    with pytest.raises(rt.Error, match="nope.weights' cannot be opened"):
        rt.WeightFile(str(tmp_path / "nope.weights"), "00" * 16)


def test_missing_tensor_and_wrong_shape(good):
    path, model_id, _ = good
    wf = rt.WeightFile(str(path), model_id)
    with pytest.raises(rt.Error, match="has no tensor 'conv2.weight' \\(it holds 3 tensors\\)"):
        wf.get("conv2.weight", [2, 3, 3, 3])
    with pytest.raises(rt.Error, match=r"tensor 'fc.weight' has shape \[4, 6\], "
                                       r"expected \[6, 4\]"):
        wf.get("fc.weight", [6, 4])


def test_float_file_round_trip_and_size_check(tmp_path):
    path = tmp_path / "x.bin"
    values = np.linspace(-1, 1, 12, dtype=np.float32)
    rt.write_float_file(str(path), values)
    assert path.stat().st_size == 48
    np.testing.assert_array_equal(rt.read_float_file(str(path), 12), values)
    with pytest.raises(rt.Error, match="holds 48 bytes, expected 52 \\(13 float32 values\\)"):
        rt.read_float_file(str(path), 13)


def test_on_demand_reads_the_same_values(good):
    path, model_id, _ = good
    wf = rt.WeightFile(str(path), model_id, on_demand=True)
    assert wf.tensor_count == 3
    for name, array in TENSORS.items():
        np.testing.assert_array_equal(wf.get(name, list(array.shape)), array)


def test_on_demand_checks_a_tensor_when_it_is_read(good):
    path, model_id, data_offset = good
    corrupt(path, data_offset, "flipped_data")
    wf = rt.WeightFile(str(path), model_id, on_demand=True)  # the header is intact
    np.testing.assert_array_equal(wf.get("fc.weight", [4, 6]), TENSORS["fc.weight"])
    with pytest.raises(rt.Error, match=r"checksum mismatch in tensor 'conv1.weight'") as info:
        wf.get("conv1.weight", [2, 3, 3, 3])
    assert str(path) in str(info.value)


@pytest.mark.parametrize("how,match", [(how, match) for how, match in CORRUPTIONS.items()
                                       if how != "flipped_data"])  # checked when read
def test_on_demand_refuses_a_damaged_header_or_size_at_open(good, how, match):
    path, model_id, data_offset = good
    corrupt(path, data_offset, how)
    with pytest.raises(rt.Error, match=match):
        rt.WeightFile(str(path), model_id, on_demand=True)
