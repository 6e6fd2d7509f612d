"""The session's memory plan: when each tensor is alive, and where it sits in one arena.

Steps are what the session runs one after another: a fused block is one step (the SDK owns
its interior tensors, which take no arena space), any other block one step per layer, and a
stage of blocks that run at once one step. A
tensor takes a slot from the step that writes it to the last step that reads it (graph
outputs: to the end). Graph inputs hold theirs for the whole run: they are loaded once and
read again by every run that follows (`-r`, a server re-running the session). Slots are
placed greedily, largest first, each at the lowest offset where it overlaps no slot alive at
the same time (TFLite's "greedy by size" and onnxruntime's planner do the same); the lower
bound is the largest total of the slots alive at one step, which no placement can beat.
Sizes are float32's (a tensor an fp16 block writes uses half its slot), each rounded up to
ALIGNMENT.

Integer tensors the host layers keep on the host (int64, uint8) take no device memory.

The device footprint is what the accelerator's DDR must hold: the weights in each block's
precision (fp16 two bytes a value, int8 one: filters dominate) and the arena.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from paleozoic.ir.model import Model
from paleozoic.ir.plan import Precision

# Every slot starts on a 64-byte boundary (a cache line; CNRT aligns its buffers so too).
ALIGNMENT = 64
# Element types with a device buffer, and their sizes.
_DEVICE_BYTES = {"float32": 4, "int32": 4}
# Bytes a weight value takes on the device in each precision.
_WEIGHT_BYTES = {Precision.FP32: 4, Precision.FP16: 2, Precision.INT8: 1}


@dataclass(frozen=True)
class Slot:
    name: str       # the queue tensor (a layer's output or a graph input)
    offset: int     # bytes from the arena's start
    bytes: int      # rounded up to ALIGNMENT
    first: int      # the step that writes it (-1: a graph input, written before step 0)
    last: int       # the last step that reads it


@dataclass(frozen=True)
class MemoryPlan:
    weights_bytes: int         # as weights.bin holds them (float32)
    arena_bytes: int
    lower_bound_bytes: int
    steps: int
    tensors: tuple[Slot, ...]
    device_weights_bytes: int  # in each block's precision on the device

    @property
    def device_bytes(self) -> int:
        """The device DDR the session needs: its weights as computed with, and the arena."""
        return self.device_weights_bytes + self.arena_bytes

    def to_dict(self) -> dict:
        return {"weights_bytes": self.weights_bytes, "arena_bytes": self.arena_bytes,
                "lower_bound_bytes": self.lower_bound_bytes, "steps": self.steps,
                "device_weights_bytes": self.device_weights_bytes,
                "device_bytes": self.device_bytes,
                "tensors": [asdict(s) for s in self.tensors]}

    def slot(self, name: str) -> Slot:
        for s in self.tensors:
            if s.name == name:
                return s
        raise KeyError(f"no slot for tensor {name!r}")


def lifetimes(model: Model) -> tuple[dict[str, tuple[int, int]], int]:
    """Each tensor that needs device memory -> (first, last) step, and the step count."""
    queue = model.queue
    step_of: dict[str, int] = {}          # layer output -> the step computing it
    fused_step: dict[str, int] = {}       # layer output -> its step, inside a fused block
    steps = 0
    # A stage's blocks run at once: everything they read or write is alive for the whole
    # stage, one step, so none of it shares bytes with another.
    stage_of = {name: number for number, stage in enumerate(model.stages) for name in stage}
    stage_step: dict[int, int] = {}
    for block in model.blocks:
        fused = block.fuse and len(block.layers) > 1
        if block.name in stage_of:
            number = stage_of[block.name]
            if number not in stage_step:
                stage_step[number] = steps
                steps += 1
            for layer in block.layers:
                step_of[layer.output] = stage_step[number]
                if fused:
                    fused_step[layer.output] = stage_step[number]
            continue
        for layer in block.layers:
            step_of[layer.output] = steps
            if fused:
                fused_step[layer.output] = steps
            else:
                steps += 1
        if fused:
            steps += 1
    reads: dict[str, int] = {}
    for layer in queue.layers:
        step = step_of[layer.output]
        for name in layer.inputs:
            if fused_step.get(name) == step:  # read inside the fused block that writes it
                continue
            reads[name] = max(reads.get(name, -1), step)
    outputs = set(queue.outputs)
    live: dict[str, tuple[int, int]] = {}
    for info in queue.inputs:
        if info.dtype in _DEVICE_BYTES:
            live[info.name] = (-1, max(steps - 1, 0))
    for layer in queue.layers:
        name = layer.output
        if queue.tensors[name].dtype not in _DEVICE_BYTES:
            continue
        if name in outputs:
            live[name] = (step_of[name], steps - 1)
        elif name in reads:
            live[name] = (step_of[name], reads[name])
        elif name not in fused_step:  # written and never read: still written somewhere
            live[name] = (step_of[name], step_of[name])
    return live, steps


def plan_memory(model: Model) -> MemoryPlan:
    queue = model.queue
    live, steps = lifetimes(model)
    sizes = {name: _aligned(int(np.prod(queue.tensors[name].shape)) *
                            _DEVICE_BYTES[queue.tensors[name].dtype])
             for name in live}
    # Ties go by the tensor's place in the model (inputs first), never by its name: the same
    # graph under other names gets the same arena.
    rank = {t.name: i - len(queue.inputs) for i, t in enumerate(queue.inputs)}
    rank.update((layer.output, i) for i, layer in enumerate(queue.layers))
    order = sorted(live, key=lambda n: (-sizes[n], live[n][0], rank.get(n, len(rank)), n))
    placed: list[Slot] = []
    for name in order:
        first, last = live[name]
        busy = sorted((s.offset, s.offset + s.bytes) for s in placed
                      if s.first <= last and first <= s.last)
        offset = _lowest_gap(busy, sizes[name])
        placed.append(Slot(name, offset, sizes[name], first, last))
    arena = max((s.offset + s.bytes for s in placed), default=0)
    lower = max((sum(sizes[n] for n, (a, b) in live.items() if a <= t <= b)
                 for t in range(-1, steps)), default=0)
    weights = sum(int(queue.weights[key].nbytes) for layer in queue.layers
                  for key in layer.weights.values())
    device_weights = sum(
        int(queue.weights[key].size) * _WEIGHT_BYTES[block.precision_of(layer.name)]
        for block in model.blocks for layer in block.layers for key in layer.weights.values())
    by_position = {layer.output: i for i, layer in enumerate(queue.layers)}
    ordered = sorted(placed, key=lambda s: (s.first, by_position.get(s.name, -1)))
    return MemoryPlan(weights, arena, lower, steps, tuple(ordered), device_weights)


def _lowest_gap(busy: list[tuple[int, int]], size: int) -> int:
    """The lowest offset where `size` bytes fit between the busy [start, end) ranges."""
    offset = 0
    for start, end in busy:
        if start - offset >= size:
            return offset
        offset = max(offset, end)
    return offset


def _aligned(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT
