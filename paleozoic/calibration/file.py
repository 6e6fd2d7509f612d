"""The calibration file: an editable JSON record of the method, the data seen, the model it
belongs to, per-tensor activation ranges and per-channel weight ranges, each with the
SDK's quantisation parameters. A file made for another model is refused by name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from paleozoic.errors import PaleozoicError
from paleozoic.ir import LayerQueue
from paleozoic.ir.file_format import format_problem

FORMAT = "paleozoic-calibration"
VERSION = 1


class CalibrationError(PaleozoicError):
    """A calibration file that is malformed or made for another model."""


def model_id(queue: LayerQueue) -> str:
    """A digest of what quantisation parameters depend on: every layer (name, kind,
    attributes, tensors, shapes) and every weight's values."""
    digest = hashlib.sha256()
    for layer in queue.layers:
        shapes = [tuple(queue.tensors[name].shape) for name in layer.inputs + [layer.output]]
        digest.update(repr((layer.name, layer.kind, sorted(layer.op.attrs.items()),
                            layer.inputs, layer.output, shapes,
                            sorted(layer.weights.items()))).encode())
    for key in sorted(queue.weights):
        array = np.ascontiguousarray(queue.weights[key])
        digest.update(repr((key, array.shape, str(array.dtype))).encode())
        digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()[:32]


def write_calibration(path: Path, record: dict[str, Any]) -> None:
    """Writes atomically: a failed run leaves no half-written file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)


def load_calibration(path: str | Path, queue: LayerQueue) -> dict[str, Any]:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise CalibrationError(f"{path}: no such calibration file; make one with "
                               f"`paleozoic calibrate MODEL --data ... -o {path}`") from None
    except json.JSONDecodeError as err:
        raise CalibrationError(f"{path}: not valid JSON ({err})") from None
    problem = format_problem(record, str(path), FORMAT, VERSION, "calibration file",
                             "; re-run paleozoic calibrate")
    if problem:
        raise CalibrationError(problem)
    want = model_id(queue)
    if record.get("model_id") != want:
        raise CalibrationError(
            f"{path}: made for model {record.get('model_id')} ({record.get('model')}), not "
            f"this one ({want}); re-run paleozoic calibrate on this model")
    unknown = sorted(set(record.get("activations", {})) - set(queue.tensors))
    if unknown:
        raise CalibrationError(f"{path}: activation ranges for tensors the model does not "
                               f"have: {unknown[:5]}")
    for name, entry in record.get("activations", {}).items():
        threshold = entry.get("threshold")
        if not isinstance(threshold, (int, float)) or not threshold >= 0:
            raise CalibrationError(f"{path}: tensor {name!r}: threshold must be a number "
                                   f">= 0, got {threshold!r}")
    return record
