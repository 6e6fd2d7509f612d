"""Integer inputs and outputs end to end: a uint8 image classifier whose Cast runs as a host
layer and whose ArgMax output is computed on the host (paleozoic.testing.host), compiled to
C++, built with g++, run, and compared with onnxruntime (logits at fp32's level, class
indices exactly), and run through the runtime under per-layer and fuse-all plans."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ops import KINDS
from paleozoic.pipeline import (
    build_session,
    compile_model,
    load_queue,
    resolve_plan,
    run_session,
)
from paleozoic.plan_runner import PlanRunner
from paleozoic.sdk import sdk_available
from paleozoic.testing.host import (
    compare_select,
    compare_select_inputs,
    topk_classifier,
    topk_gather_head,
    uint8_classifier,
)
from paleozoic.verify import reference_outputs


@pytest.fixture(scope="module")
def model_and_feeds():
    model = uint8_classifier(seed=0, batch=4)
    image = np.random.default_rng(0).integers(0, 256, size=(4, 3, 8, 8)).astype(np.uint8)
    return model, image, reference_outputs(model, {"image": image})


def test_emitted_session_matches_onnxruntime(model_and_feeds, tmp_path) -> None:
    model, image, (logits, label) = model_and_feeds
    out = compile_model(model, tmp_path / "out", plan="fuse-all")
    source = (out / "session.cpp").read_text()
    assert 'pz::Tensor image{"image", {4, 3, 8, 8}, pz::ElementType::kUint8};' in source
    assert "pz::HostCastLayer" in source and "pz::HostArgMaxLayer" in source
    build_session(out)
    ours_logits, ours_label = run_session(out, [image]).outputs
    np.testing.assert_allclose(ours_logits, logits, rtol=1e-5, atol=1e-5)
    assert ours_label.dtype == np.int64
    np.testing.assert_array_equal(ours_label, label)


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_runtime_plans_keep_host_layers_alone(model_and_feeds, plan: str) -> None:
    model, image, (logits, label) = model_and_feeds
    queue = load_queue(model)
    resolved = resolve_plan(queue, plan)
    kinds = {layer.name: layer.kind for layer in queue.layers}
    for block in resolved.blocks:
        if any(KINDS[kinds[name]].host for name in block.layers):
            assert len(block.layers) == 1, block
    outputs = list(PlanRunner(queue, resolved).run([image]).values())
    np.testing.assert_allclose(outputs[0], logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outputs[1], label)


@pytest.fixture(scope="module")
def topk_model_and_feeds():
    model = topk_classifier(seed=1, batch=3)
    image = np.random.default_rng(1).normal(size=(3, 3, 8, 8)).astype(np.float32)
    return model, image, reference_outputs(model, {"image": image})


def test_topk_emitted_session_matches_onnxruntime(topk_model_and_feeds, tmp_path) -> None:
    model, image, (indices, probs) = topk_model_and_feeds
    out = compile_model(model, tmp_path / "out", plan="per-layer")
    source = (out / "session.cpp").read_text()
    # Both of TopK's outputs are read: a host layer each.
    assert source.count("pz::HostTopKLayer") == 2 and "pz::TopKOutput::kIndices" in source
    build_session(out)
    ours_indices, ours_probs = run_session(out, [image]).outputs
    assert ours_indices.dtype == np.int64
    np.testing.assert_array_equal(ours_indices, indices)
    np.testing.assert_allclose(ours_probs, probs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_topk_runtime_plans(topk_model_and_feeds, plan: str) -> None:
    model, image, (indices, probs) = topk_model_and_feeds
    queue = load_queue(model)
    assert [layer.kind for layer in queue.layers].count("HostTopK") == 2
    outputs = list(PlanRunner(queue, resolve_plan(queue, plan)).run([image]).values())
    np.testing.assert_array_equal(outputs[0], indices)
    np.testing.assert_allclose(outputs[1], probs, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def compare_model_and_feeds():
    model = compare_select(batch=2)
    feeds = compare_select_inputs(batch=2)
    return model, feeds, reference_outputs(model, feeds)


def _assert_same(ours: list[np.ndarray], refs: list[np.ndarray]) -> None:
    for got, want in zip(ours, refs):
        np.testing.assert_array_equal(got, want)  # exact, nan where onnxruntime has nan


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_comparisons_logic_and_where_at_run_time(compare_model_and_feeds, plan, sdk) -> None:
    model, feeds, refs = compare_model_and_feeds
    queue = load_queue(model)
    kinds = [layer.kind for layer in queue.layers]
    ops = sorted(layer.op.attrs["op"] for layer in queue.layers if layer.kind == "Binary")
    # Less(y, x) is Greater(x, y) with the operands swapped (the SDK broadcasts b to a),
    # which the duplicates pass then merges with c1; LessOrEqual(y, x) likewise swaps.
    assert ops == ["and", "equal", "greater", "greater_equal", "greater_equal", "or",
                   "xor"], ops
    assert kinds.count("HostWhere") == 2 and "Unary" in kinds
    outputs = PlanRunner(queue, resolve_plan(queue, plan), sdk=sdk).run(
        [feeds[n] for n in queue.onnx_input_names])
    _assert_same(list(outputs.values()), refs)


def test_comparisons_emitted_session_matches_onnxruntime(compare_model_and_feeds,
                                                         tmp_path) -> None:
    model, feeds, refs = compare_model_and_feeds
    out = compile_model(model, tmp_path / "out", plan="fuse-all")
    source = (out / "session.cpp").read_text()
    assert "pz::Binary::kXor" in source and "pz::Unary::kNot" in source
    assert "-std::numeric_limits<float>::infinity(), x, {2, 3, 4, 5}}" in source
    build_session(out)
    queue = load_queue(model)
    _assert_same(run_session(out, [feeds[n] for n in queue.onnx_input_names]).outputs, refs)


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_gather_elements_by_topk_indices(plan, sdk) -> None:
    """GatherElements of run-time boxes by TopK's run-time indices, then a device layer."""
    model = topk_gather_head(batch=2, anchors=8, k=3)
    rng = np.random.default_rng(4)
    scores, boxes = (rng.standard_normal((2, 8, 4)).astype(np.float32) for _ in range(2))
    queue = load_queue(model)
    assert [layer.kind for layer in queue.layers] == ["HostTopK", "HostGatherElements",
                                                      "Active"]
    (want,) = reference_outputs(model, {"scores": scores, "boxes": boxes})
    got = PlanRunner(queue, resolve_plan(queue, plan), sdk=sdk).run([scores, boxes])
    np.testing.assert_array_equal(next(iter(got.values())), want)


def test_gather_elements_emitted_and_an_index_out_of_range(tmp_path) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("GatherElements", ["x", "idx"], ["y"], axis=-1, name="pick")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    i = np.array([[0, -1, 4], [-5, 2, 2]], dtype=np.int64)  # negative: from the end
    out = compile_model(model, tmp_path / "out", plan="per-layer")
    assert "pz::HostGatherElementsLayer pick{\"pick\", x, idx, /*axis=*/1};" in \
        (out / "session.cpp").read_text()
    build_session(out)
    (got,) = run_session(out, [x, i]).outputs
    np.testing.assert_array_equal(got, reference_outputs(model, {"x": x, "idx": i})[0])
    queue = load_queue(model)
    runner = PlanRunner(queue, resolve_plan(queue, "per-layer"))
    with pytest.raises(Exception, match="pick: index 5 is outside axis 1 of size 5"):
        runner.run([x, np.array([[0, 5, 1], [0, 0, 0]], dtype=np.int64)])
