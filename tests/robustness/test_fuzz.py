"""Property-based fuzzing: random valid CNNs (chains and DAGs with residual adds and channel
concats; random channels, kernels, strides, asymmetric pads, dilations, groups, pooling with
ceil_mode and count_include_pad, BN, a GAP/Gemm/Softmax head) compiled under random valid
plans (cuts and MPs) and compared with onnxruntime. Most examples run through the pybind
runtime (same wrapper and mock SDK as a session); a few are emitted as C++, built with g++
and run. Profiles: tests/robustness/conftest.py; failures found become @example cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fuzz_graphs import cnn_models, compare, plans
from paleozoic.optimize.base import spans_to_plan
from paleozoic.pipeline import build_session, compile_model, load_queue, run_session
from robust_util import ort_outputs


@given(model=cnn_models(), data=st.data())
def test_random_cnn_under_random_plan_matches_onnxruntime(model, data):
    queue = load_queue(model)
    plan = data.draw(plans(queue), label="plan")
    plan.validate(queue)
    compare(model, queue, plan)


def _emitted_matches(model, plan_seed: int, out: Path) -> None:
    queue = load_queue(model)
    rng = np.random.default_rng(plan_seed)
    n = len(queue.layers)
    cuts = sorted(set(rng.integers(1, max(n, 2), size=min(3, n - 1)).tolist())) if n > 1 else []
    bounds = [0, *cuts, n]
    plan = spans_to_plan(queue, [(a, b, int(rng.integers(1, 33)))
                                 for a, b in zip(bounds, bounds[1:])], "fuzz")
    compile_model(model, out, plan=plan)
    build_session(out, jobs=1)
    x = np.random.default_rng(1).standard_normal(
        [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    ).astype(np.float32)
    ours = run_session(out, [x]).outputs
    refs = ort_outputs(model, {"x": x})
    for a, ref in zip(ours, refs):
        np.testing.assert_allclose(a.reshape(ref.shape), ref, rtol=1e-3, atol=1e-4)


def test_emitted_sessions_of_fuzzed_graphs(tmp_path):
    """Three fixed fuzzed graphs go the whole way: emitted C++, g++, the session binary."""
    from hypothesis import find, settings

    for i, steps in enumerate((3, 5, 7)):
        model = find(cnn_models(max_steps=steps),
                     lambda m, s=steps: len(m.graph.node) >= s and len(m.graph.output) >= 1,
                     settings=settings(database=None, derandomize=True, max_examples=200))
        _emitted_matches(model, i, tmp_path / f"session{i}")
