"""`paleozoic compile MODEL --generate`: a decoder language model's generation loop in C++.

The model is one decode step with a KV cache as HuggingFace exports it (input_ids,
attention_mask, position_ids and past_* inputs; logits and present_* outputs, present =
past followed by this step's keys and values), with symbolic token and cache lengths.
CNML needs static shapes, so the cache is a window of `max_length` slots and the model is
compiled twice from the one file:

- the prefill: `prompt_length` tokens over a past of max_length - prompt_length empty,
  masked slots (the rest of a longer prompt, or a shorter prompt whole, goes through the
  decode step a token at a time: no padding, so no row of attention is all masked);
- the decode step: one token over a past of max_length - 1 slots.

Each step's present fills the whole window; the next step's past is its slots 1..end (the
oldest slot, empty while the window has room, drops out). Both sessions read one weights
file. The emitted generate.cpp runs the prefill, then the decode step in a loop, greedy or
top-k sampling with a seed, and reports time to first token and tokens per second."""

from __future__ import annotations

import json
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from paleozoic.version import __version__
from paleozoic.codegen.emit import SessionViews, session_views
from paleozoic.codegen.environment import make_environment
from paleozoic.codegen.escape import Code
from paleozoic.codegen.weights import write_weights
from paleozoic.errors import OutputExistsError, UnsupportedModelError
from paleozoic.ir import Model


@dataclass(frozen=True)
class DecoderInterface:
    """The ONNX names of a KV-cache decoder's inputs and outputs, and each cache tensor's
    (heads, head dim)."""

    ids: str
    mask: str
    positions: str
    past: list[str]
    logits: str
    present: list[str]
    kv_shapes: list[tuple[int, int]]


def decoder_interface(proto: onnx.ModelProto, source: str) -> DecoderInterface:
    """The interface by the names HuggingFace's exports use; UnsupportedModelError naming
    what is missing otherwise."""
    inputs = {v.name: v for v in proto.graph.input}
    outputs = [o.name for o in proto.graph.output]

    def one(names: list[str], what: str) -> str:
        if len(names) != 1:
            raise UnsupportedModelError(
                f"{source}: --generate needs one {what} input, found {names or 'none'}; it "
                f"takes a decoder exported with a KV cache (input_ids, attention_mask, "
                f"position_ids, past_* in; logits, present_* out)")
        return names[0]

    ids = one([n for n in inputs if "input_ids" in n], "input_ids")
    mask = one([n for n in inputs if "attention_mask" in n], "attention_mask")
    positions = one([n for n in inputs if "position_ids" in n], "position_ids")
    past = [n for n in inputs if n.startswith("past")]
    present = [n for n in outputs if n.startswith("present")]
    logits = [n for n in outputs if "logits" in n]
    if not past or len(past) != len(present) or len(logits) != 1:
        raise UnsupportedModelError(
            f"{source}: --generate needs past_* inputs matched one for one by present_* "
            f"outputs and one logits output; found {len(past)} past, {len(present)} present, "
            f"logits {logits}")
    kv_shapes = []
    for name in past:
        dims = inputs[name].type.tensor_type.shape.dim
        if len(dims) != 4 or not dims[1].dim_value or not dims[3].dim_value:
            raise UnsupportedModelError(
                f"{source}: cache input {name!r} must be [batch, heads, cached, dim] with "
                f"static heads and dim")
        kv_shapes.append((int(dims[1].dim_value), int(dims[3].dim_value)))
    return DecoderInterface(ids, mask, positions, past, logits[0], present, kv_shapes)


def step_shapes(iface: DecoderInterface, tokens: int,
                window: int) -> dict[str, tuple[int, ...]]:
    """Input shapes of a step of `tokens` tokens that ends a window of `window` slots."""
    shapes: dict[str, tuple[int, ...]] = {iface.ids: (1, tokens), iface.mask: (1, window),
                                          iface.positions: (1, tokens)}
    for name, (heads, dim) in zip(iface.past, iface.kv_shapes):
        shapes[name] = (1, heads, window - tokens, dim)
    return shapes


@dataclass
class _Step:
    """One compiled session of the loop, as generate.cpp.j2 prints it: its views, its
    sections 1-3, and the interface as C++ expressions."""

    views: SessionViews
    body: Code
    cpp: DecoderInterface


# The loop's own names in generate.cpp.j2's main(), which no layer may take.
_LOOP_NAMES = frozenset({
    "cache", "picker", "prompt", "generated", "fed", "prefill_ms", "decode_ms", "positions",
    "prefill_device_ms", "decode_device_ms",
    "logits", "token", "position", "step", "decoded", "millisecondsSince", "kPromptSlots",
    "kWindow", "kVocab"})


def _step(model: Model, iface: DecoderInterface, env: Any, prefix: str) -> _Step:
    views = session_views(model, env, block_prefix=prefix, taken=_LOOP_NAMES)
    by_onnx_in = dict(zip(model.queue.onnx_input_names, views.inputs))
    by_onnx_out = dict(zip(model.queue.onnx_output_names, views.outputs))
    context = dict(inputs=views.inputs, outputs=views.outputs, layers=views.layers,
                   blocks=views.blocks, memory=views.memory, arena_lines=views.arena_lines,
                   arena_name=views.arena_name)
    # The session's sections 1-3, one scope deeper in the loop's main().
    body = textwrap.indent(env.get_template("session_body.cpp.j2").render(context), "  ",
                           lambda line: bool(line.strip()))
    cpp = DecoderInterface(by_onnx_in[iface.ids].ident, by_onnx_in[iface.mask].ident,
                           by_onnx_in[iface.positions].ident,
                           [by_onnx_in[n].ident for n in iface.past],
                           by_onnx_out[iface.logits].expr,
                           [by_onnx_out[n].expr for n in iface.present], iface.kv_shapes)
    return _Step(views, Code(body), cpp)


def _shared_weights(prefill: Model, decode: Model) -> None:
    """Makes the decode step's weight names the prefill's where the values are the same
    (one copy in the file), and distinct where they differ (a constant of the step's shape)."""
    first = prefill.queue.weights
    renames = {}
    for key, value in decode.queue.weights.items():
        if key in first and (first[key].shape != value.shape or
                             not np.array_equal(first[key], value)):
            renames[key] = f"decode.{key}"
    if not renames:
        return
    weights = decode.queue.weights
    for old, new in renames.items():
        weights[new] = weights.pop(old)
    for layer in decode.queue.layers:
        layer.weights = {role: renames.get(key, key) for role, key in layer.weights.items()}


def compile_generator(model: str | Path, out: str | Path, prompt_length: int, max_length: int,
                      plan: str | Path = "per-layer", precision: str | None = None,
                      force: bool = False) -> Path:
    """Writes generate.cpp, weights.bin, CMakeLists.txt and generate.json into `out`
    (nothing is left behind on failure)."""
    from paleozoic.pipeline import Precision, load_queue, resolve_plan, with_precision

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise OutputExistsError(f"{out}: exists and is not empty; choose another folder or "
                                f"pass --force to replace it")
    if not 1 <= prompt_length < max_length:
        raise ValueError(f"--prompt-length {prompt_length} must be at least 1 and below "
                         f"--max-length {max_length}")
    source = Path(model).name
    proto = onnx.load(str(model), load_external_data=False)
    iface = decoder_interface(proto, source)
    del proto
    models = []
    for tokens in (prompt_length, 1):
        queue = load_queue(model, step_shapes(iface, tokens, max_length))
        chosen = resolve_plan(queue, plan)
        if precision is not None:
            chosen = with_precision(chosen, Precision(precision))
        models.append(Model.build(queue, chosen))
    prefill, decode = models
    _shared_weights(prefill, decode)
    env = make_environment()
    steps = [_step(prefill, iface, env, "Prefill"), _step(decode, iface, env, "Decode")]
    weights = dict(steps[0].views.weights)
    weights.update(steps[1].views.weights)
    vocab = int(prefill.queue.shape(prefill.queue.outputs[
        prefill.queue.onnx_output_names.index(iface.logits)])[-1])
    title = f"{Path(source).stem} generation loop"
    context = dict(title=title, version=__version__, source=source, prefill=steps[0],
                   decode=steps[1], prompt_length=prompt_length, max_length=max_length,
                   vocab=vocab, kv_shapes=iface.kv_shapes, weights_id="{{WEIGHTS_ID}}",
                   num_weights=len(weights))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        weights_id = write_weights(staging / "weights.bin", weights.items())
        text = env.get_template("generate.cpp.j2").render(context)
        (staging / "generate.cpp").write_text(text.replace("{{WEIGHTS_ID}}", weights_id))
        (staging / "CMakeLists.txt").write_text(env.get_template("CMakeLists.txt.j2").render(
            title=title, version=__version__, project=title, target="generate",
            runtime_version=".".join(__version__.split(".")[:2])))
        (staging / "generate.json").write_text(json.dumps({
            "source": source, "prompt_length": prompt_length, "max_length": max_length,
            "vocab": vocab, "prefill_plan": json.loads(prefill.plan.to_json()),
            "decode_plan": json.loads(decode.plan.to_json())}, indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out
