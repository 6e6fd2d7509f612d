"""`paleozoic bench`: every configuration of every model is built, checked against
onnxruntime and timed beside it; the report's figures are consistent with each other and
the command line's errors are the documented ones. Figures are not judged here (timed tests
flake): only that they were measured."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

from paleozoic.bench import BenchReport, Config, bench, resolve_configs
from paleozoic.runner.sdk import sdk_available


@pytest.fixture
def models(tmp_path, small_cnn):
    from paleozoic_testing.blocks import BLOCKS

    paths = [tmp_path / "small.onnx", tmp_path / "effnet.onnx"]
    onnx.save(small_cnn, str(paths[0]))
    onnx.save(BLOCKS["efficientnet_b0_block"](), str(paths[1]))
    return paths


def test_bench_measures_every_configuration(models):
    configs = resolve_configs(["mock"], ["per-layer", "fuse-all"], ["fp32", "fp16"])
    assert [c.label for c in configs] == ["mock per-layer", "mock per-layer fp16",
                                          "mock fuse-all", "mock fuse-all fp16"]
    report = bench(models, configs, threads=1, repeat=4, rounds=2)
    assert [m.model for m in report.models] == [str(p) for p in models]
    for m in report.models:
        assert m.ort_median_ms > 0 and m.ort_p90_ms >= m.ort_median_ms
        assert [r.config for r in m.results] == [c.label for c in configs]
        for r in m.results:
            assert r.p90_ms >= r.median_ms > 0
            assert math.isclose(r.ratio, r.median_ms / m.ort_median_ms)
            fp32 = "fp16" not in r.config
            assert r.sqnr_db > (100 if fp32 else 30) and r.top1 == 1.0, r
            assert r.max_abs < (1e-5 if fp32 else 1e-2), r
        assert [r.blocks for r in m.results][2:] == [1, 1]  # fuse-all: one block
    data = json.loads(report.to_json())
    assert set(data["geomeans"]) == {c.label for c in configs}
    assert len(data["models"]) == 2
    table = report.table()
    assert "mock fuse-all fp16" in table and "geometric mean" in table
    assert "mock, best fp32 plan per model" in table


def test_a_turn_times_more_forwards_until_they_add_up_to_its_minimum():
    from paleozoic.bench import timed_ms

    calls = []
    assert len(timed_ms(lambda: calls.append(1), 3)) == 3 and len(calls) == 4  # + untimed
    # A 2-ms call with a 30-ms minimum: the repeat count is a floor, not the count.
    times = timed_ms(lambda: time.sleep(0.002), 3, min_ms=30.0)
    assert sum(times) >= 30.0 and sum(times[:-1]) < 30.0 and len(times) > 3


def test_best_plan_per_model_is_the_faster_fp32_one():
    from paleozoic.bench import ModelReport, Result

    report = BenchReport(2, 4, 2, [ModelReport("m", 1.0, 1.0, 0.0, [
        Result("m", "onednn per-layer", 3.0, 3.0, 3.0, 0, 0, 0, None, sdk="onednn"),
        Result("m", "onednn fuse-all", 2.0, 2.0, 2.0, 0, 0, 0, None, sdk="onednn"),
        Result("m", "onednn fuse-all int8", 1.0, 1.0, 1.0, 0, 0, 0, None, sdk="onednn",
               precision="int8"),
        Result("m", "mock fuse-all", 0.5, 0.5, 0.5, 0, 0, 0, None, sdk="mock")])])
    assert report.best("onednn")["m"].config == "onednn fuse-all"


def test_table_reports_throughput_of_the_batch():
    from paleozoic.bench import ModelReport, Result

    report = BenchReport(2, 4, 2, [ModelReport("m", 4.0, 4.0, 0.0, [
        Result("m", "onednn fuse-all", 2.0, 2.0, 0.5, 0, 0, 0, None, sdk="onednn")],
        frames=8)])
    rows = report.table().splitlines()
    assert "frames/s" in rows[1]
    assert "2,000.0" in rows[2] and "4,000.0" in rows[3]  # 8 frames in 4 ms and in 2 ms


@pytest.mark.skipif(not sdk_available("onednn"), reason="the oneDNN SDK is not built")
def test_bench_on_onednn_with_a_plan_file(models, tmp_path):
    from paleozoic.optimize.plans import fuse_all
    from paleozoic.pipeline import load_queue

    plan = tmp_path / "mine.json"
    plan.write_text(fuse_all(load_queue(models[0]), mp=1).to_json())
    report = bench(models[:1], [Config("onednn", str(plan))], threads=2, repeat=2, rounds=1)
    assert report.models[0].results[0].config == "onednn mine"
    assert report.models[0].results[0].sqnr_db > 100


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Not from the checkout: `python -m` would import the source tree there, which has no
    # built runtime when the project was installed with `pip install .` (as CI does).
    return subprocess.run([sys.executable, "-m", "paleozoic", "bench", *args],
                          capture_output=True, text=True, cwd=cwd)


def test_command_line(models, tmp_path):
    out = tmp_path / "bench.json"
    result = _cli(str(models[0]), "--sdk", "mock", "--plan", "fuse-all", "--repeat", "2",
                  "--rounds", "1", "--json", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "mock fuse-all" in result.stdout and "onnxruntime" in result.stdout
    assert json.loads(out.read_text())["models"][0]["results"][0]["config"] == "mock fuse-all"
    refused = _cli(str(models[0]), "--sdk", "gpu", cwd=tmp_path)
    assert refused.returncode == 4 and "unknown SDK 'gpu'" in refused.stderr
    refused = _cli(str(models[0]), "--sdk", "mock", "--precision", "int8", cwd=tmp_path)
    assert refused.returncode != 0 and "--calibration" in refused.stderr
    refused = _cli(str(tmp_path / "missing.onnx"), "--sdk", "mock", cwd=tmp_path)
    assert refused.returncode == 2 and "missing.onnx" in refused.stderr


def test_int8_is_measured_beside_onnxruntimes_static_int8(tmp_path):
    """With an int8 configuration, onnxruntime's own static int8 of the model, calibrated on
    the same files, is timed and checked against its fp32 beside it."""
    from paleozoic.cli import main

    digits = Path(__file__).resolve().parents[1] / "examples" / "digits"
    data = np.load(digits / "digits_data.npz")
    folder = tmp_path / "calib"
    folder.mkdir()
    for i, image in enumerate(data["calib_x"][:16]):
        np.save(folder / f"{i:02d}.npy", image[None].astype(np.float32))
    calib = tmp_path / "calib.json"
    model = digits / "digits_cnn.onnx"
    assert main(["calibrate", str(model), "--data", str(folder), "-o", str(calib)]) == 0
    report = bench([model], resolve_configs(["mock"], ["fuse-all"], ["fp32", "int8"]),
                   threads=1, repeat=2, rounds=1, calibration=calib)
    rows = {r.config: r for r in report.models[0].results}
    assert list(rows) == ["onnxruntime int8 (QDQ)", "mock fuse-all", "mock fuse-all int8"]
    peer = rows["onnxruntime int8 (QDQ)"]
    assert peer.sdk == "onnxruntime" and peer.precision == "int8" and peer.median_ms > 0
    # A quantised network: not fp32's numbers (bench's seeded standard-normal input lies
    # outside the digits' calibrated [0, 1] range, so both int8 rows are far from fp32).
    assert 0 < peer.sqnr_db < 80 and peer.max_abs > 0, peer
    assert rows["mock fuse-all int8"].sqnr_db < 80
    assert "onnxruntime int8 (QDQ)" in report.table()
    assert set(report.best("mock")) == {str(model)}  # the peer is no SDK's plan
