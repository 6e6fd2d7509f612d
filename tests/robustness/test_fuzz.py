"""Property-based fuzzing: random valid CNNs (chains and DAGs with residual adds and
concats; random channels, kernels, strides, asymmetric pads, dilations, groups, pooling with
ceil_mode and count_include_pad, BN, LRN, Transpose / channel shuffle / Reshape / Flatten in
the middle of the graph, up to three graph inputs, several graph outputs, a Gemm/Softmax
head; fuzz_graphs.py) compiled under random valid plans (cuts and MPs) and compared with
onnxruntime. Most examples run through the pybind runtime (same wrapper and mock SDK as a
session); a few are emitted as C++, built with g++ and run; with hostile text in every
string field (hostile.py), emitted sessions keep their token structure. Profiles:
tests/robustness/conftest.py; failures found become @example cases or regression tests in
test_fuzz_regressions.py."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fuzz_graphs import (
    INPUT_SCALES,
    check_outputs,
    cnn_models,
    compare,
    graph_inputs,
    plans,
    reference_model,
    seeded_feeds,
    staged_plans,
)
from hostile import cmake_skeleton, hostile_texts, make_hostile, skeleton
from hypothesis import given, settings
from hypothesis import strategies as st
from robust_util import ort_outputs

from paleozoic.frontend.prune import prune_pairs, targets
from paleozoic.ops import KINDS
from paleozoic.optimize import fusible_kinds
from paleozoic.optimize.base import spans_to_plan
from paleozoic.optimize.space import SearchSpace
from paleozoic.optimize.sparse import with_sparse
from paleozoic.pipeline import build_session, compile_model, load_queue, run_session
from paleozoic.runner.sdk import sdk_available

# Longer graphs for long runs (scripts/fuzz_long.py --max-steps); the CI profile keeps 7.
MAX_STEPS = int(os.environ.get("PZ_FUZZ_MAX_STEPS", "7"))
# Random graphs that also go through emitted C++, g++ and the session binary (a few seconds
# each): only when asked for (scripts/fuzz_long.py --emitted N).
EMITTED_EXAMPLES = int(os.environ.get("PZ_FUZZ_EMITTED", "0"))


@given(model=cnn_models(max_steps=MAX_STEPS), data=st.data())
def test_random_cnn_under_random_plan_matches_onnxruntime(model, data):
    queue = load_queue(model)
    plan = data.draw(plans(queue), label="plan")
    plan.validate(queue, fusible_kinds())
    compare(model, queue, plan, scale=data.draw(st.sampled_from(INPUT_SCALES), label="scale"))


@pytest.mark.skipif(not sdk_available("onednn"), reason="the oneDNN SDK is not built")
@given(model=cnn_models(max_steps=MAX_STEPS), data=st.data())
def test_random_cnn_on_onednn_matches_onnxruntime(model, data):
    """The same graphs and plans on the oneDNN SDK, two forwards: its fused blocks keep
    oneDNN's layouts between steps, rebuild layout-agnostic ops over their producers'
    channels last and let a residual convolution write over the value it adds."""
    queue = load_queue(model)
    plan = data.draw(plans(queue), label="plan")
    plan.validate(queue, fusible_kinds())
    compare(model, queue, plan, scale=data.draw(st.sampled_from(INPUT_SCALES), label="scale"),
            sdk="onednn")


def _pruned(model, fraction: float = 0.9):
    """`model` with its convolutions' and fully connected layers' weights pruned in pairs."""
    from onnx import numpy_helper

    axis = {t.initializer: t.axis for t in targets(model)}
    out = type(model)()
    out.CopyFrom(model)
    for init in out.graph.initializer:
        if init.name in axis:
            array = prune_pairs(numpy_helper.to_array(init), fraction, axis[init.name])
            init.CopyFrom(numpy_helper.from_array(array, init.name))
    return out


SPARSE_SDKS = [pytest.param("mock", id="mock"),
               pytest.param("onednn", id="onednn", marks=pytest.mark.skipif(
                   not sdk_available("onednn"), reason="the oneDNN SDK is not built"))]


@pytest.mark.parametrize("sdk", SPARSE_SDKS)
@settings(max_examples=15)
@given(model=cnn_models(max_steps=MAX_STEPS), data=st.data())
def test_random_pruned_cnn_in_sparse_mode_matches_onnxruntime(sdk, model, data):
    """Random graphs with their convolutions and Gemm pruned to 90% zero pairs (so the oneDNN
    SDK's sparse kernels take them where they apply), under random plans with a random set of
    the layers that have a sparse mode in it: onnxruntime's numbers on the pruned model."""
    model = _pruned(model)
    queue = load_queue(model)
    eligible = sorted(layer.name for layer in queue.layers
                      if KINDS[layer.kind].sparse_refused(layer.op.attrs) is None)
    chosen = data.draw(st.sets(st.sampled_from(eligible)) if eligible else st.just(set()),
                       label="sparse layers")
    plan = with_sparse(data.draw(plans(queue), label="plan"), chosen)
    plan.validate(queue, fusible_kinds())
    compare(model, queue, plan, scale=data.draw(st.sampled_from(INPUT_SCALES), label="scale"),
            sdk=sdk)


@pytest.mark.parametrize("sdk", SPARSE_SDKS)
@settings(max_examples=15)
@given(model=cnn_models(max_steps=MAX_STEPS), data=st.data())
def test_random_cnn_with_stages_matches_onnxruntime(sdk, model, data):
    """Random graphs under random plans with stages (parallel regions' branches run at once
    on disjoint cores, from several host threads), a random data parallelism the batch
    allows and random load balance: onnxruntime's numbers."""
    queue = load_queue(model)
    plan = data.draw(staged_plans(queue), label="plan")
    plan.validate(queue, fusible_kinds())
    compare(model, queue, plan, scale=data.draw(st.sampled_from(INPUT_SCALES), label="scale"),
            sdk=sdk)


@pytest.mark.skipif(EMITTED_EXAMPLES < 1, reason="set PZ_FUZZ_EMITTED (fuzz_long.py --emitted)")
@settings(max_examples=max(EMITTED_EXAMPLES, 1))
@given(model=cnn_models(max_steps=MAX_STEPS), data=st.data())
def test_random_cnn_emitted_session_matches_onnxruntime(model, data):
    if data.draw(st.booleans(), label="hostile metadata"):
        model = make_hostile(model, data.draw(hostile_texts(), label="texts"))
    queue = load_queue(model)
    plan = data.draw(plans(queue), label="plan")
    plan.validate(queue, fusible_kinds())
    with tempfile.TemporaryDirectory(prefix="pz-fuzz-") as tmp:
        out = Path(tmp) / "session"
        compile_model(model, out, plan=plan)
        build_session(out, jobs=1)
        feeds = seeded_feeds(model)
        ours = run_session(out, list(feeds.values())).outputs
    refs = ort_outputs(reference_model(model), feeds)
    check_outputs(model, ours, refs, [o.name for o in model.graph.output], feeds)


def _emitted_matches(model, plan_seed: int, out: Path) -> None:
    queue = load_queue(model)
    rng = np.random.default_rng(plan_seed)
    n = len(queue.layers)
    cuts = set(rng.integers(1, max(n, 2), size=min(3, n - 1)).tolist()) if n > 1 else set()
    bounds = [0, *sorted(cuts | set(SearchSpace.from_queue(queue).forced_cuts())), n]
    plan = spans_to_plan(queue, [(a, b, int(rng.integers(1, 33)))
                                 for a, b in zip(bounds, bounds[1:])], "fuzz")
    plan.validate(queue, fusible_kinds())
    compile_model(model, out, plan=plan)
    build_session(out, jobs=1)
    feeds = seeded_feeds(model, seed=1)
    ours = run_session(out, list(feeds.values())).outputs
    refs = ort_outputs(reference_model(model), feeds)
    check_outputs(model, ours, refs, [o.name for o in model.graph.output], feeds)


def _ops(model) -> set[str]:
    return {node.op_type for node in model.graph.node}


def _shuffles(model) -> bool:
    return any(node.op_type == "Transpose" and len(node.attribute[0].ints) == 5
               for node in model.graph.node)


# What each of the three emitted graphs must contain (beyond `steps` nodes): together they
# take several inputs and outputs, the channel shuffle and LRN through g++ and the binary.
_EMITTED = (
    (3, lambda m: len(graph_inputs(m)) >= 2),
    (5, _shuffles),
    (7, lambda m: "LRN" in _ops(m) and len(m.graph.output) >= 2),
)


def test_emitted_sessions_of_fuzzed_graphs(tmp_path):
    """Three fixed fuzzed graphs go the whole way: emitted C++, g++, the session binary.
    Each is the first (derandomized) graph with the wanted features, not shrunk: shrinking
    costs seconds and would leave the smallest such graph, not a typical one."""
    from hypothesis import Phase, find

    for i, (steps, wanted) in enumerate(_EMITTED):
        model = find(cnn_models(max_steps=steps),
                     lambda m, s=steps, ok=wanted: len(m.graph.node) >= s and ok(m),
                     settings=settings(database=None, derandomize=True, max_examples=500,
                                       phases=[Phase.generate]))
        _emitted_matches(model, i, tmp_path / f"session{i}")



@settings(max_examples=max(1, settings.default.max_examples // 4))
@given(model=cnn_models(max_steps=MAX_STEPS), texts=hostile_texts(), data=st.data())
def test_random_cnn_with_hostile_metadata_emits_inert_code(model, texts, data):
    """The metadata mutation: every string field of a random CNN becomes hostile text; under
    the same random plan, the emitted session has the token structure of the graph with
    plain names (the text only inside comments and literals, escaped) and the same CMake
    lines. A quarter of the profile's examples: emission only, no g++ (the hostile
    sessions that are built and run are test_hostile_metadata.py's)."""
    queue = load_queue(model)
    plan = data.draw(plans(queue), label="plan")
    position = {layer.name: i for i, layer in enumerate(queue.layers)}
    spans = [(position[b.layers[0]], position[b.layers[-1]] + 1, b.mp) for b in plan.blocks]
    hostile = make_hostile(model, texts)
    hostile_queue = load_queue(hostile)
    files = {}
    with tempfile.TemporaryDirectory(prefix="pz-fuzz-meta-") as tmp:
        for label, m, p in (("plain", model, plan),
                            ("hostile", hostile, spans_to_plan(hostile_queue, spans, "fuzz"))):
            out = Path(tmp) / label
            compile_model(m, out, plan=p)
            files[label] = [(out / name).read_text() for name in ("session.cpp", "CMakeLists.txt")]
    assert skeleton(files["hostile"][0]) == skeleton(files["plain"][0])
    assert cmake_skeleton(files["hostile"][1]) == cmake_skeleton(files["plain"][1])
