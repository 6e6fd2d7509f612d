"""Stages (Table 4's concatenation): an Inception module's branches as blocks that run at
once on disjoint cores, emitted, built with g++ and run on each SDK: the per-layer plan's
numbers and onnxruntime's, and on the mock the device time the device model prices the staged plan at (each branch pinned to its cores and their DRAM share)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.ir import Plan, PlannedBlock
from paleozoic.optimize.concat import parallel_regions
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.space import SearchSpace
from paleozoic.passes import run_passes
from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.accuracy.truth import Float64Reference
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.blocks import googlenet_block
from paleozoic.accuracy.inputs import random_inputs

from helpers import onnxruntime_outputs

SDKS = ["mock", pytest.param("onednn", marks=pytest.mark.skipif(
    not sdk_available("onednn"), reason="the oneDNN SDK is not built"))]


def staged_plan(queue, mps=(8, 12, 6, 6)) -> Plan:
    """The module's branches as a stage, the layers around it one block each."""
    regions = parallel_regions(queue, SearchSpace.from_queue(queue))
    region = max(regions, key=lambda r: (len(r.branches), r.stop - r.start))
    names = [layer.name for layer in queue.layers]
    blocks = [PlannedBlock(f"pre{i}", [names[i]], mp=1, fuse=False)
              for i in range(region.start)]
    stage = []
    for branch, mp in zip(region.branches, mps):
        blocks.append(PlannedBlock(f"branch{len(stage)}", [names[i] for i in branch], mp=mp,
                                   fuse=len(branch) > 1))
        stage.append(blocks[-1].name)
    blocks += [PlannedBlock(f"post{i}", [names[i]], mp=4, fuse=False)
               for i in range(region.stop, len(names))]
    return Plan(blocks, stages=[stage])


@pytest.mark.parametrize("sdk", SDKS)
def test_staged_inception_module_matches_per_layer_and_onnxruntime(tmp_path, sdk) -> None:
    model = googlenet_block(seed=3)
    queue = run_passes(import_onnx(model))
    staged = staged_plan(queue)
    assert len(staged.stages[0]) == 4
    staged.validate(queue)
    feeds = random_inputs(model, 0)
    outputs, totals = {}, {}
    for name, plan in (("staged", staged), ("per-layer", "per-layer")):
        path = tmp_path / f"{name}.json"
        if isinstance(plan, Plan):
            path.write_text(plan.to_json())
        else:
            path = plan
        out = tmp_path / name
        compile_model(model, out, plan=path)
        source = (out / "session.cpp").read_text()
        assert ("std::vector<pz::Stage> stages;" in source) == (name == "staged")
        build_session(out, sdk=sdk)
        result = run_session(out, list(feeds.values()))
        outputs[name] = result.outputs[0]
        totals[name] = float(re.search(r"total device time: ([0-9.]+) us",
                                       result.report).group(1))
        if name == "staged":
            assert re.search(r"branch0 .* stage0\n", result.report)
    np.testing.assert_allclose(outputs["staged"], outputs["per-layer"], rtol=1e-5, atol=1e-6)
    ref = onnxruntime_outputs(model, feeds)[0]
    np.testing.assert_allclose(outputs["staged"], ref.reshape(outputs["staged"].shape),
                               rtol=1e-4, atol=1e-5)
    # Against a float64 truth on inputs of large magnitude: a stage changes where blocks
    # run, not what they compute, so its error is the per-layer plan's.
    big = {k: v * np.float32(100) for k, v in feeds.items()}
    truth = Float64Reference(model).run(big)[0].reshape(outputs["staged"].shape)
    staged_big = run_session(tmp_path / "staged", list(big.values())).outputs[0]
    plain_big = run_session(tmp_path / "per-layer", list(big.values())).outputs[0]
    scale = np.abs(truth).max()
    err = np.abs(staged_big - truth).max() / scale
    assert err < 1e-5
    assert err <= 1.01 * np.abs(plain_big - truth).max() / scale + 1e-9
    if sdk == "mock":
        oracle = DeviceModelOracle(queue)
        assert totals["staged"] == pytest.approx(oracle.plan_cost(staged), rel=1e-3, abs=0.1)


def test_stage_validation_names_the_problem() -> None:
    from paleozoic.ir import PlanError

    queue = run_passes(import_onnx(googlenet_block(seed=3)))
    staged = staged_plan(queue, mps=(16, 16, 8, 8))
    with pytest.raises(PlanError, match=r"need 48 cores, the device has 32"):
        staged.validate(queue)
    staged = staged_plan(queue)
    staged.stages = [staged.stages[0][:1]]
    with pytest.raises(PlanError, match="two or more blocks"):
        staged.validate(queue)
    staged = staged_plan(queue, mps=(6, 6, 6, 6))
    # A block of the stage with the join (the concat) reads the others' outputs.
    names = staged.stages[0]
    post = next(b for b in staged.blocks if b.name.startswith("post"))
    staged.stages = [names + [post.name]]
    with pytest.raises(PlanError, match=r"block 'post13' reads .*which block 'branch\d' of "
                                        r"the same stage writes.*must be independent"):
        staged.validate(queue)


def test_raw_form_runs_a_stage_on_queues_of_its_own(tmp_path) -> None:
    # The raw form prints what the wrapper calls: each block of the stage on a queue of its
    # own, pinned to its cores, synchronised after the stage's last block; same numbers.
    model = googlenet_block(seed=3)
    queue = run_passes(import_onnx(model))
    path = tmp_path / "staged.json"
    path.write_text(staged_plan(queue).to_json())
    feeds = random_inputs(model, 0)
    results = {}
    for emit in ("wrapper", "raw"):
        out = tmp_path / emit
        compile_model(model, out, plan=path, emit=emit)
        build_session(out)
        results[emit] = run_session(out, list(feeds.values()))
    source = (tmp_path / "raw" / "session.cpp").read_text()
    assert "cnrtQueue_t branch0_queue = nullptr;" in source
    assert "unsigned int branch1_cores = 0x000fff00u;" in source  # cores 8..19
    assert "branch1_queue, &branch1_invoke));" in source
    np.testing.assert_array_equal(results["raw"].outputs[0], results["wrapper"].outputs[0])
    total = [float(re.search(r"total device time: ([0-9.]+) us", r.report).group(1))
             for r in results.values()]
    assert total[0] == pytest.approx(total[1], abs=0.1)
