"""Load balance (Table 4). CNML's data-preprocess strategy: an fp16 session whose input and
output convert on the host or on the device, emitted, built with g++ and run on each SDK:
the same bits as the session without a strategy, a float64 truth's error, and on the mock
the device time of the plan's run in the runtime (the device-side casts in it). CNRT's
channel placement: MP-1 blocks on one DDR channel, wrapper and raw forms, priced by the
device model as the mock times them."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from paleozoic.frontend import import_onnx
from paleozoic.ir import PlanError
from paleozoic.ir.plan import Precision
from paleozoic.optimize.balance import io_conversions, with_balance
from paleozoic.optimize.device_cost import DeviceModelOracle
from paleozoic.optimize.plans import fuse_all
from paleozoic.passes import run_passes
from paleozoic.pipeline import build_session, compile_model, run_session
from paleozoic.runner.plan_runner import PlanRunner
from paleozoic.accuracy.truth import Float64Reference
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.blocks import googlenet_block, mobilenet_v2_block
from paleozoic.accuracy.inputs import random_inputs

SDKS = ["mock", pytest.param("onednn", marks=pytest.mark.skipif(
    not sdk_available("onednn"), reason="the oneDNN SDK is not built"))]


def _plans(queue):
    base = fuse_all(queue, mp=8, precision=Precision.FP16)
    name_in, name_out = queue.inputs[0].name, queue.outputs[0]
    return {"default": base,
            "host-in device-out": dataclasses.replace(
                base, preprocess={name_in: "cpu_priority", name_out: "mlu_priority"}),
            "balance": dataclasses.replace(
                base, preprocess={name_in: "balance", name_out: "balance"})}


@pytest.mark.parametrize("sdk", SDKS)
def test_conversion_side_keeps_the_bits_and_moves_device_time(tmp_path, sdk) -> None:
    model = mobilenet_v2_block(seed=2)
    queue = run_passes(import_onnx(model))
    feeds = random_inputs(model, 0)
    big = {k: v * np.float32(300) for k, v in feeds.items()}
    truth = Float64Reference(model).run(big)[0]
    outputs, totals = {}, {}
    for name, plan in _plans(queue).items():
        out = tmp_path / name.replace(" ", "_")
        path = tmp_path / f"{out.name}.json"
        path.write_text(plan.to_json())
        compile_model(model, out, plan=path)
        source = (out / "session.cpp").read_text()
        assert ("setDataPreprocessStrategy" in source) == (name != "default")
        build_session(out, sdk=sdk)
        result = run_session(out, list(big.values()))
        outputs[name] = result.outputs[0].reshape(truth.shape)
        totals[name] = float(re.search(r"total device time: ([0-9.]+) us",
                                       result.report).group(1))
        if sdk == "mock":  # the emitted session's device time is the runtime's for the plan
            runner = PlanRunner(queue, plan)
            runner.run(list(big.values()))
            assert totals[name] == pytest.approx(sum(runner.block_micros()), rel=1e-3, abs=0.1)
    for name in ("host-in device-out", "balance"):
        assert np.array_equal(outputs[name].view(np.uint32), outputs["default"].view(np.uint32))
    # fp16 over large inputs: within fp16's few ulps of the truth's scale.
    scale = np.abs(truth).max()
    assert np.abs(outputs["default"] - truth).max() / scale < 2e-2
    if sdk == "mock":
        # The input's cast leaves the device, the output's joins it.
        assert totals["host-in device-out"] != pytest.approx(totals["default"], rel=1e-6)


def test_preprocess_validation_names_the_tensor_and_the_fix() -> None:
    queue = run_passes(import_onnx(mobilenet_v2_block(seed=2)))
    base = fuse_all(queue, mp=8, precision=Precision.FP16)
    name_in, name_out = queue.inputs[0].name, queue.outputs[0]
    cases = [
        ({"nope": "cpu_priority"}, "neither a graph input nor a graph output"),
        ({name_in: "gpu_priority"}, "'gpu_priority' is not one of cpu_priority"),
    ]
    for preprocess, message in cases:
        with pytest.raises(PlanError, match=message):
            dataclasses.replace(base, preprocess=preprocess).validate(queue)
    unfused = dataclasses.replace(
        base, blocks=[dataclasses.replace(base.blocks[0], fuse=False)],
        preprocess={name_out: "mlu_priority"})
    with pytest.raises(PlanError, match=rf"preprocess '{name_out}': block 'block0' is not fused"):
        unfused.validate(queue)
    # GoogLeNet's module: four branches read the input.
    module = run_passes(import_onnx(googlenet_block(seed=2)))
    readers = [layer.name for layer in module.layers if module.inputs[0].name in layer.inputs]
    assert len(readers) == 4
    whole = fuse_all(module, mp=8, precision=Precision.FP16)
    mixed = dataclasses.replace(
        whole, blocks=[dataclasses.replace(whole.blocks[0],
                                           layer_precision={readers[1]: Precision.FP32})],
        preprocess={module.inputs[0].name: "cpu_priority"})
    with pytest.raises(PlanError, match="read by layers of different precisions"):
        mixed.validate(module)
    mixed.blocks[0].layer_precision = {readers[1]: Precision.INT8}  # stored as fp16 too
    mixed.validate(module)
    plan = dataclasses.replace(base, preprocess={name_in: "balance"})
    assert plan.to_dict()["preprocess"] == {name_in: "balance"}
    assert "preprocess" not in base.to_dict()
    assert type(plan).from_json(plan.to_json()).preprocess == {name_in: "balance"}


def test_balance_search_takes_each_tensors_cheaper_side() -> None:
    queue = run_passes(import_onnx(mobilenet_v2_block(seed=2)))
    fp32 = fuse_all(queue, mp=8)
    assert io_conversions(fp32, queue) == []  # fp32 I/O: nothing to convert
    plan, choices = with_balance(fuse_all(queue, mp=8, precision=Precision.FP16), queue)
    assert [c.tensor for c in choices] == [queue.inputs[0].name, queue.outputs[0]]
    for choice in choices:
        assert choice.cost == min(sum(choice.on_host), sum(choice.on_device))
        assert plan.preprocess[choice.tensor] == choice.strategy
    plan.validate(queue)


def test_channel_placement_session_wrapper_and_raw(tmp_path) -> None:
    model = mobilenet_v2_block(seed=2)
    queue = run_passes(import_onnx(model))
    base = fuse_all(queue, mp=1)
    placed = dataclasses.replace(base, channel=3)
    feeds = list(random_inputs(model, 0).values())
    oracle = DeviceModelOracle(queue)
    outputs, totals = {}, {}
    for name, plan, emit in (("free", base, "wrapper"), ("placed", placed, "wrapper"),
                             ("placed-raw", placed, "raw")):
        out = tmp_path / name
        path = tmp_path / f"{name}.json"
        path.write_text(plan.to_json())
        compile_model(model, out, plan=path, emit=emit)
        source = (out / "session.cpp").read_text()
        if name == "placed":
            assert "constexpr cnrtChannelType_t kChannel = CNRT_CHANNEL_TYPE_3;" in source
            assert "block.setChannel(kChannel);" in source
        if name == "placed-raw":
            assert "cnrtSetCurrentChannel(CNRT_CHANNEL_TYPE_3)" in source
        build_session(out)
        result = run_session(out, feeds)
        outputs[name] = result.outputs[0]
        totals[name] = float(re.search(r"total device time: ([0-9.]+) us",
                                       result.report).group(1))
        assert totals[name] == pytest.approx(oracle.plan_cost(plan), rel=1e-3, abs=0.1)
    for name in ("placed", "placed-raw"):
        assert np.array_equal(outputs[name], outputs["free"])
    assert totals["placed-raw"] == pytest.approx(totals["placed"], rel=1e-6)
    # A quarter of the DRAM bandwidth at MP 1: slower alone, as docs/command-line.md says.
    assert totals["placed"] > totals["free"]


def test_channel_validation() -> None:
    queue = run_passes(import_onnx(mobilenet_v2_block(seed=2)))
    with pytest.raises(PlanError, match="channel 4 is not a DDR channel"):
        dataclasses.replace(fuse_all(queue, mp=1), channel=4).validate(queue)
    with pytest.raises(PlanError, match="takes effect at MP 1 only, and no block has MP 1"):
        dataclasses.replace(fuse_all(queue, mp=8), channel=0).validate(queue)
    plan = dataclasses.replace(fuse_all(queue, mp=1), channel=0)
    plan.validate(queue)
    assert type(plan).from_json(plan.to_json()).channel == 0
    assert "channel" not in fuse_all(queue, mp=1).to_dict()


def test_runner_keeping_a_tensor_unfuses_and_drops_that_blocks_conversion_side() -> None:
    model = mobilenet_v2_block(seed=2)
    queue = run_passes(import_onnx(model))
    plan = _plans(queue)["host-in device-out"]
    feeds = list(random_inputs(model, 0).values())
    whole = PlanRunner(queue, plan).run(feeds)
    inspected = PlanRunner(queue, plan, keep=[queue.layers[2].output])
    assert np.array_equal(inspected.run(feeds)[queue.outputs[0]], whole[queue.outputs[0]])
    assert inspected.tensor(queue.layers[2].output).shape == tuple(
        queue.shape(queue.layers[2].output))
