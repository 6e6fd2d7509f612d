"""Integer inputs and outputs end to end: a uint8 image classifier whose Cast runs as a host
layer and whose ArgMax output is computed on the host (paleozoic_testing.host), compiled to
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
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.host import (
    compare_select,
    compare_select_inputs,
    grid_sampler,
    integer_ops,
    integer_ops_inputs,
    topk_classifier,
    token_pool_causal_mask,
    token_pool_causal_mask_inputs,
    topk_gather_head,
    uint8_classifier,
)
from paleozoic.accuracy.verify import reference_outputs


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


@pytest.fixture(scope="module")
def integer_model_and_feeds():
    model = integer_ops()
    feeds = integer_ops_inputs()
    return model, feeds, reference_outputs(model, feeds)


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_integer_arithmetic_comparisons_and_mod(integer_model_and_feeds, plan, sdk) -> None:
    """Equal/Greater/Not/And of int64 ids, Div and Mod (both signs of the divisor), a float
    compared with a number and Mod fmod=1: on the host, exactly onnxruntime's values and
    types."""
    model, feeds, refs = integer_model_and_feeds
    queue = load_queue(model)
    arith = sorted(layer.op.attrs["op"] for layer in queue.layers if layer.kind == "HostArith")
    # Not of a mask is x == 0; the Casts of masks to integers are x != 0.
    assert arith == ["and", "div", "equal", "equal", "fmod", "greater", "less", "mod", "mod",
                     "not_equal", "not_equal"], arith
    outputs = PlanRunner(queue, resolve_plan(queue, plan), sdk=sdk).run(
        [feeds[n] for n in queue.onnx_input_names])
    for got, want in zip(outputs.values(), refs):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_integer_ops_emitted_session_matches_onnxruntime(integer_model_and_feeds,
                                                         tmp_path) -> None:
    model, feeds, refs = integer_model_and_feeds
    out = compile_model(model, tmp_path / "out", plan="fuse-all")
    source = (out / "session.cpp").read_text()
    assert ('pz::HostArithLayer cls_neg{"cls_neg", ids, -7.0, pz::HostArith::kMod, {2, 9}, '
            'pz::ElementType::kInt64};') in source
    assert ('pz::HostArithLayer wrapped{"wrapped", x, 0.75, pz::HostArith::kFmod, {2, 9}, '
            'pz::ElementType::kFloat};') in source
    build_session(out)
    got = run_session(out, [feeds[n] for n in ("ids", "x")]).outputs
    for ours, want in zip(got, refs):
        assert ours.dtype == want.dtype
        np.testing.assert_array_equal(ours, want)


def test_integer_division_by_zero_names_the_layer() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Div", ["a", "b"], ["q"], name="split")], "g",
        [helper.make_tensor_value_info(n, TensorProto.INT64, [4]) for n in ("a", "b")],
        [helper.make_tensor_value_info("q", TensorProto.INT64, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    queue = load_queue(model)
    runner = PlanRunner(queue, resolve_plan(queue, "per-layer"))
    a = np.array([7, -7, 9, 1], dtype=np.int64)
    got = runner.run([a, np.array([2, 2, -4, 1], dtype=np.int64)])
    np.testing.assert_array_equal(next(iter(got.values())), [3, -3, -2, 1])  # toward zero
    with pytest.raises(Exception, match="split: integer division by zero at index 2"):
        runner.run([a, np.array([2, 2, 0, 1], dtype=np.int64)])


def _bool_model():
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Xor", ["keep", "flip"], ["mixed"], name="mixed"),
             helper.make_node("Greater", ["x", "zero"], ["positive"], name="positive"),
             helper.make_node("Or", ["mixed", "positive"], ["any"], name="any"),
             helper.make_node("Where", ["keep", "x", "ninety"], ["picked"], name="picked")]
    graph = helper.make_graph(
        nodes, "bools",
        [helper.make_tensor_value_info("keep", TensorProto.BOOL, [3, 4]),
         helper.make_tensor_value_info("flip", TensorProto.BOOL, [4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("any", TensorProto.BOOL, [3, 4]),
         helper.make_tensor_value_info("picked", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
         helper.make_tensor("ninety", TensorProto.FLOAT, [], [90.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_bool_inputs_and_outputs(tmp_path) -> None:
    """Bool graph inputs and outputs: uint8 0s and 1s on the host, bool at the backend's
    boundary; a broadcast bool operand; the emitted session and the runtime equal onnxruntime."""
    import paleozoic.backend as backend

    model = _bool_model()
    rng = np.random.default_rng(3)
    keep, flip = rng.random((3, 4)) < 0.5, rng.random(4) < 0.5
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 0] = -0.0
    want_any, want_picked = reference_outputs(model, {"keep": keep, "flip": flip, "x": x})
    queue = load_queue(model)
    assert [i.dtype for i in queue.inputs] == ["uint8", "uint8", "float32"]
    feeds = [keep.astype(np.uint8), flip.astype(np.uint8), x]
    got_any, got_picked = PlanRunner(queue, resolve_plan(queue, "fuse-all")).run(feeds).values()
    assert got_any.dtype == np.uint8
    np.testing.assert_array_equal(got_any, want_any.astype(np.uint8))
    np.testing.assert_array_equal(got_picked, want_picked)
    out = compile_model(model, tmp_path / "out", plan="per-layer")
    build_session(out)
    ours_any, ours_picked = run_session(out, feeds).outputs
    np.testing.assert_array_equal(ours_any, want_any.astype(np.uint8))
    np.testing.assert_array_equal(ours_picked, want_picked)
    rep = backend.prepare(model)
    any_, picked = rep.run([keep, flip, x])
    assert any_.dtype == np.bool_
    np.testing.assert_array_equal(any_, want_any)


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
def test_token_pooling_and_a_constant_causal_mask(plan, sdk) -> None:
    """Gather of run-time rows by run-time indices (HostGather) and And of a run-time mask
    with a constant causal mask (HostArith reading its constant from the weights)."""
    model, feeds = token_pool_causal_mask(), token_pool_causal_mask_inputs()
    queue = load_queue(model)
    kinds = [layer.kind for layer in queue.layers]
    assert "HostGather" in kinds
    (visible,) = [layer for layer in queue.layers if layer.name == "visible"]
    assert visible.kind == "HostArith" and "constant" in visible.weights
    want = reference_outputs(model, feeds)
    got = PlanRunner(queue, resolve_plan(queue, plan), sdk=sdk).run(
        [feeds[n] for n in queue.onnx_input_names])
    for ours, ref in zip(got.values(), want):
        np.testing.assert_array_equal(ours, ref)


def test_token_pooling_emitted_session(tmp_path) -> None:
    model, feeds = token_pool_causal_mask(), token_pool_causal_mask_inputs()
    out = compile_model(model, tmp_path / "out", plan="per-layer")
    source = (out / "session.cpp").read_text()
    assert ('pz::HostArithLayer visible{"visible", pz::HostConstant{{1, 1, 6, 6}}, '
            'keep4_reshape.output(), pz::HostArith::kAnd, {2, 1, 6, 6}, '
            'pz::ElementType::kUint8};') in source
    assert 'visible.configLayer(weights.get("visible.constant", {1, 1, 6, 6}));' in source
    assert ('pz::HostGatherLayer pooled{"pooled", rows.output(), flat.output(), /*axis=*/0};'
            in source)
    build_session(out)
    got = run_session(out, [feeds[n] for n in ("ids", "attention_mask", "hidden")]).outputs
    for ours, ref in zip(got, reference_outputs(model, feeds)):
        np.testing.assert_array_equal(ours, ref)


def test_grid_sample_emitted_session(tmp_path) -> None:
    model = grid_sampler("bilinear", "border", 0)
    rng = np.random.default_rng(3)
    feeds = {"x": rng.normal(size=(2, 3, 5, 7)).astype(np.float32),
             "q": rng.normal(0, 2, size=(2, 4, 4, 6)).astype(np.float32)}
    out = compile_model(model, tmp_path / "out", plan="fuse-all")
    source = (out / "session.cpp").read_text()
    assert "pz::GridSampleMode::kBilinear, pz::GridSamplePadding::kBorder, " \
        "/*align_corners=*/false};" in source
    build_session(out)
    (got,) = run_session(out, list(feeds.values())).outputs
    np.testing.assert_allclose(got, reference_outputs(model, feeds)[0], rtol=1e-5, atol=1e-5)
