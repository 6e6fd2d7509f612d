"""A run-time If end to end: the frontend splits it into both branches and a Where per
output, the session runs only the taken branch's blocks inside C++ if/else (nested for an
If in a branch), and every path matches onnxruntime, on the built session and in-process,
on both SDKs. Which blocks ran is read off the session's timing report: a block never run
reports 0.0 us."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import runtime_if_model

from paleozoic.pipeline import build_session, compile_model, load_queue, resolve_plan, run_session
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import sdk_available
from paleozoic.accuracy.verify import reference_outputs

# x0 for each path: the sum's sign picks the outer branch; for the else branch, the inner If
# takes Tanh when max(exp(x0)) < 0.5 (x0 < -0.7) and Neg otherwise.
_RNG = np.random.default_rng(0)
_NOISE = _RNG.uniform(-0.1, 0.1, size=(1, 8)).astype(np.float32)
PATHS = {"then": 0.5 + _NOISE, "else/neg": -0.5 + _NOISE, "else/tanh": -2.0 + _NOISE}
SDKS = ["mock", "onednn"]


def _feeds(form: str, path: str) -> dict[str, np.ndarray]:
    if form == "flag":
        return {"x0": PATHS["else/neg"], "flag": np.array([path == "then"])}
    return {"x0": PATHS[path]}


def _ran_blocks(report: str) -> set[str]:
    """Blocks whose device time is above zero in the session's timing table."""
    ran = set()
    for line in report.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0].startswith("block") and float(parts[4]) > 0.0:
            ran.add(parts[0])
    return ran


def _skip_without(sdk: str) -> None:
    if not sdk_available(sdk):
        pytest.skip(f"the {sdk} SDK is not built")


@pytest.mark.parametrize("sdk", SDKS)
def test_emitted_if_runs_the_taken_branch_only(tmp_path, sdk: str) -> None:
    _skip_without(sdk)
    model = runtime_if_model("nested")
    out = compile_model(model, tmp_path / "out", plan="fuse-all")
    source = (out / "session.cpp").read_text()
    assert "if (pz::conditionHolds(Greater_c.output())) {  // If outer_if: its then branch" \
        in source
    assert "    } else {" in source and "      if (pz::conditionHolds(" in source
    build_session(out, sdk=sdk)
    queue = load_queue(model)
    plan = resolve_plan(queue, "fuse-all")
    branch_of = {b.name: queue.layer(b.layers[0]).branch for b in plan.blocks}
    for path in PATHS:
        feeds = _feeds("nested", path)
        result = run_session(out, list(feeds.values()))
        np.testing.assert_allclose(result.outputs[0], reference_outputs(model, feeds)[0],
                                   rtol=1e-5, atol=1e-6)
        taken = {("outer_if", path == "then")}
        if path != "then":
            taken.add(("outer_if/else/inner_if", path == "else/tanh"))
        expected = {name for name, branch in branch_of.items()
                    if set(branch) <= taken}
        assert _ran_blocks(result.report) <= expected
        skipped = {name for name, branch in branch_of.items() if not set(branch) <= taken}
        assert skipped and not skipped & _ran_blocks(result.report), path


@pytest.mark.parametrize("sdk", SDKS)
def test_a_bool_input_condition_and_an_integer_output_of_one_branch(tmp_path, sdk) -> None:
    _skip_without(sdk)
    model = runtime_if_model("flag")
    out = compile_model(model, tmp_path / "out", plan="per-layer")
    build_session(out, sdk=sdk)
    for path in ("then", "else/neg"):
        feeds = _feeds("flag", path)
        ours = run_session(out, list(feeds.values())).outputs
        refs = reference_outputs(model, feeds)
        np.testing.assert_allclose(ours[0], refs[0], rtol=1e-5, atol=1e-6)
        assert ours[1].dtype == np.int64
        np.testing.assert_array_equal(ours[1], refs[1])


@pytest.mark.parametrize("form", ["plain", "nested", "flag"])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_in_process_runs_match_onnxruntime(form: str, plan: str) -> None:
    model = runtime_if_model(form)
    queue = load_queue(model)
    runner = PlanRunner(queue, resolve_plan(queue, plan))
    for path in (["then", "else/neg"] if form == "flag" else PATHS):
        feeds = _feeds(form, path)
        ours = list(runner.run(list(feeds.values())).values())
        for got, ref in zip(ours, reference_outputs(model, feeds)):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
