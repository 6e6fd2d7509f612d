"""The command line: compile / build / verify / inspect, exit codes and no half-written
output on failure."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from paleozoic.cli import main


def test_compile_build_verify(tmp_path: Path, small_cnn_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "session"
    assert main(["compile", str(small_cnn_path), "-o", str(out), "--plan", "fuse-all"]) == 0
    assert main(["build", str(out)]) == 0
    assert (out / "build" / "session").is_file()
    assert main(["verify", str(out), "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "PASS" in text and "max abs err" in text


def test_verify_fails_on_tampered_weights(tmp_path: Path, small_cnn: onnx.ModelProto,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A session whose numbers are wrong must fail verify with exit code 1."""
    model_path = tmp_path / "m.onnx"
    onnx.save(small_cnn, str(model_path))
    out = tmp_path / "session"
    assert main(["compile", str(model_path), "-o", str(out)]) == 0
    # Verify against a model whose first weight differs: same graph, other numbers.
    other = onnx.ModelProto()
    other.CopyFrom(small_cnn)
    w = onnx.numpy_helper.to_array(other.graph.initializer[0]) * 1.5
    other.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(w, "w1"))
    other_path = tmp_path / "other.onnx"
    onnx.save(other, str(other_path))
    assert main(["verify", str(out), "--model", str(other_path)]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_refuses_to_overwrite_without_force(tmp_path: Path, small_cnn_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "session"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert main(["compile", str(small_cnn_path), "-o", str(out)]) == 6
    assert "--force" in capsys.readouterr().err
    assert (out / "mine.txt").read_text() == "keep me"
    assert main(["compile", str(small_cnn_path), "-o", str(out), "--force"]) == 0
    assert not (out / "mine.txt").exists()


def test_failure_leaves_nothing_behind(tmp_path: Path, small_cnn_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"format": "paleozoic-plan", "version": 1, "blocks": [
        {"name": "b0", "layers": ["conv1"], "mp": 40, "fuse": True}]}))
    out = tmp_path / "session"
    assert main(["compile", str(small_cnn_path), "-o", str(out), "--plan", str(plan)]) == 4
    assert "mp 40 is outside 1..32" in capsys.readouterr().err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_bad_model_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "o")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_edited_plan_round_trip(tmp_path: Path, small_cnn_path: Path) -> None:
    """compile -> edit plan.json by hand -> compile --plan plan.json."""
    first = tmp_path / "first"
    assert main(["compile", str(small_cnn_path), "-o", str(first), "--plan", "fuse-all"]) == 0
    plan = json.loads((first / "plan.json").read_text())
    layers = plan["blocks"][0]["layers"]
    plan["blocks"] = [
        {"name": "head", "layers": layers[:4], "mp": 4, "fuse": True},
        {"name": "tail", "layers": layers[4:], "mp": 2, "fuse": False},
    ]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(plan))
    second = tmp_path / "second"
    assert main(["compile", str(small_cnn_path), "-o", str(second), "--plan", str(edited)]) == 0
    text = (second / "session.cpp").read_text()
    assert "constexpr pz::BlockKnobs kHead{true, 4, pz::Precision::kFp32};" in text
    assert "constexpr pz::BlockKnobs kTail{false, 2, pz::Precision::kFp32};" in text
    assert main(["verify", str(second)]) == 0


def test_inspect_table(small_cnn_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(small_cnn_path)]) == 0
    text = capsys.readouterr().out
    assert "MACs" in text and "FullyConnected" in text and "output bytes" in text
    assert "10 layers" in text
    assert re.search(r"memory under per-layer: weights [0-9.]+ MB, arena [0-9.]+ MB "
                     r"\(lower bound [0-9.]+ MB\)", text)


def test_missing_external_data_file_is_named(tmp_path: Path, small_cnn: onnx.ModelProto,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A model saved with external data whose data file is gone: exit 2, the file named,
    nothing written (it used to end in a traceback with exit 1)."""
    model_path = tmp_path / "m.onnx"
    onnx.save_model(small_cnn, str(model_path), save_as_external_data=True,
                    location="m.weights", size_threshold=0)
    (tmp_path / "m.weights").unlink()
    out = tmp_path / "session"
    for command in (["compile", str(model_path), "-o", str(out)],
                    ["inspect", str(model_path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "m.weights" in err and "does not exist" in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]


def test_negative_dim_value_is_a_free_dimension(tmp_path: Path, small_cnn: onnx.ModelProto
                                                ) -> None:
    """Older paddle2onnx writes dim_value -1 for a free dimension (the PP-OCR classifier
    in rapidocr_onnxruntime declares [-1, 3, '?', '?'])."""
    model = onnx.ModelProto()
    model.CopyFrom(small_cnn)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_value = -1
    dims[2].dim_value = -1
    dims[3].Clear()
    dims[3].dim_param = "?"
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_value = -1
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    out = tmp_path / "session"
    assert main(["compile", str(path), "-o", str(out)]) == 3  # symbolic: asks for a shape
    assert main(["compile", str(path), "-o", str(out), "--input-shape", "x=1x3x16x16"]) == 0
    assert main(["verify", str(out)]) == 0


def _profile_with_memory(tmp_path: Path, dram_bytes: int) -> Path:
    from paleozoic import _runtime

    lines = [f"dram_bytes = {dram_bytes}" if line.startswith("dram_bytes") else line
             for line in Path(_runtime.default_profile_path()).read_text().splitlines()]
    path = tmp_path / "edge.profile"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compile_refuses_a_plan_above_the_devices_memory(
        tmp_path: Path, small_cnn_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "session"
    assert main(["compile", str(small_cnn_path), "-o", str(out), "--profile",
                 str(_profile_with_memory(tmp_path, 1000))]) == 11
    err = capsys.readouterr().err
    assert re.search(r"needs [0-9.]+ MB of device memory \(weights [0-9.]+ MB, activation "
                     r"arena [0-9.]+ MB\) but .*edge.profile has 0.0 MB \(dram_bytes\)", err)
    assert "--precision fp16" in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # The bundled MLU-100 profile (8 GB) takes it, and says what it will hold.
    assert main(["compile", str(small_cnn_path), "-o", str(out)]) == 0
    memory = json.loads((out / "session.json").read_text())["memory"]
    assert memory["device_bytes"] == memory["device_weights_bytes"] + memory["arena_bytes"]
    assert f"device {memory['device_bytes'] / 1e6:.2f} MB" in capsys.readouterr().out


def test_the_session_report_gives_its_peak_resident_memory(
        tmp_path: Path, small_cnn_path: Path) -> None:
    from paleozoic.pipeline import build_session, compile_model, run_session
    from paleozoic.accuracy.inputs import random_inputs

    out = compile_model(str(small_cnn_path), tmp_path / "session")
    build_session(out)
    run = run_session(out, list(random_inputs(onnx.load(str(small_cnn_path))).values()))
    peak = re.search(r"peak resident memory: ([0-9.]+) MB \(this process\)", run.report)
    assert peak and 1.0 < float(peak.group(1)) < 4096.0


def test_verify_runs_concurrent_sessions(tmp_path: Path, small_cnn_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """verify --sessions N runs N sessions at once over the compiled model (-s N); the
    session checks each one's outputs against the serial run's bit for bit."""
    out = tmp_path / "session"
    assert main(["compile", str(small_cnn_path), "-o", str(out), "--plan", "per-layer"]) == 0
    assert main(["verify", str(out), "--sessions", "3", "--json", str(tmp_path / "v.json")]) == 0
    text = capsys.readouterr().out
    assert re.search(r"concurrent sessions: 3 over one set of compiled blocks .*"
                     r"outputs bit-identical to the serial run", text)
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["passed"] and report["concurrent"].startswith("concurrent sessions: 3")
    with pytest.raises(SystemExit) as refused:
        main(["verify", str(out), "--sessions", "0"])
    assert refused.value.code == 2
    assert "needs a positive integer, got '0'" in capsys.readouterr().err


def test_the_program_ends_with_its_code_its_output_and_its_exit_handlers(tmp_path: Path) -> None:
    """The program (cli.program) ends the process itself (cli._end_process): the exit code,
    everything written to a pipe and the exit handlers must survive that."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('exit handler ran'))\n"
            "from paleozoic.cli import program\n"
            "print('before the command')\n"
            "sys.argv = ['paleozoic', 'compile', 'missing.onnx', '-o', 'out']\n"
            "program()\n"
            "print('not reached')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout.splitlines() == ["before the command", "exit handler ran"]
    assert "missing.onnx" in done.stderr
    assert not (tmp_path / "out").exists()
