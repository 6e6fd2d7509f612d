"""Several runs of one emitted session at once (`-s N`, pz::RunContext): each run has its own
arena, integer values and queue over blocks compiled once, and its outputs equal the serial
run's bit for bit (the session checks that itself and fails otherwise). ThreadSanitizer runs
the same on ResNet-50 in scripts/sanitize.sh."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.bert import bert_inputs, bert_model
from paleozoic_testing.host import integer_ops, integer_ops_inputs
from paleozoic_testing.recurrent import recurrent_stack
from paleozoic.accuracy.inputs import random_inputs
from helpers import onnxruntime_outputs, runtime_if_model, small_cnn_model

CONCURRENT = re.compile(r"concurrent sessions: (\d+) over one set of compiled blocks .*"
                        r"outputs bit-identical to the serial run")


def _lstm() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    return recurrent_stack("LSTM", direction="bidirectional", layers=2)


# (name, model and feeds, plan, sdk): float CNNs fused and per layer, token ids and an
# attention mask (integer tensors the host keeps, per context), a run-time If (the session's
# own forward), integer host arithmetic, and a recurrent stack (per-step temporaries).
CASES = [
    ("cnn", lambda: (small_cnn_model(), None), "fuse-all", "mock"),
    ("cnn", lambda: (small_cnn_model(), None), "per-layer", "onednn"),
    ("bert", lambda: (bert_model(seed=0, seq=16), bert_inputs(seed=0, seq=16)), "per-layer",
     "mock"),
    ("if_flag", lambda: (runtime_if_model("flag"), {
        "x0": np.random.default_rng(5).standard_normal((1, 8)).astype(np.float32),
        "flag": np.array([False])}), "per-layer", "mock"),
    ("integer_ops", lambda: (integer_ops(), integer_ops_inputs()), "per-layer", "mock"),
    ("lstm", _lstm, "fuse-all", "mock"),
]


@pytest.mark.parametrize("name,make,plan,sdk", CASES,
                         ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in CASES])
def test_concurrent_sessions_match_the_serial_run(tmp_path: Path, name, make, plan, sdk):
    if not sdk_available(sdk):
        pytest.skip(f"the {sdk} SDK is not built")
    model, feeds = make()
    feeds = feeds or random_inputs(model, 3)
    out = tmp_path / name
    compile_model(model, out, plan=plan)
    build_session(out, sdk=sdk)
    serial = run_session(out, list(feeds.values()))
    both = run_session(out, list(feeds.values()), repeat=2, sessions=3)
    found = CONCURRENT.search(both.report)
    assert found and found.group(1) == "3", both.report[-600:]
    # The files come from the serial run, which the concurrent runs were checked against.
    for a, b in zip(serial.outputs, both.outputs):
        np.testing.assert_array_equal(a, b)
    for ours, ref in zip(serial.outputs, onnxruntime_outputs(model, feeds)):
        np.testing.assert_allclose(ours, np.asarray(ref).reshape(ours.shape),
                                   rtol=2e-3, atol=2e-4)


def test_sessions_option_is_checked(tmp_path: Path):
    out = tmp_path / "cnn"
    compile_model(small_cnn_model(), out, plan="fuse-all")
    exe = build_session(out)
    for bad in ("0", "-2", "two", "3x"):
        result = subprocess.run([str(exe), "-w", str(out / "weights.bin"), "-s", bad],
                                capture_output=True, text=True)
        assert result.returncode == 1
        assert f"option -s needs a positive integer, got '{bad}'" in result.stderr
