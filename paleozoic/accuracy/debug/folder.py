"""A folder written by `paleozoic compile`, read back for debugging: the source model, its
layer queue carrying the folder's own weights.bin (which may differ from the model's,
when a bug or a hand edit put other numbers there), and plan.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from paleozoic.calibration.params import quantization_from_tensors
from paleozoic.codegen.weights import WeightFileError, read_weights
from paleozoic.errors import ModelLoadError, PlanMismatchError
from paleozoic.ir import LayerQueue, Plan, PlanError


@dataclass
class SessionFolder:
    path: Path
    model: onnx.ModelProto                   # the ONNX model, for onnxruntime
    queue: LayerQueue                        # its layer queue, weights from weights.bin
    plan: Plan                               # plan.json, validated against the queue
    input_shapes: dict[str, tuple[int, ...]]  # ONNX input name -> the session's shape
    # int8 parameters from weights.bin (layer -> LayerQuantization); empty without them
    quantization: dict[str, Any] = field(default_factory=dict)


def load_folder(out: str | Path, model_path: str | Path | None = None) -> SessionFolder:
    from paleozoic.optimize import fusible_kinds
    from paleozoic.pipeline import load_queue
    from paleozoic.accuracy.verify import model_for

    out = Path(out)
    manifest_path = out / "session.json"
    if not manifest_path.is_file():
        raise ModelLoadError(f"{out}: no session.json; give a folder written by "
                             f"`paleozoic compile`")
    try:
        manifest = json.loads(manifest_path.read_text())
        shapes = {i["onnx_name"]: tuple(i["shape"]) for i in manifest["inputs"]}
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ModelLoadError(f"{manifest_path}: not a session manifest ({err})") from None
    model = model_for(out, model_path)
    # The shapes the session was compiled for (--input-shape / --batch), so the queue
    # is the one the folder was emitted from.
    queue = load_queue(model_path or manifest["source_path"], input_shapes=shapes)
    quantization = _load_weights(queue, out / "weights.bin")
    plan_path = out / "plan.json"
    if not plan_path.is_file():
        raise PlanMismatchError(f"{out}: no plan.json; recompile with `paleozoic compile`")
    try:
        plan = Plan.load(plan_path)
        plan.validate(queue, fusible_kinds())
    except PlanError as err:
        raise PlanMismatchError(f"{plan_path}: {err}") from None
    return SessionFolder(out, model, queue, plan, shapes, quantization)


def _load_weights(queue: LayerQueue, path: Path) -> dict[str, Any]:
    """Replaces the queue's weights with the file's, which must hold the same tensors;
    returns the int8 parameters the file carries."""
    if not path.is_file():
        raise ModelLoadError(f"{path}: no such file; recompile with `paleozoic compile`")
    try:
        stored = read_weights(path)
    except WeightFileError as err:
        raise ModelLoadError(str(err)) from None
    for key, value in queue.weights.items():
        if key not in stored or stored[key].shape != value.shape:
            found = "missing" if key not in stored else f"shape {list(stored[key].shape)}"
            raise ModelLoadError(f"{path}: weight {key!r} is {found}, the model needs "
                                 f"{list(value.shape)}; the folder was compiled from "
                                 f"another model (pass --model) or version")
        queue.weights[key] = stored[key]
    return quantization_from_tensors(stored)
