"""paleozoic.accuracy.debug.measure: fp32 agreement levels, and a corrupted filter found as the first
jump under per-layer and fused plans, on hand-built models and the digits CNN."""

from __future__ import annotations

from pathlib import Path

import pytest
from debug_helpers import DIGITS, corrupt_filter, write_plan

from paleozoic.accuracy.debug import CEILING_DB, load_folder, measure, report_lines
from paleozoic.accuracy.debug.data import load_batches
from paleozoic.errors import PrecisionUnavailableError
from paleozoic.pipeline import compile_model

BRANCH_FUSED = [("stem", ["stem_conv", "stem_relu", "stem_pool"], True),
                ("mid", ["a_conv", "b_conv", "a_relu", "join_add"], True),
                ("head", ["join_cat", "head_conv", "head_gap", "head_fc"], True)]
DIGITS_FUSED = [("front", ["t0_Conv", "t1_Relu"], True),
                ("middle", ["t2_Conv", "t3_Relu", "t4_MaxPool"], True),
                ("classifier", ["t6_Gemm", "t7_Relu", "t8_Gemm"], True)]


def _report(folder: Path, data: Path | None = None):
    loaded = load_folder(folder)
    batches, source = load_batches(loaded, [str(data)] if data else None, seed=0)
    return measure(loaded, batches, source)


def _figures(report) -> list[float]:
    out = [b.sqnr_db for b in report.blocks if b.sqnr_db is not None]
    out += [f.sqnr_db for b in report.blocks for f in b.layers if f.sqnr_db is not None]
    return out


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all", "custom"])
def test_fp32_agrees_far_above_the_ceiling(tmp_path: Path, branch_path: Path,
                                           branch_data: Path, plan: str) -> None:
    """fp32 against onnxruntime's fp32: measured 133-141 dB (inf where both are exact),
    so nothing is a jump and every figure is above the 100 dB ceiling."""
    out = compile_model(branch_path, tmp_path / "s", plan="per-layer" if plan == "custom"
                        else plan)
    if plan == "custom":
        write_plan(out, BRANCH_FUSED)
    report = _report(out, branch_data)
    figures = _figures(report)
    assert figures and min(figures) > 120.0
    assert all(f.onnx_tensor is not None for b in report.blocks for f in b.layers)
    assert report.first_jump is None and report.first_jump_layer is None
    assert min(o["cosine"] for o in report.outputs.values()) > 1 - 1e-9
    assert report.batches == 4 and list(report.outputs) == ["logits"]


def test_digits_fp32_levels(tmp_path: Path, digits_data: Path) -> None:
    out = compile_model(DIGITS / "digits_cnn.onnx", tmp_path / "s", plan="per-layer")
    report = _report(out, digits_data)
    figures = _figures(report)
    assert min(figures) > 125.0  # measured: 133.4 dB at the logits, 141 dB inside
    # The first conv's products are exact on 0/1 data, but its sums round in fp32 in both,
    # in an order that depends on the build: the same as onnxruntime's (inf) with
    # -march=native here, 146 dB with PALEOZOIC_NATIVE=OFF.
    assert report.blocks[0].sqnr_db > 140.0
    assert report.first_jump is None


@pytest.mark.parametrize("layer,per_layer_block,fused_block", [
    ("a_conv", "block3", "mid"), ("b_conv", "block4", "mid"), ("head_conv", "block8", "head"),
    ("stem_conv", "block0", "stem")])
def test_corrupted_filter_is_the_first_jump(tmp_path: Path, branch_path: Path,
                                            branch_data: Path, layer: str,
                                            per_layer_block: str, fused_block: str) -> None:
    out = compile_model(branch_path, tmp_path / "s", plan="per-layer")
    corrupt_filter(out, layer)
    report = _report(out, branch_data)
    assert report.first_jump == per_layer_block
    assert report.first_jump_layer == layer
    jump = next(b for b in report.blocks if b.name == per_layer_block)
    assert jump.layers[0].name == layer and jump.drop_db > 20.0
    write_plan(out, BRANCH_FUSED)
    report = _report(out, branch_data)
    assert report.first_jump == fused_block
    assert report.first_jump_layer == layer  # from the per-layer run
    lines = report_lines(report)
    assert any(line.startswith(f"first jump: block {fused_block} ") for line in lines)
    assert all(len(line) <= 80 for line in lines)


def test_digits_corrupted_filter(tmp_path: Path, digits_data: Path) -> None:
    out = compile_model(DIGITS / "digits_cnn.onnx", tmp_path / "s", plan="per-layer")
    corrupt_filter(out, "t2_Conv", factor=-1.0)  # one filter sign-flipped
    report = _report(out, digits_data)
    assert (report.first_jump, report.first_jump_layer) == ("block2", "t2_Conv")
    block = report.blocks[2]
    assert block.layers[0].onnx_nodes == ["/2/Conv"]
    assert block.input_sqnr_db == CEILING_DB and block.sqnr_db < 20.0
    write_plan(out, DIGITS_FUSED)
    report = _report(out, digits_data)
    assert report.first_jump == "middle"
    assert report.blocks[0].drop_db == 0.0


def test_seeded_batch_without_data(tmp_path: Path, branch_path: Path) -> None:
    out = compile_model(branch_path, tmp_path / "s", plan="fuse-all")
    loaded = load_folder(out)
    batches, source = load_batches(loaded, None, seed=5)
    assert len(batches) == 1 and batches[0][0].shape == (1, 3, 12, 12)
    assert "seed 5" in source
    assert measure(loaded, batches, source).first_jump is None


def test_int8_block_without_calibration_is_refused_by_name(tmp_path: Path,
                                                           branch_path: Path) -> None:
    """A plan edited to int8 in a folder compiled without --calibration: the conv has no
    quantisation parameters, and the refusal names the block, the layer and the fix."""
    import json

    out = compile_model(branch_path, tmp_path / "s", plan="per-layer")
    plan = json.loads((out / "plan.json").read_text())
    index, block = next((i, b) for i, b in enumerate(plan["blocks"])
                        if b["layers"][0].endswith("conv"))
    plan["blocks"][index]["precision"] = "int8"
    (out / "plan.json").write_text(json.dumps(plan))
    loaded = load_folder(out)
    batches, source = load_batches(loaded, None, seed=0)
    with pytest.raises(PrecisionUnavailableError,
                       match=rf"block '{block['name']}' computes layer "
                             rf"'{block['layers'][0]}' in int8.*--calibration"):
        measure(loaded, batches, source)
