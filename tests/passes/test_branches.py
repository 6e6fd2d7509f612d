"""place_branches: the layers only a run-time If's branch needs run in that branch (an outer
layer only one branch reads moves into it; one both branches or a graph output read stays
outside), each branch one run of the queue before the If's Where layers, nested Ifs inside
their branch; the search space, the fixed plans, every built-in optimizer and plan.json
validation keep blocks within one branch; branches of different shapes are refused by
name."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import runtime_if_model
from onnx import TensorProto, helper, numpy_helper

from paleozoic.errors import UnsupportedModelError
from paleozoic.ir import Plan, PlannedBlock
from paleozoic.ir.plan import PlanError
from paleozoic.optimize import SearchSpace, load_optimizer, run_optimizer
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.plans import fuse_all
from paleozoic.pipeline import load_queue, resolve_plan
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.verify import reference_outputs

OUTER, INNER = "outer_if", "outer_if/else/inner_if"


def _runs(queue, branch) -> list[int]:
    return [i for i, layer in enumerate(queue.layers) if layer.branch[:len(branch)] == branch]


def test_nested_branches_are_runs_of_the_queue() -> None:
    queue = load_queue(runtime_if_model("nested"))
    assert queue.conditions == {OUTER: "Greater_c", INNER: "outer_if_else_c2"}
    kinds = {layer.name: (layer.kind, layer.branch) for layer in queue.layers}
    assert kinds["outer_if_then_r"] == ("Active", ((OUTER, True),))
    assert kinds["outer_if_else_inner_if_else_ie"] == \
        ("Unary", ((OUTER, False), (INNER, False)))
    # the condition, Exp (read by both branches and by z) and the outer Where: every run
    for name in ("Greater_c", "Exp_x", "outer_if_select_y", "Add_z"):
        assert kinds[name][1] == (), name
    for branch in [((OUTER, True),), ((OUTER, False),), ((OUTER, False), (INNER, True)),
                   ((OUTER, False), (INNER, False))]:
        at = _runs(queue, branch)
        assert at and at == list(range(at[0], at[-1] + 1)), branch
    # then before else, both before the Where selecting between them
    assert _runs(queue, ((OUTER, True),))[-1] < _runs(queue, ((OUTER, False),))[0]
    select = [layer.name for layer in queue.layers].index("outer_if_select_y")
    assert _runs(queue, ((OUTER, False),))[-1] < select


def _capture_model() -> onnx.ModelProto:
    """u = Tanh(x) is computed outside the If and read by its then branch only; v = Abs(x)
    by both branches."""
    y = helper.make_tensor_value_info
    then = helper.make_graph([helper.make_node("Add", ["u", "v"], ["t"])], "then", [],
                             [y("t", TensorProto.FLOAT, [1, 8])])
    other = helper.make_graph([helper.make_node("Mul", ["x", "v"], ["e"])], "else", [],
                              [y("e", TensorProto.FLOAT, [1, 8])])
    nodes = [helper.make_node("Tanh", ["x"], ["u"]), helper.make_node("Abs", ["x"], ["v"]),
             helper.make_node("ReduceMean", ["x"], ["mean"], keepdims=1),
             helper.make_node("Greater", ["mean", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["out"], name="choose", then_branch=then,
                              else_branch=other)]
    graph = helper.make_graph(nodes, "capture", [y("x", TensorProto.FLOAT, [1, 8])],
                              [y("out", TensorProto.FLOAT, [1, 8])],
                              [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_outer_layer_only_one_branch_reads_moves_into_it() -> None:
    model = _capture_model()
    queue = load_queue(model)
    branch = {layer.kind: layer.branch for layer in queue.layers}
    assert branch["Active"] == (("choose", True),)   # Tanh
    assert branch["Unary"] == ()                     # Abs: both branches read it
    runner = PlanRunner(queue, resolve_plan(queue, "fuse-all"))
    for sign in (1.0, -1.0):
        x = (sign + np.random.default_rng(1).uniform(-0.5, 0.5, (1, 8))).astype(np.float32)
        got = list(runner.run([x]).values())[0]
        np.testing.assert_allclose(got, reference_outputs(model, {"x": x})[0], rtol=1e-6)


def test_plans_and_searches_keep_blocks_within_a_branch() -> None:
    queue = load_queue(runtime_if_model("nested"))
    space = SearchSpace.from_queue(queue)
    boundaries = [i for i in range(1, len(queue.layers))
                  if queue.layers[i].branch != queue.layers[i - 1].branch]
    assert set(boundaries) <= set(space.forced_cuts())
    for start in range(len(queue.layers)):
        stop = space.max_stop(start)
        assert {layer.branch for layer in queue.layers[start:stop]} == \
            {queue.layers[start].branch}
    oracle = DeviceModelOracle(queue)
    searched = [run_optimizer(load_optimizer(name), queue, oracle)
                for name in ("dp", "greedy", "annealing")]
    for plan in [fuse_all(queue), *searched]:
        plan.validate(queue)
        for block in plan.blocks:
            assert len({queue.layer(name).branch for name in block.layers}) == 1, block


def test_a_plan_block_across_a_branch_is_refused_with_its_name() -> None:
    queue = load_queue(runtime_if_model("plain"))
    names = [layer.name for layer in queue.layers]
    first = next(i for i, layer in enumerate(queue.layers) if layer.branch)
    blocks = [PlannedBlock("before", names[:first], mp=1, fuse=False),
              PlannedBlock("across", names[first:], mp=1, fuse=False)]
    with pytest.raises(PlanError, match=r"block 'across'.*different branches of a run-time "
                                        r"If \(outside any If and outer_if then\)"):
        Plan(blocks).validate(queue)


def test_branches_of_different_shapes_are_refused_naming_the_if() -> None:
    y = helper.make_tensor_value_info
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                             [y("t", TensorProto.FLOAT, [1, 8])])
    other = helper.make_graph([helper.make_node("ReduceMax", ["x"], ["e"], keepdims=1)],
                              "else", [], [y("e", TensorProto.FLOAT, [1, 1])])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=1),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["out"], name="mismatch", then_branch=then,
                          else_branch=other)],
        "mismatch", [y("x", TensorProto.FLOAT, [1, 8])], [y("out", TensorProto.FLOAT, ["n", "m"])],
        [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedModelError, match=r"node 'mismatch' \(If\): its branches "
                                                    r"give the output .* different shapes"):
        load_queue(model)
