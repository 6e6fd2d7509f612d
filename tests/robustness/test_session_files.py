"""Run-time file errors in a built session (the real executable, not the pybind module):
weights missing, truncated, of another model or version, corrupted; inputs of the wrong
size or count. Each is refused (exit 1) naming the file, with what was expected and what
was found, and no output file is written."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from paleozoic.pipeline import build_session, compile_model

INPUT_SHAPE = (1, 3, 16, 16)


def _other_model() -> onnx.ModelProto:
    """Same input as small_cnn, different weights and layers."""
    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, np.float32), "w_other")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w_other"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        "other", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "paleozoic_tests_root_conftest", Path(__file__).parents[1] / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = tmp_path_factory.mktemp("session_files")
    out = compile_model(module.small_cnn.__wrapped__(), root / "small", plan="fuse-all")
    build_session(out, jobs=1)
    compile_model(_other_model(), root / "other", plan="fuse-all")
    return out


def run(session: Path, tmp_path: Path, weights: Path | None = None,
        inputs: list[Path] | None = None) -> subprocess.CompletedProcess[str]:
    if inputs is None:
        good = tmp_path / "input.bin"
        np.zeros(INPUT_SHAPE, "<f4").tofile(good)
        inputs = [good]
    outdir = tmp_path / "outputs"
    outdir.mkdir(exist_ok=True)
    command = [str(session / "build" / "session"), "-w",
               str(weights or session / "weights.bin"), "-o", str(outdir)]
    for path in inputs:
        command += ["-i", str(path)]
    return subprocess.run(command, capture_output=True, text=True)


def assert_refused(result: subprocess.CompletedProcess[str], tmp_path: Path,
                   *fragments: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    assert not any((tmp_path / "outputs").iterdir()), "an output was written"


def copy_weights(session: Path, tmp_path: Path) -> tuple[Path, bytearray]:
    path = tmp_path / "weights.bin"
    shutil.copy(session / "weights.bin", path)
    return path, bytearray(path.read_bytes())


def test_good_files_run(session, tmp_path):
    result = run(session, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "outputs" / "softmax.bin").stat().st_size == 10 * 4


def test_weights_missing(session, tmp_path):
    missing = tmp_path / "nope.bin"
    assert_refused(run(session, tmp_path, weights=missing), tmp_path, str(missing))


def last_data_byte(data: bytearray) -> int:
    """Index of the last byte of the last tensor (the file ends in zero alignment padding,
    which no tensor reads)."""
    return len(data.rstrip(b"\0")) - 1


@pytest.mark.parametrize("keep", [0, 7, 40, 200, "last tensor"])
def test_weights_truncated(session, tmp_path, keep):
    path, data = copy_weights(session, tmp_path)
    path.write_bytes(bytes(data[:keep if isinstance(keep, int) else last_data_byte(data)]))
    result = run(session, tmp_path, weights=path)
    assert_refused(result, tmp_path, str(path))
    assert any(w in result.stderr for w in ("truncated", "not a Paleozoic weights file")), \
        result.stderr


def test_weights_of_another_model(session, tmp_path):
    other = session.parent / "other" / "weights.bin"
    result = run(session, tmp_path, weights=other)
    assert_refused(result, tmp_path, str(other), "weights are for another model",
                   "expected id")


def test_weights_of_another_version(session, tmp_path):
    path, data = copy_weights(session, tmp_path)
    data[8:12] = struct.pack("<I", 2)
    path.write_bytes(bytes(data))
    assert_refused(run(session, tmp_path, weights=path), tmp_path, str(path),
                   "format version 2, expected 1")


def test_weights_not_a_weights_file(session, tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\x08\x08\x12\x07pytorch" + bytes(200))
    assert_refused(run(session, tmp_path, weights=path), tmp_path, str(path),
                   'expected magic "PZWEIGHT"')


@pytest.mark.parametrize("where", ["header", "data_first", "data_last"])
def test_weights_flipped_byte(session, tmp_path, where):
    path, data = copy_weights(session, tmp_path)
    (offset,) = struct.unpack_from("<Q", data, 32)  # data_offset, after magic/version/count/id
    index = {"header": 45, "data_first": offset, "data_last": last_data_byte(data)}[where]
    data[index] ^= 0x10
    path.write_bytes(bytes(data))
    result = run(session, tmp_path, weights=path)
    assert_refused(result, tmp_path, str(path), "checksum mismatch", "expected")


@pytest.mark.parametrize("floats", [0, 767, 769, 3 * 16 * 16 * 2])
def test_input_of_the_wrong_size(session, tmp_path, floats):
    path = tmp_path / "input.bin"
    np.zeros(floats, "<f4").tofile(path)
    assert_refused(run(session, tmp_path, inputs=[path]), tmp_path, str(path),
                   f"holds {floats * 4} bytes, expected {768 * 4}")


def test_input_of_a_partial_float(session, tmp_path):
    path = tmp_path / "input.bin"
    path.write_bytes(bytes(768 * 4 + 2))
    assert_refused(run(session, tmp_path, inputs=[path]), tmp_path, str(path),
                   f"holds {768 * 4 + 2} bytes")


def test_input_missing(session, tmp_path):
    path = tmp_path / "missing-input.bin"
    assert_refused(run(session, tmp_path, inputs=[path]), tmp_path, str(path),
                   "cannot be opened")


def test_too_many_inputs(session, tmp_path):
    path = tmp_path / "input.bin"
    np.zeros(INPUT_SHAPE, "<f4").tofile(path)
    assert_refused(run(session, tmp_path, inputs=[path, path]), tmp_path,
                   "the model has 1 input(s) but 2")
