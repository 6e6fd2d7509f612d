"""The memory plan (paleozoic.ir.memory): slots alive at the same step never overlap, each
holds its tensor, the arena stays within 10% of the lower bound on the zoo models under
per-layer and fuse-all, a fused block's interior takes no slot, graph outputs live to the
end and graph inputs through the whole run; the emitted session places its tensors in one
arena and gives the same outputs, bit for bit, as the same session with the arena edited
out (every tensor its own buffer), and again when it runs repeatedly."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic.ir import Model
from paleozoic.ir.memory import ALIGNMENT, plan_memory
from paleozoic.pipeline import build_session, compile_model, load_queue, resolve_plan, run_session
from helpers import zoo_model
from paleozoic.accuracy.inputs import random_inputs


def _model(name: str, plan: str) -> Model:
    queue = load_queue(zoo_model(name))
    return Model.build(queue, resolve_plan(queue, plan))


@pytest.mark.parametrize("plan", ["per-layer", "fuse-all"])
@pytest.mark.parametrize("name", ["squeezenet", "inception_v1", "densenet121"])
def test_slots_never_overlap_while_alive_and_the_arena_is_near_the_bound(name, plan) -> None:
    model = _model(name, plan)
    memory = plan_memory(model)
    queue = model.queue
    for s in memory.tensors:
        need = int(np.prod(queue.shape(s.name))) * 4
        assert s.bytes >= need and s.offset % ALIGNMENT == 0
        assert s.offset + s.bytes <= memory.arena_bytes
    slots = list(memory.tensors)
    for i, a in enumerate(slots):
        for b in slots[i + 1:]:
            if a.first <= b.last and b.first <= a.last:  # alive together
                assert a.offset + a.bytes <= b.offset or b.offset + b.bytes <= a.offset, (a, b)
    assert memory.lower_bound_bytes <= memory.arena_bytes <= 1.1 * memory.lower_bound_bytes
    for name_out in queue.outputs:
        assert memory.slot(name_out).last == memory.steps - 1
    for info in queue.inputs:  # loaded once, read by every run (-r): never written over
        assert (memory.slot(info.name).first, memory.slot(info.name).last) == \
            (-1, memory.steps - 1)


def test_a_fused_blocks_interior_takes_no_slot() -> None:
    model = _model("squeezenet", "fuse-all")
    memory = plan_memory(model)
    placed = {s.name for s in memory.tensors}
    fused = [b for b in model.blocks if b.fuse and len(b.layers) > 1]
    assert fused
    readers: dict[str, set[str]] = {}
    block_of = {layer.name: b.name for b in model.blocks for layer in b.layers}
    for layer in model.queue.layers:
        for name in layer.inputs:
            readers.setdefault(name, set()).add(block_of[layer.name])
    for block in fused:
        for layer in block.layers:
            outside = readers.get(layer.output, set()) - {block.name}
            kept = bool(outside) or layer.output in model.queue.outputs
            assert (layer.output in placed) == kept, layer.output
    per_layer = plan_memory(_model("squeezenet", "per-layer"))
    assert memory.arena_bytes < per_layer.arena_bytes


def test_the_session_runs_in_its_arena_bit_for_bit(tmp_path) -> None:
    model = zoo_model("squeezenet")
    feeds = list(random_inputs(model, 0).values())
    out = compile_model(model, tmp_path / "planned", plan="per-layer")
    source = (out / "session.cpp").read_text()
    memory = plan_memory(_model("squeezenet", "per-layer"))
    assert f"const pz::Arena arena{{{memory.arena_bytes}, {{" in source
    build_session(out)
    planned = run_session(out, feeds).outputs
    # Runs after the first read the same inputs: nothing wrote over their slots.
    for a, b in zip(planned, run_session(out, feeds, repeat=3).outputs):
        np.testing.assert_array_equal(a, b)
    # The same session with the arena edited out: every tensor allocates its own buffer.
    start = source.index("  // ---- Memory:")
    end = source.index("  }};\n", start) + len("  }};\n")
    edited = source[:start] + source[end:]
    assert edited.count("&arena") == 1  # -s N's contexts repeat its layout: none now
    (out / "session.cpp").write_text(edited.replace("&arena", "nullptr"))
    build_session(out)
    own = run_session(out, feeds).outputs
    for a, b in zip(planned, own):
        np.testing.assert_array_equal(a, b)


def test_the_device_footprint_counts_weights_in_each_blocks_precision() -> None:
    from paleozoic.ir.plan import Precision
    from paleozoic.pipeline import with_precision

    queue = load_queue(zoo_model("squeezenet"))
    fp32 = plan_memory(Model.build(queue, resolve_plan(queue, "fuse-all")))
    fp16 = plan_memory(Model.build(queue, with_precision(resolve_plan(queue, "fuse-all"),
                                                         Precision.FP16)))
    assert fp32.device_weights_bytes == fp32.weights_bytes
    assert fp16.device_weights_bytes * 2 == fp16.weights_bytes
    assert fp16.device_bytes == fp16.device_weights_bytes + fp16.arena_bytes
