"""Model (queue + plan) -> the files of an inference session: session.cpp, weights.bin,
CMakeLists.txt and plan.json. Output is deterministic: same model and plan, same bytes."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from paleozoic.codegen.environment import make_environment
from paleozoic.codegen.escape import Code, cpp_comment, cpp_string
from paleozoic.codegen.escape import cpp_ident as _escaped_ident
from paleozoic.codegen.names import cpp_ident
from paleozoic.codegen.raw import raw_context, raw_title
from paleozoic.codegen.scopes import section_comments
from paleozoic.codegen.weights import write_weights
from paleozoic.errors import UnsupportedModelError
from paleozoic.ir import FBlock, Layer, Model
from paleozoic.ir.memory import MemoryPlan, plan_memory
from paleozoic.ir.plan import PRECISIONS, PREPROCESS, Precision

from paleozoic.ops import KINDS
from paleozoic.ops.sparsity import sparsity_of
from paleozoic.version import __version__

logger = logging.getLogger(__name__)

# pz::Precision's enumerators (enums.h, generated from PRECISIONS): kFp32, kFp16, kInt8.
PRECISION_CPP = {p: f"pz::Precision::{PRECISIONS.cpp(p.value)}" for p in Precision}

POINTERS_PER_LINE = 6
# Arena places per line of the emitted memory plan ({&tensor, offset, bytes}).
PLACES_PER_LINE = 3
EMIT_FORMS = ("wrapper", "raw")


@dataclass
class LayerView:
    """What a layer template sees: names, C++ input expressions, attributes, weights."""

    layer: Layer
    ident: str
    inputs: list[str]
    input_pointers: list[str]
    weight_shapes: dict[str, tuple[int, ...]]
    macros: Any
    quantized: bool = False  # int8 parameters in weights.bin (setQuantization)
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)
    # In the SDK's sparse mode: the fraction of its filter's pairs that are zero; else None.
    zero_pairs: float | None = None
    section: str = ""  # the ONNX name scope whose section starts here (codegen.scopes)

    @property
    def name(self) -> str:
        return self.layer.name

    @property
    def attrs(self) -> dict[str, Any]:
        return self.layer.op.attrs

    @property
    def cpp_class(self) -> str:
        return KINDS[self.layer.kind].cpp_class

    def given(self, name: str) -> bool:
        """Whether the attribute differs from its kind's default, so the template spells it
        out: defaults are written once, in the kind's attributes dataclass (and the C++
        constructor's matching default arguments), never in a template."""
        field = next(f for f in dataclasses.fields(KINDS[self.layer.kind].attrs)
                     if f.name == name)
        value = self.attrs[name]
        if field.default is dataclasses.MISSING:
            return True
        if isinstance(value, (list, tuple)):
            return list(value) != list(field.default)
        return bool(value != field.default)

    @property
    def has_configure(self) -> bool:
        # A kind's configure macro may write nothing for some layers (no constant operand).
        return hasattr(self.macros, "configure") and bool(str(self.configure()))

    def weight(self, role: str) -> str:
        key = self.layer.weights.get(role)
        if key is None:
            if role in KINDS[self.layer.kind].optional_roles:
                return "nullptr"
            raise KeyError(f"layer {self.layer.name!r} has no {role!r} weight")
        shape = ", ".join(str(d) for d in self.weight_shapes[key])
        return Code(f"weights.get({cpp_string(key)}, {{{shape}}})")

    def construct(self) -> Code:
        return Code(str(self.macros.construct(self)).strip())

    def configure(self) -> Code:
        return Code(str(self.macros.configure(self)).strip())


@dataclass
class BlockView:
    name: str
    const: str
    fuse: bool
    mp: int
    precision: str  # the C++ enumerator, e.g. "pz::Precision::kInt8"
    summary: str
    pointer_lines: list[str]
    # (layer ident, C++ precision) of layers computed in another precision than the block
    layer_precision: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class TensorView:
    name: str
    ident: str
    shape: tuple[int, ...]
    expr: str
    pointer: str
    dtype: str = "float32"
    # Its load balance (Plan.preprocess) as the C++ statement's argument and a comment.
    preprocess: str = ""
    preprocess_note: str = ""


# Plan.preprocess strategy (PREPROCESS, whose members give the CNML enumerator) -> what the
# emitted line's comment says.
PREPROCESS_NOTES = {
    "cpu_priority": "the host converts it to and from the device dtype",
    "mlu_priority": "its block converts it on the device",
    "balance": "the SDK converts it on the side it prices lower",
}


@dataclass
class SessionViews:
    """What the session templates print of one compiled model: its I/O tensors, layers and
    blocks as C++ names and expressions, and its weights in file order."""

    inputs: list[TensorView]
    outputs: list[TensorView]
    layers: list[LayerView]
    blocks: list[BlockView]
    weights: list[tuple[str, Any]]
    unique_ident: Any            # name -> a C++ identifier not used yet
    used: set[str]
    # The blocks' runs as C++ statements with the run-time Ifs' if/else around their
    # branches; empty when the model has none (the session runs the block list in order).
    forward: list[Code] = field(default_factory=list)
    # The memory plan (paleozoic.ir.memory) and its arena's places as C++ lines.
    memory: MemoryPlan | None = None
    arena_lines: list[Code] = field(default_factory=list)
    arena_name: str = "arena"


def session_views(model: Model, env: Any, block_prefix: str = "",
                  taken: frozenset[str] = frozenset()) -> SessionViews:
    """The views of `model`; `block_prefix` starts its blocks' knob constants and `taken`
    are names the surrounding code uses (two sessions in a generation loop)."""
    queue = model.queue
    idents: dict[str, str] = {}
    used: set[str] = set(taken)

    def unique_ident(name: str) -> str:
        base = ident = cpp_ident(name)
        n = 2
        while ident in used:
            ident, n = f"{base}_{n}", n + 1
        used.add(ident)
        return ident

    expr: dict[str, str] = {}
    inputs = []
    for tensor in model.inputs:
        ident = unique_ident(tensor.name)
        expr[tensor.name] = ident
        inputs.append(TensorView(tensor.name, ident, tensor.shape, ident, f"&{ident}",
                                 tensor.dtype, *_preprocess(model, tensor.name)))
    macros: dict[str, Any] = {}
    views: list[LayerView] = []
    sparse = model.sparse_layers
    for layer, section in zip(queue.layers, section_comments(queue.layers)):
        ident = unique_ident(layer.name)
        idents[layer.name] = ident
        kind = KINDS[layer.kind]
        if kind.template not in macros:
            macros[kind.template] = env.get_template(f"layers/{kind.template}.cpp.j2").module
        ins = [expr[name] for name in layer.inputs]
        views.append(LayerView(
            layer=layer, ident=ident, inputs=ins, input_pointers=[f"&{e}" for e in ins],
            weight_shapes={key: tuple(queue.weights[key].shape)
                           for key in layer.weights.values()},
            macros=macros[kind.template], quantized=layer.name in model.quantization,
            input_shapes=[queue.shape(name) for name in layer.inputs],
            zero_pairs=(sparsity_of(queue.weights[layer.weights["weight"]],
                                    kind.weight_channel_axis).pairs
                        if layer.name in sparse else None), section=section))
        expr[layer.output] = f"{ident}.output()"
    outputs = [TensorView(t.name, expr[t.name], t.shape, expr[t.name], f"&{expr[t.name]}",
                          t.dtype, *_preprocess(model, t.name))
               for t in model.outputs]
    blocks = [_block_view(block, idents, block_prefix) for block in model.blocks]
    weight_order = [key for layer in queue.layers for key in layer.weights.values()]
    tensors = [(key, queue.weights[key]) for key in weight_order]
    for layer in queue.layers:
        if layer.name in model.quantization:
            tensors += model.quantization[layer.name].weight_tensors(layer.name)
    forward = forward_statements(model, blocks, expr) if queue.conditions else []
    memory = plan_memory(model)
    places = [f"{{&{expr[s.name]}, {s.offset}, {s.bytes}}}" for s in memory.tensors]
    arena_lines = [Code(", ".join(places[i:i + PLACES_PER_LINE]) +
                        ("," if i + PLACES_PER_LINE < len(places) else ""))
                   for i in range(0, len(places), PLACES_PER_LINE)]
    return SessionViews(inputs, outputs, views, blocks, tensors, unique_ident, used, forward,
                        memory, arena_lines, unique_ident("arena"))


def _preprocess(model: Model, tensor: str) -> tuple[str, str]:
    strategy = model.plan.preprocess.get(tensor)
    if not strategy:
        return ("", "")
    return (PREPROCESS.member(strategy).sdk, PREPROCESS_NOTES[strategy])


def forward_statements(model: Model, blocks: list[BlockView], expr: dict[str, str],
                       queue_expr: str = "device.queue()") -> list[Code]:
    """`blocks[i].run(queue);` per block in order, each run-time If's branches inside
    `if (pz::conditionHolds(condition)) { ... } else { ... }` (nested Ifs nested), two
    spaces of indent per level."""
    lines: list[Code] = []
    open_: list[tuple[str, bool]] = []  # the branches the current line is inside
    for i, (block, view) in enumerate(zip(model.blocks, blocks)):
        branch = block.layers[0].branch
        common = 0
        while common < min(len(open_), len(branch)) and open_[common] == branch[common]:
            common += 1
        flip = (common < len(open_) and common < len(branch)
                and open_[common][0] == branch[common][0])  # then -> else of one If
        while len(open_) > common + flip:
            open_.pop()
            lines.append(Code("  " * len(open_) + "}"))
        if flip:
            open_[common] = branch[common]
            lines.append(Code("  " * common + "} else {"))
            common += 1
        for name, taken in branch[common:]:
            test = f"pz::conditionHolds({expr[model.queue.conditions[name]]})"
            lines.append(Code("  " * len(open_) + f"if ({test if taken else '!' + test}) {{"
                              f"  // If {cpp_comment(name)}: its "
                              f"{'then' if taken else 'else'} branch"))
            open_.append((name, taken))
        lines.append(Code("  " * len(open_) + f"blocks[{i}].run({queue_expr});  // "
                          f"{view.name}: {cpp_comment(view.summary)}"))
    while open_:
        open_.pop()
        lines.append("  " * len(open_) + "}")
    return lines


def session_files(model: Model, title: str, emit: str = "wrapper",
                  ) -> tuple[dict[str, str], list[tuple[str, Any]]]:
    """The text files of the session and the (name, array) list for weights.bin.

    emit="wrapper" writes the session over the runtime wrapper (pz::Layer, pz::Block);
    emit="raw" writes the same session as direct CNML/CNRT calls (codegen/raw.py)."""
    if emit not in EMIT_FORMS:
        raise ValueError(f"unknown emission form {emit!r}; choose one of {', '.join(EMIT_FORMS)}")
    env = make_environment()
    queue = model.queue
    v = session_views(model, env)
    host = [layer.name for layer in queue.layers if KINDS[layer.kind].host]
    if emit == "raw" and host:
        raise UnsupportedModelError(
            f"the raw CNML form (--emit raw) prints SDK calls only, and layer {host[0]!r} "
            f"({len(host)} host layer(s) in all) computes on the host; emit the wrapper form")
    if emit == "raw":
        # The raw form names its own variables; start again from the same reserved set.
        v.used.clear()
        raw = raw_context(model, v.unique_ident, v.blocks)
        title = raw_title(title)

    context = dict(
        title=title, version=__version__, source=Path(queue.source).name,
        ir_version=model.ir_version, opset=model.opset.opset_version,
        strategy=model.plan.strategy, num_layers=len(queue.layers),
        num_weights=len(v.weights), weights_id="{{WEIGHTS_ID}}", inputs=v.inputs,
        outputs=v.outputs, layers=v.layers, blocks=v.blocks, forward=v.forward,
        memory=v.memory, arena_lines=v.arena_lines, arena_name=v.arena_name,
        close_weights=True, data_parallelism=model.data_parallelism, channel=model.channel,
        stages=_stage_views(model),
    )
    if emit == "raw":
        context.update(raw)
    else:
        context["body"] = Code(env.get_template("session_body.cpp.j2").render(context))
    template = "raw/session.cpp.j2" if emit == "raw" else "session.cpp.j2"
    files = {
        "session.cpp": env.get_template(template).render(context),
        "CMakeLists.txt": env.get_template("CMakeLists.txt.j2").render(
            title=title, version=__version__, project=title,
            runtime_version=".".join(__version__.split(".")[:2])),
        "plan.json": model.plan.to_json(),
        "session.json": _manifest(model),
    }
    return files, v.weights


@dataclass
class StageView:
    name: str
    pointers: str  # "&blocks[3], &blocks[4]"


def _stage_views(model: Model) -> list[StageView]:
    index = {block.name: i for i, block in enumerate(model.blocks)}
    return [StageView(f"stage{number}", ", ".join(f"&blocks[{index[name]}]" for name in stage))
            for number, stage in enumerate(model.stages)]


def _manifest(model: Model) -> str:
    """Inputs and outputs of the session, for tools that feed it and read its results."""
    onnx_outputs = getattr(model.queue, "onnx_output_names", [])
    onnx_inputs = getattr(model.queue, "onnx_input_names", [])
    data = {
        "source": Path(model.queue.source).name,
        "source_path": model.queue.source_path,
        "inputs": [{"name": t.name, "onnx_name": onnx_inputs[i] if i < len(onnx_inputs)
                    else t.name, "shape": list(t.shape), "dtype": t.dtype}
                   for i, t in enumerate(model.inputs)],
        "outputs": [{"name": t.name, "onnx_name": onnx_outputs[i] if i < len(onnx_outputs)
                     else t.name, "shape": list(t.shape), "dtype": t.dtype}
                    for i, t in enumerate(model.outputs)],
    }
    data["memory"] = plan_memory(model).to_dict()
    if model.queue.input_values:  # graph inputs the session has as constants
        data["input_values"] = {name: {"values": value.reshape(-1).tolist(),
                                       "shape": list(value.shape), "dtype": str(value.dtype)}
                                for name, value in model.queue.input_values.items()}
    return json.dumps(data, indent=2) + "\n"


def _block_view(block: FBlock, idents: dict[str, str], prefix: str = "") -> BlockView:
    pointers = [f"&{idents[layer.name]}" for layer in block.layers]
    lines = [", ".join(pointers[i:i + POINTERS_PER_LINE])
             for i in range(0, len(pointers), POINTERS_PER_LINE)]
    lines = [line + ("," if i < len(lines) - 1 else "") for i, line in enumerate(lines)]
    first, last = block.layers[0].name, block.layers[-1].name
    span = first if first == last else f"{first} .. {last}"
    summary = f"{span} ({len(block.layers)} layer{'s' if len(block.layers) > 1 else ''})"
    const = "".join(part.capitalize() for part in re.split(r"[_\W]+", block.name) if part)
    overrides = [(idents[name], PRECISION_CPP[p]) for name, p in block.layer_precision.items()]
    return BlockView(block.name, prefix + (_escaped_ident(const) if const else "Block"),
                     block.fuse, block.mp, PRECISION_CPP[block.precision], summary, lines,
                     overrides)


def write_session(model: Model, folder: Path, title: str,
                  emit: str = "wrapper") -> dict[str, Path]:
    """Writes the session into `folder` (which must exist) and returns the paths."""
    files, weights = session_files(model, title, emit)
    paths = {"weights.bin": folder / "weights.bin"}
    weights_id = write_weights(paths["weights.bin"], weights)
    files["session.cpp"] = files["session.cpp"].replace("{{WEIGHTS_ID}}", weights_id)
    for name, text in files.items():
        path = folder / name
        path.write_text(text)
        paths[name] = path
    logger.info("wrote %s (%d lines)", paths["session.cpp"],
                files["session.cpp"].count("\n"))
    return paths
