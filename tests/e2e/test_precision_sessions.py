"""fp16/int8 sessions end to end on the trained digits CNN: calibrate -> compile with
--calibration -> g++ -> run, identical to the runtime's run of the same plan; int8 keeps the
trained top-1; a hand edit of a block's precision rebuilds and runs (the quantisation
parameters are in weights.bin), and without them is refused naming the layer; `paleozoic
debug` names the block whose quantisation parameters were spoiled."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from paleozoic.calibration import calibrate
from paleozoic.calibration.file import write_calibration
from paleozoic.calibration.params import layer_quantization
from paleozoic.cli import main
from paleozoic.ir.plan import Precision
from paleozoic.optimize import fuse_all, per_layer
from paleozoic.pipeline import build_session, compile_model, load_queue, with_precision
from paleozoic.runner.plan_runner import PlanRunner

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits"
MODEL = DIGITS / "digits_cnn.onnx"


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory):
    """The data, a folder of calibration batches and the calibration file (absmax)."""
    root = tmp_path_factory.mktemp("digits_precision")
    data = dict(np.load(DIGITS / "digits_data.npz"))
    calib = root / "calib"
    calib.mkdir()
    for i, image in enumerate(data["calib_x"]):
        np.save(calib / f"{i:03d}.npy", image[None].astype(np.float32))
    queue = load_queue(str(MODEL))
    record = calibrate(queue, [calib], model=MODEL.name)
    write_calibration(root / "calib.json", record)
    return data, calib, root / "calib.json", layer_quantization(queue, record)


def _top1(runner: PlanRunner, images: np.ndarray) -> np.ndarray:
    return np.array([int(np.argmax(next(iter(runner.run([x[None]]).values()))))
                     for x in images.astype(np.float32)])


def test_int8_keeps_the_trained_top1(digits) -> None:
    data, _, _, quantization = digits
    queue = load_queue(str(MODEL))
    fp32 = _top1(PlanRunner(queue, fuse_all(queue), quantization), data["test_x"])
    for precision in (Precision.FP16, Precision.INT8):
        plan = with_precision(fuse_all(queue), precision)
        got = _top1(PlanRunner(queue, plan, quantization), data["test_x"])
        # Goal of issue 12: within 0.5 points of fp32 (measured: equal, 99.17 %).
        assert np.mean(got == data["test_y"]) >= np.mean(fp32 == data["test_y"]) - 0.005
        assert np.mean(got == fp32) >= 0.99


def test_emitted_int8_session_is_the_runtimes_int8_run(digits, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    data, _, calib_json, _ = digits
    out = tmp_path / "int8"
    assert main(["compile", str(MODEL), "-o", str(out), "--plan", "fuse-all", "--precision",
                 "int8", "--calibration", str(calib_json)]) == 0
    text = (out / "session.cpp").read_text()
    assert "pz::Precision::kInt8}" in text
    assert 't0_Conv.setQuantization(weights.quantization("t0_Conv"));' in text
    image = tmp_path / "image.npy"
    np.save(image, data["test_x"][:1].astype(np.float32))
    capsys.readouterr()
    assert main(["verify", str(out), "--input", f"image={image}"]) == 0
    report = capsys.readouterr().out
    assert "int8 session: identical to the runtime's run of the same plan" in report


def test_int8_without_calibration_is_refused_before_writing(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    out = tmp_path / "s"
    code = main(["compile", str(MODEL), "-o", str(out), "--precision", "int8"])
    assert code != 0 and not out.exists()
    err = capsys.readouterr().err
    assert "computes layer 't0_Conv' in int8" in err and "paleozoic calibrate" in err
    assert main(["compile", str(MODEL), "-o", str(out), "--precision", "fp16"]) == 0


def _run(out: Path, image: Path) -> subprocess.CompletedProcess[str]:
    exe = build_session(out, jobs=1)
    return subprocess.run([str(exe), "-w", str(out / "weights.bin"), "-i", str(image), "-o",
                           str(out)], capture_output=True, text=True, cwd=out)


def test_hand_edited_precision_rebuilds_and_runs(digits, tmp_path: Path) -> None:
    data, _, calib_json, quantization = digits
    x = data["test_x"][:1].astype(np.float32)
    image = tmp_path / "image.bin"
    x.tofile(image)
    with_params = compile_model(str(MODEL), tmp_path / "with", plan="per-layer",
                                calibration=calib_json)
    without = compile_model(str(MODEL), tmp_path / "without", plan="per-layer")
    for out in (with_params, without):
        path = out / "session.cpp"
        text, count = re.subn(r"(kBlock0\{false, 1, pz::Precision::)kFp32", r"\1kInt8",
                              path.read_text())
        assert count == 1
        path.write_text(text)
    ran = _run(with_params, image)
    assert ran.returncode == 0, ran.stderr
    assert re.search(r"block0\s+no\s+1\s+int8", ran.stdout)
    got = np.fromfile(with_params / "t8_Gemm.bin", dtype=np.float32)
    queue = load_queue(str(MODEL))
    plan = per_layer(queue)
    plan.blocks[0].precision = Precision.INT8
    want = next(iter(PlanRunner(queue, plan, quantization).run([x]).values())).ravel()
    np.testing.assert_array_equal(got, want)
    refused = _run(without, image)
    assert refused.returncode == 1
    assert "t0_Conv: computes in int8 but has no quantisation parameters" in refused.stderr
    assert "--calibration" in refused.stderr


def test_debug_names_the_block_with_bad_quantisation_parameters(digits, tmp_path: Path,
                                                                capsys) -> None:
    from paleozoic.codegen.weights import read_weights, write_weights

    _, calib, calib_json, _ = digits
    out = compile_model(str(MODEL), tmp_path / "s", plan="per-layer", precision="int8",
                        calibration=calib_json)
    tensors = read_weights(out / "weights.bin")
    spoiled = tensors["t2_Conv.quant.input"].copy()
    spoiled[1] *= 64.0  # a scale 64x too large: the input saturates at +-127
    tensors["t2_Conv.quant.input"] = spoiled
    write_weights(out / "weights.bin", list(tensors.items()))
    capsys.readouterr()
    assert main(["debug", str(out), "--data", str(calib)]) == 0
    report = capsys.readouterr().out
    assert re.search(r"first jump: block block2\b", report), report
    # --fix moves exactly the spoiled layer up one precision, and the fixed plan holds.
    fixed = tmp_path / "fixed.json"
    assert main(["debug", str(out), "--data", str(calib), "--budget-sqnr", "30",
                 "--fix", str(fixed)]) == 0
    from paleozoic.ir import Plan
    plan = Plan.load(fixed)
    assert plan.notes["debug_fix"]["moves"] == ["t2_Conv: int8 -> fp16"]
