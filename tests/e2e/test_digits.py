"""The committed digits CNN (examples/digits, trained by scripts/train_digits.py on
scikit-learn's bundled handwritten digits): the runtime's fp32 predictions on the held-out
split match onnxruntime's image for image and keep the trained top-1, and calibrating it on
its calibration split gives a file that loads. The real-data baseline the int8 work of
issue 12 is measured against."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import runtime_outputs

from paleozoic.calibration import calibrate, load_calibration
from paleozoic.calibration.file import write_calibration
from paleozoic.pipeline import load_queue

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits"


@pytest.fixture(scope="module")
def digits():
    model = onnx.load(str(DIGITS / "digits_cnn.onnx"))
    data = np.load(DIGITS / "digits_data.npz")
    return model, {key: data[key] for key in data.files}


def _predict(queue, images: np.ndarray) -> np.ndarray:
    return np.argmax(runtime_outputs(queue, [image[None] for image in images], "fuse-all"),
                     axis=1)


def test_fp32_session_matches_onnxruntime_and_keeps_top1(digits) -> None:
    import onnxruntime as ort

    model, data = digits
    queue = load_queue(model)
    ours = _predict(queue, data["test_x"])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = np.array([int(np.argmax(session.run(None, {"image": image[None]})[0]))
                       for image in data["test_x"]])
    assert np.array_equal(ours, theirs)
    assert np.mean(ours == data["test_y"]) >= 0.98  # trained: 0.9917 on 361 images


def test_calibration_on_the_calibration_split(digits, tmp_path) -> None:
    model, data = digits
    queue = load_queue(model)
    batches = tmp_path / "calib"
    batches.mkdir()
    for i, image in enumerate(data["calib_x"][:32]):
        np.save(batches / f"{i:03d}.npy", image[None])
    out = tmp_path / "calib.json"
    write_calibration(out, calibrate(queue, [batches], method="entropy"))
    record = load_calibration(out, queue)
    image_range = record["activations"][queue.inputs[0].name]
    assert image_range["min"] >= 0.0 and image_range["absmax"] <= 1.0
    assert len(record["weights"]) == 4  # two convolutions, two fully connected layers
