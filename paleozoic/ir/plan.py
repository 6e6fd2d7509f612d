"""A Plan cuts the LayerQueue into F-Blocks, each with an MP and a fuse switch.

Plans are plain data: they serialise to plan.json and back without loss, so people and
scripts can edit them, and the framework validates them against the queue.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from enum import Enum
from typing import Any

from paleozoic.ir.file_format import format_problem
from paleozoic.ir.layer import LayerQueue
from paleozoic.ops.enums import CppEnum, Member
from paleozoic.ops.sparsity import sparse_refusal

PLAN_FORMAT = "paleozoic-plan"
PLAN_VERSION = 1
MP_MIN, MP_MAX = 1, 32
BLOCK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class Precision(str, Enum):
    """What a block computes in. fp16 and int8 store activations in binary16 between ops;
    int8 runs the multiplying ops (conv, fully connected) on int8 operands and the rest in
    fp16, as the MLU-100 does. The value is what plan.json and the CLI spell."""

    FP32 = "fp32"
    FP16 = "fp16"
    INT8 = "int8"

    @classmethod
    def parse(cls, value: object, where: str) -> Precision:
        try:
            return cls(value)
        except ValueError:
            raise PlanError(f"{where}: precision {value!r} is not one of "
                            f"{', '.join(p.value for p in cls)}") from None


# pz::Precision (enums.h), with the names C++ code spells: precisionName, parsePrecision.
PRECISIONS = CppEnum("Precision", "", "precision", tuple(
    Member(p.value) for p in Precision),
    name_function="precisionName", parse_function="parsePrecision")


class PlanError(ValueError):
    """A plan that does not fit its model; the message names the block and the fix."""


@dataclass
class PlannedBlock:
    name: str
    layers: list[str]
    mp: int
    fuse: bool = True
    precision: Precision = Precision.FP32
    # Layers computed in another precision than their block's (layer name -> precision).
    layer_precision: dict[str, Precision] = field(default_factory=dict)
    # Layers in the SDK's sparse mode (cnmlSparseMode_t), which skips their filters' zero
    # pairs: convolutions without groups and fully connected layers.
    sparse: list[str] = field(default_factory=list)

    def precision_of(self, layer: str) -> Precision:
        return self.layer_precision.get(layer, self.precision)


@dataclass
class Plan:
    blocks: list[PlannedBlock]
    strategy: str = "custom"
    model: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    # Groups of frames every forward runs at once (MLU100 data parallelism, the forwards'
    # cnrtInvokeFuncParam_t), each group on its block's MP cores: dp x MP <= 32 per block and
    # dp divides the batch. 1: the whole batch on each block's cores.
    data_parallelism: int = 1
    # Stages (Table 4's concatenation of independent layers): runs of consecutive blocks,
    # by name, that run at once, each on cores of its own (their MPs x data_parallelism sum
    # to at most 32); none reads what another of its stage writes. A stage's blocks together
    # cover a contiguous run of the queue, each taking some of its layers (one branch of an
    # Inception module, say), in queue order.
    stages: list[list[str]] = field(default_factory=list)
    # Load balance (Table 4; CNML's data-preprocess strategy): graph input or output name ->
    # where its float32 <-> device-dtype conversion runs, one of PREPROCESS_STRATEGIES:
    # "cpu_priority" (the host casts), "mlu_priority" (the fused block's edge casts on the
    # device), "balance" (the SDK picks the side its model prices lower). Unnamed tensors
    # keep the default: an input cast by a cast layer in its block, an output on the host.
    preprocess: dict[str, str] = field(default_factory=dict)
    # Load balance's channel placement (cnrtSetCurrentChannel): the DDR channel (0..3) the
    # session's forwards are issued on, which takes effect at MP 1 (those blocks' memory on
    # that channel only). None: no placement.
    channel: int | None = None

    # ---- serialisation -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": PLAN_FORMAT,
            "version": PLAN_VERSION,
            "model": self.model,
            "strategy": self.strategy,
            "notes": self.notes,
        }
        if self.data_parallelism != 1:
            out["data_parallelism"] = self.data_parallelism
        if self.stages:
            out["stages"] = [list(stage) for stage in self.stages]
        if self.preprocess:
            out["preprocess"] = dict(self.preprocess)
        if self.channel is not None:
            out["channel"] = self.channel
        out["blocks"] = [_block_dict(b) for b in self.blocks]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "plan") -> Plan:
        problem = format_problem(data, source, PLAN_FORMAT, PLAN_VERSION, "plan")
        if problem:
            raise PlanError(problem)
        blocks = []
        for i, raw in enumerate(data.get("blocks", [])):
            where = f"{source}: block {i} ({raw.get('name', '?')!r})"
            try:
                overrides = raw.get("layer_precision", {})
                if not isinstance(overrides, dict):
                    raise PlanError(f"{where}: layer_precision must map layer names to "
                                    f"precisions")
                sparse = raw.get("sparse", [])
                if not isinstance(sparse, list) or not all(isinstance(x, str) for x in sparse):
                    raise PlanError(f"{where}: sparse must be a list of the block's layer "
                                    f"names")
                blocks.append(PlannedBlock(
                    name=str(raw["name"]), layers=[str(x) for x in raw["layers"]],
                    mp=raw["mp"], fuse=raw.get("fuse", True),
                    precision=Precision.parse(raw.get("precision", "fp32"), where),
                    layer_precision={str(k): Precision.parse(v, f"{where}, layer {k!r}")
                                     for k, v in overrides.items()},
                    sparse=list(sparse)))
            except KeyError as missing:
                raise PlanError(f"{where}: missing field {missing}") from None
            if not isinstance(blocks[-1].mp, int) or isinstance(blocks[-1].mp, bool):
                raise PlanError(f"{where}: mp must be an integer in {MP_MIN}..{MP_MAX}")
            if not isinstance(blocks[-1].fuse, bool):
                raise PlanError(f"{where}: fuse must be true or false")
        dp = data.get("data_parallelism", 1)
        if not isinstance(dp, int) or isinstance(dp, bool):
            raise PlanError(f"{source}: data_parallelism must be an integer in "
                            f"{MP_MIN}..{MP_MAX}")
        stages = data.get("stages", [])
        if not isinstance(stages, list) or not all(
                isinstance(stage, list) and all(isinstance(n, str) for n in stage)
                for stage in stages):
            raise PlanError(f"{source}: stages must be a list of lists of block names")
        preprocess = data.get("preprocess", {})
        if not isinstance(preprocess, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in preprocess.items()):
            raise PlanError(f"{source}: preprocess must map graph input and output names to "
                            f"one of {', '.join(PREPROCESS_STRATEGIES)}")
        return cls(blocks=blocks, strategy=str(data.get("strategy", "custom")),
                   model=str(data.get("model", "")), notes=dict(data.get("notes", {})),
                   data_parallelism=dp, stages=[list(stage) for stage in stages],
                   preprocess=dict(preprocess), channel=data.get("channel"))

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> Plan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise PlanError(f"{source}: not valid JSON ({err})") from None
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as err:
            raise PlanError(f"{path}: cannot read plan ({err.strerror})") from None
        return cls.from_json(text, str(path))

    def save(self, path: str | Path) -> Path:
        """Writes plan.json at `path` (whole or not at all: through a file beside it)."""
        path = Path(path)
        staging = path.with_name(path.name + ".tmp")
        staging.write_text(self.to_json())
        staging.replace(path)
        return path

    # ---- validation --------------------------------------------------------------
    def validate(self, queue: LayerQueue, fusible: dict[str, bool] | None = None) -> None:
        """Checks blocks are contiguous, cover every layer once, fusible, MP in range."""
        order = [layer.name for layer in queue.layers]
        position = {name: i for i, name in enumerate(order)}
        kinds = {layer.name: layer.kind for layer in queue.layers}
        by_name = {layer.name: layer for layer in queue.layers}
        seen: dict[str, str] = {}
        names: set[str] = set()
        expected = 0
        self._check_stage_shape(queue)
        by_block = {block.name: block for block in self.blocks}
        stage_blocks = {name: [by_block[n] for n in stage if n in by_block]
                        for stage in self.stages for name in stage}
        if not self.blocks:
            raise PlanError("plan has no blocks; every layer must belong to one block")
        _check_data_parallelism(self.data_parallelism, queue)
        for block in self.blocks:
            where = f"block {block.name!r}"
            if block.name in names:
                raise PlanError(f"{where}: block name used twice; names must be unique")
            names.add(block.name)
            if not BLOCK_NAME.fullmatch(block.name):
                # The name is pasted into the session as a string and a constant's name.
                raise PlanError(f"{where}: name must be a C++ identifier of ASCII letters, "
                                f"digits and underscores, at most 64 characters (e.g. "
                                f"'block3'); rename the block")
            if not MP_MIN <= block.mp <= MP_MAX:
                raise PlanError(f"{where}: mp {block.mp} is outside {MP_MIN}..{MP_MAX}")
            if block.mp * self.data_parallelism > MP_MAX:
                raise PlanError(f"{where}: mp {block.mp} x data_parallelism "
                                f"{self.data_parallelism} needs {block.mp * self.data_parallelism}"
                                f" cores, the device has {MP_MAX}; lower the block's mp to at "
                                f"most {MP_MAX // self.data_parallelism} or the plan's "
                                f"data_parallelism")
            if not block.layers:
                raise PlanError(f"{where}: has no layers")
            for name in block.layer_precision:
                if name not in block.layers:
                    raise PlanError(f"{where}: layer_precision names {name!r}, which is not "
                                    f"a layer of this block")
            for name in block.sparse:
                if name not in block.layers:
                    raise PlanError(f"{where}: sparse names {name!r}, which is not a layer of "
                                    f"this block")
                if block.sparse.count(name) > 1:
                    raise PlanError(f"{where}: sparse names {name!r} twice")
                refusal = sparse_refusal(by_name[name]) if name in by_name else None
                if refusal:
                    raise PlanError(f"{where}: layer {name!r} cannot be sparse: {refusal}; "
                                    f"remove it from the block's sparse list")
            for name in block.layers:
                if name not in position:
                    raise PlanError(f"{where}: layer {name!r} is not in the model "
                                    f"(see `paleozoic inspect` for the layer names)")
                if name in seen:
                    raise PlanError(f"{where}: layer {name!r} is already in block "
                                    f"{seen[name]!r}; each layer belongs to one block")
                seen[name] = block.name
            stage = stage_blocks.get(block.name)
            if stage is None:
                for name in block.layers:
                    if position[name] != expected:
                        raise PlanError(
                            f"{where}: layer {name!r} is out of order; blocks must be "
                            f"contiguous runs of the queue (expected {order[expected]!r})")
                    expected += 1
            elif block.name == stage[0].name:
                # A stage covers a contiguous run; each of its blocks takes some of it (a
                # branch), in queue order.
                run = [name for b in stage for name in b.layers if name in position]
                want = order[expected:expected + len(run)]
                if sorted(run, key=position.__getitem__) != want:
                    raise PlanError(f"{where}: the blocks of its stage must together cover a "
                                    f"contiguous run of the queue from {order[expected]!r}")
                for b in stage:
                    at = [position[name] for name in b.layers if name in position]
                    if at != sorted(at):
                        raise PlanError(f"block {b.name!r}: its layers must be in queue order")
                expected += len(run)
            branches = {by_name[name].branch for name in block.layers if name in by_name}
            if len(branches) > 1:
                raise PlanError(f"{where}: its layers run in different branches of a "
                                f"run-time If ({_branch_text(min(branches))} and "
                                f"{_branch_text(max(branches))}); the session runs a branch's "
                                f"blocks inside an if, so cut the block where the branch starts "
                                f"or ends")
            if block.fuse and fusible is not None and len(block.layers) > 1:
                for name in block.layers:
                    if not fusible.get(kinds[name], True):
                        raise PlanError(f"{where}: layer {name!r} ({kinds[name]}) cannot "
                                        f"join a fusion op; put it in a block of its own")
        if expected != len(order):
            raise PlanError(f"plan covers {expected} of {len(order)} layers; missing from "
                            f"{order[expected]!r} on")
        self._check_stages(queue)
        if self.channel is not None:
            if (not isinstance(self.channel, int) or isinstance(self.channel, bool)
                    or not 0 <= self.channel < DDR_CHANNELS):
                raise PlanError(f"channel {self.channel!r} is not a DDR channel: give one of "
                                f"0..{DDR_CHANNELS - 1}, or remove it")
            if all(block.mp != 1 for block in self.blocks):
                raise PlanError(f"channel {self.channel}: a channel placement takes effect at "
                                f"MP 1 only, and no block has MP 1; remove it or give a block "
                                f"MP 1")
            per_channel = MP_MAX // DDR_CHANNELS
            if self.data_parallelism > per_channel:
                raise PlanError(f"channel {self.channel}: its MP-1 blocks run on the channel's "
                                f"{per_channel} cores, too few for data_parallelism "
                                f"{self.data_parallelism}; lower it to at most {per_channel} "
                                f"or remove the channel")
        for tensor, strategy in self.preprocess.items():
            refusal = preprocess_refusal(self, queue, tensor, fusible)
            if strategy not in PREPROCESS_STRATEGIES:
                refusal = (f"strategy {strategy!r} is not one of "
                           f"{', '.join(PREPROCESS_STRATEGIES)}")
            if refusal:
                raise PlanError(f"preprocess {tensor!r}: {refusal}; change or remove the "
                                f"entry")

    def _check_stage_shape(self, queue: LayerQueue) -> None:
        index = {block.name: i for i, block in enumerate(self.blocks)}
        staged: dict[str, int] = {}
        for number, stage in enumerate(self.stages):
            where = f"stage {number} ({', '.join(stage)})"
            if len(stage) < 2:
                raise PlanError(f"{where}: a stage runs two or more blocks at once")
            for name in stage:
                if name not in index:
                    raise PlanError(f"{where}: names block {name!r}, which is not in the plan")
                if name in staged:
                    raise PlanError(f"{where}: block {name!r} is already in stage "
                                    f"{staged[name]}; a block runs in one stage")
                staged[name] = number
            positions = [index[name] for name in stage]
            if positions != list(range(positions[0], positions[0] + len(stage))):
                raise PlanError(f"{where}: its blocks must be consecutive in the plan, in plan "
                                f"order")
            if queue.conditions:
                raise PlanError(f"{where}: the model has a run-time If, whose branches run "
                                f"their blocks inside an if; stages are not supported there")

    def _check_stages(self, queue: LayerQueue) -> None:
        index = {block.name: i for i, block in enumerate(self.blocks)}
        by_name = {layer.name: layer for layer in queue.layers}
        for number, stage in enumerate(self.stages):
            where = f"stage {number} ({', '.join(stage)})"
            positions = [index[name] for name in stage]
            cores = sum(self.blocks[i].mp for i in positions) * self.data_parallelism
            if cores > MP_MAX:
                raise PlanError(f"{where}: its blocks' MPs (x data_parallelism "
                                f"{self.data_parallelism}) need {cores} cores, the device has "
                                f"{MP_MAX}; lower their mp so that they sum to at most "
                                f"{MP_MAX // self.data_parallelism}")
            written: dict[str, str] = {}
            for i in positions:
                for name in self.blocks[i].layers:
                    written[by_name[name].output] = self.blocks[i].name
            for i in positions:
                for name in self.blocks[i].layers:
                    for tensor in by_name[name].inputs:
                        writer = written.get(tensor)
                        if writer is not None and writer != self.blocks[i].name:
                            raise PlanError(
                                f"{where}: block {self.blocks[i].name!r} reads {tensor!r}, "
                                f"which block {writer!r} of the same stage writes; blocks of a "
                                f"stage run at once, so they must be independent")


# Plan.preprocess's strategies, as the SDK's cnmlDataPreprocessStrategy_t spells them.
PREPROCESS = CppEnum("PreprocessStrategy", "cnmlDataPreprocessStrategy_t",
                     "data-preprocess strategy", (
    Member("cpu_priority", sdk="CNML_CPU_PRIORITY"),
    Member("mlu_priority", sdk="CNML_MLU_PRIORITY"),
    Member("balance", sdk="CNML_CPU_MLU_BALANCE"),
))
PREPROCESS_STRATEGIES = PREPROCESS.values
DDR_CHANNELS = 4  # the MLU100's, each serving 8 cores (cnrtChannelType_t 0..3)


def preprocess_refusal(plan: Plan, queue: LayerQueue, tensor: str,
                       fusible: dict[str, bool] | None = None) -> str | None:
    """Why `tensor` cannot take a data-preprocess strategy under `plan`, or None. The SDK
    takes one on a fusion op's I/O only: a float graph input whose readers are all in fused
    blocks storing one dtype, or a graph output a fused block writes and no block reads."""
    block_of = {name: block for block in plan.blocks for name in block.layers}
    readers = [layer for layer in queue.layers if tensor in layer.inputs]
    inputs = {info.name: info for info in queue.inputs}
    if tensor in inputs:
        if inputs[tensor].dtype != "float32":
            return (f"the input holds {inputs[tensor].dtype} values, which are never "
                    f"converted")
        touching = readers
    elif tensor in queue.outputs:
        if readers:
            return (f"block {block_of[readers[0].name].name!r} reads it too; a strategy "
                    f"applies to a graph output no block reads")
        touching = [layer for layer in queue.layers if layer.output == tensor]
    else:
        return "it is neither a graph input nor a graph output"
    for layer in touching:
        block = block_of.get(layer.name)
        if block is None:
            continue  # the plan's coverage check names the missing layer
        if not block.fuse or (fusible is not None and not fusible.get(layer.kind, True)):
            return (f"block {block.name!r} is not fused (a strategy is for a fusion op's I/O "
                    f"only); fuse the block")
    stored = {block_of[layer.name].precision_of(layer.name) == Precision.FP32
              for layer in readers if layer.name in block_of}
    if len(stored) > 1:
        return "it is read by layers of different precisions; give them one"
    return None


def with_data_parallelism(plan: Plan, data_parallelism: int) -> Plan:
    """The plan at `data_parallelism`, each block's MP lowered to what fits beside it
    (data parallelism x MP <= 32)."""
    cap = max(1, MP_MAX // max(1, data_parallelism))
    blocks = [dataclasses.replace(block, mp=min(block.mp, cap)) for block in plan.blocks]
    return dataclasses.replace(plan, blocks=blocks, data_parallelism=data_parallelism)


def batch_of(queue: LayerQueue) -> int:
    """The frames one forward runs: the leading axis of the first input (1 without one)."""
    shape = queue.inputs[0].shape if queue.inputs else ()
    return int(shape[0]) if shape else 1


def data_parallelism_choices(queue: LayerQueue) -> list[int]:
    """The data parallelisms a plan for `queue` may take: those up to the device's cores
    whose groups of frames every layer's inputs split into (data_parallelism_refusal)."""
    return [dp for dp in range(1, MP_MAX + 1) if data_parallelism_refusal(dp, queue) is None]


def _check_data_parallelism(dp: int, queue: LayerQueue) -> None:
    if not MP_MIN <= dp <= MP_MAX:
        raise PlanError(f"data_parallelism {dp} is outside {MP_MIN}..{MP_MAX}")
    refusal = data_parallelism_refusal(dp, queue)
    if refusal:
        raise PlanError(refusal)


def data_parallelism_refusal(dp: int, queue: LayerQueue) -> str | None:
    """Why the SDK would refuse data parallelism dp on this queue's forwards (None: it
    would not): each op's first input must split into dp groups of frames along its leading
    axis, and its other inputs too unless broadcast over it (leading axis 1)."""
    if dp == 1:
        return None
    from paleozoic.ops import KINDS
    from paleozoic.ops.recurrent import FAMILY as RECURRENT_KINDS

    batch = batch_of(queue)
    if batch % dp:
        name = queue.inputs[0].name if queue.inputs else "?"
        return (f"data_parallelism {dp} does not divide the batch {batch} (input {name!r}); "
                f"each group of frames takes batch / data_parallelism frames: use a divisor "
                f"of the batch, or compile with another --batch")
    for layer in queue.layers:
        if KINDS[layer.kind] in RECURRENT_KINDS:
            return (f"layer {layer.name!r} ({layer.kind}) runs its steps as ops over slices "
                    f"of the sequence, which data parallelism would split along time, not "
                    f"frames; use data_parallelism 1 for this model")
        for index, name in enumerate(layer.inputs):
            info = queue.tensors.get(name)
            lead = int(info.shape[0]) if info is not None and info.shape else 1
            if lead % dp and (index == 0 or lead != 1):
                return (f"layer {layer.name!r} reads {name!r} with leading axis {lead}, which "
                        f"data_parallelism {dp} does not divide (the SDK splits every op's "
                        f"inputs into groups of frames along it); use data_parallelism 1")
    return None


def _branch_text(branch: tuple[tuple[str, bool], ...]) -> str:
    if not branch:
        return "outside any If"
    return " > ".join(f"{name} {'then' if taken else 'else'}" for name, taken in branch)


def _block_dict(block: PlannedBlock) -> dict[str, Any]:
    out: dict[str, Any] = {"name": block.name, "mp": block.mp, "fuse": block.fuse,
                           "precision": block.precision.value}
    if block.layer_precision:
        out["layer_precision"] = {k: v.value for k, v in block.layer_precision.items()}
    if block.sparse:
        out["sparse"] = list(block.sparse)
    out["layers"] = list(block.layers)
    return out


# The plan's knobs that enums.h declares (paleozoic.codegen.cpp_enums), before the layer
# attributes' (paleozoic.ops.ENUMS).
ENUMS = (PRECISIONS, PREPROCESS)
