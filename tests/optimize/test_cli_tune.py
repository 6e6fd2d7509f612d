"""`paleozoic space` and `paleozoic tune` (tune -> plan.json -> compile --plan)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fakes import EXAMPLES
from paleozoic.cli import main

pytest.importorskip("paleozoic.optimize.device_cost")


def test_space(small_cnn_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["space", str(small_cnn_path)]) == 0
    out = capsys.readouterr().out
    assert "n = 10" in out and "Space(10)" in out and "fusible" in out
    # small_cnn's two convolutions (no groups, even pads) and its classifier have a sparse mode.
    assert "with the sparse mode (tune --knobs sparsity): 3 layer(s) have one, x 2^3" in out


@pytest.mark.parametrize("optimizer, cost", [
    ("dp", "model"), ("greedy", "measured"),
    (f"{EXAMPLES / 'my_annealing.py'}:MyAnnealing", "model"),
])
def test_tune_then_compile(small_cnn_path: Path, tmp_path: Path, optimizer: str, cost: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    assert main(["tune", str(small_cnn_path), "--optimizer", optimizer, "--cost", cost,
                 "--seed", "1", "-o", str(plan)]) == 0
    out = capsys.readouterr().out
    assert "per-layer (MP 1)" in out and "fuse-all (MP 32)" in out and "block0" in out
    data = json.loads(plan.read_text())
    assert data["notes"]["oracle"] == cost and data["notes"]["cost_us"] > 0
    assert main(["tune", str(small_cnn_path), "-o", str(plan)]) == 6  # exists, no --force
    assert main(["compile", str(small_cnn_path), "--plan", str(plan), "-o",
                 str(tmp_path / "out")]) == 0


def test_tune_unknown_optimizer(small_cnn_path: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", str(small_cnn_path), "--optimizer", "nope", "-o",
                 str(tmp_path / "p.json")]) == 7
    assert "known: per-layer, fuse-all, greedy, dp, annealing" in capsys.readouterr().err


def test_tune_option(small_cnn_path: Path, tmp_path: Path) -> None:
    assert main(["tune", str(small_cnn_path), "--optimizer", "annealing", "-O",
                 "iterations=2000", "-O", "start=fuse-all", "-o",
                 str(tmp_path / "p.json")]) == 0
    assert main(["tune", str(small_cnn_path), "--optimizer", "dp", "-O", "bogus=1", "-o",
                 str(tmp_path / "q.json")]) == 7


def test_tune_searches_data_parallelism(small_cnn: object, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    import onnx

    from ir.test_plan_data_parallel import batched

    model = tmp_path / "batched.onnx"
    onnx.save(batched(small_cnn), model)
    plan = tmp_path / "plan.json"
    assert main(["tune", str(model), "--batch", "32", "--knobs", "dp", "-o", str(plan)]) == 0
    out = capsys.readouterr().out
    data = json.loads(plan.read_text())
    tried = data["notes"]["data_parallelism_us"]
    assert list(tried) == ["1", "2", "4", "8", "16", "32"]  # the batch's divisors up to 32
    dp = data.get("data_parallelism", 1)
    assert tried[str(dp)] == min(tried.values()) == data["notes"]["cost_us"]
    assert all(block["mp"] * dp <= 32 for block in data["blocks"])
    assert f"the plan takes {dp}" in out and "frames/s" in out
    # Without the knob the plan is as before: no data parallelism written.
    assert main(["tune", str(model), "--batch", "32", "-o", str(plan), "--force"]) == 0
    assert "data_parallelism" not in plan.read_text()
    assert main(["compile", str(model), "--batch", "32", "--plan", str(plan),
                 "--data-parallelism", "4", "-o", str(tmp_path / "out")]) == 0
    assert "constexpr int kDataParallelism = 4;" in (tmp_path / "out" / "session.cpp").read_text()


def test_tune_searches_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import onnx

    from paleozoic_testing.blocks import googlenet_block

    model = tmp_path / "inception.onnx"
    onnx.save(googlenet_block(seed=3), model)
    assert main(["space", str(model)]) == 0
    assert "with stages (tune --knobs concat):" in capsys.readouterr().out
    plan = tmp_path / "plan.json"
    assert main(["tune", str(model), "--knobs", "concat", "-o", str(plan)]) == 0
    out = capsys.readouterr().out
    data = json.loads(plan.read_text())
    # The staged search covers every plan the DP optimizer considers, so it is never worse;
    # a stage is written only where the device model prices it faster.
    match = re.search(r"stages: (\d+) \(([0-9,.]+) us against ([0-9,.]+) us without\)", out)
    assert match
    staged, alone = (float(match.group(i).replace(",", "")) for i in (2, 3))
    assert staged <= alone
    assert len(data.get("stages", [])) == int(match.group(1))
    assert main(["compile", str(model), "--plan", str(plan), "-o", str(tmp_path / "out")]) == 0
    assert main(["tune", str(model), "--knobs", "concat", "--cost", "measured", "-o",
                 str(plan), "--force"]) != 0
    assert "cannot time blocks that run at once" in capsys.readouterr().err


def test_knobs_are_refused_where_they_would_be_ignored(small_cnn_path: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", str(small_cnn_path), "--knobs", "dp,concat", "--accuracy-budget",
                 "sqnr=30", "-o", str(tmp_path / "p.json")]) != 0
    assert ("--accuracy-budget with --knobs concat: the staged DP re-cuts blocks"
            in capsys.readouterr().err)
    assert not (tmp_path / "p.json").exists()


def test_measured_tune_keeps_its_timings_and_a_simulated_farm_gives_its_plan(
        small_cnn_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The timings file beside the plan: a second run measures nothing new. A simulated
    farm of 8 boards answers from it and reports what the boards would have taken, with
    the same plan."""
    plan = tmp_path / "plan.json"
    assert main(["tune", str(small_cnn_path), "--cost", "measured", "-o", str(plan)]) == 0
    kept = tmp_path / "plan.measurements.jsonl"
    assert f"block timings kept in {kept}" in capsys.readouterr().out
    lines = kept.read_text().splitlines()
    assert lines and all(json.loads(line)["us"] > 0 for line in lines)
    assert main(["tune", str(small_cnn_path), "--cost", "measured", "-o", str(plan),
                 "--force"]) == 0
    assert kept.read_text().splitlines() == lines   # nothing measured again
    simulated = tmp_path / "simulated.json"
    assert main(["tune", str(small_cnn_path), "--cost", "measured", "--simulate-boards", "8",
                 "--measurements", str(kept), "-o", str(simulated)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"simulated farm of 8 board\(s\): the measurements would take [\d.]+ s",
                     out)
    assert json.loads(simulated.read_text())["blocks"] == json.loads(plan.read_text())["blocks"]


@pytest.mark.parametrize("args, message", [
    (["--workers", "2"], "need --cost measured"),
    (["--cost", "measured", "--sdk", "onednn", "--workers", "2"], "would time each other"),
    (["--cost", "measured", "--sdk", "onednn", "--simulate-boards", "4"], "with --sdk mock"),
])
def test_farm_options_that_cannot_hold_are_refused(small_cnn_path: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   args: list[str], message: str) -> None:
    plan = tmp_path / "plan.json"
    assert main(["tune", str(small_cnn_path), *args, "-o", str(plan)]) == 7
    assert message in capsys.readouterr().err and not plan.exists()


def test_tune_bars_show_one_phase_at_a_time() -> None:
    """A guided search times thousands of blocks before its first step: that gets a bar of
    its own (with an estimate of its own), closed before the search's bar opens."""
    from paleozoic.cli.tuning import _TuneBars

    with _TuneBars("dp") as bars:
        bars.measuring(0, 10)            # a few blocks: the search's bar is enough
        assert bars.bar is None
        bars.measuring(0, 1000)
        assert bars.showing == "measuring" and bars.bar.total == 1000
        bars.measuring(400, 1000)
        assert bars.bar.n == 400
        bars.measuring(1000, 1000)
        assert bars.bar is None
        bars.search(0.5, 12.5)
        assert bars.showing == "search" and bars.bar.n == bars.STEPS // 2
    assert bars.bar is None
