"""Loading and checking ONNX models before anything else looks at them."""

from __future__ import annotations

import logging
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from paleozoic.errors import ModelLoadError

logger = logging.getLogger(__name__)


def load_onnx(model: str | Path | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    """Returns the checked model and a short name for messages (the file name)."""
    if isinstance(model, onnx.ModelProto):
        name = model.graph.name or "<model>"
        proto = model
    else:
        path = Path(model)
        name = str(path)
        if not path.is_file():
            raise ModelLoadError(f"{path}: no such file; pass the path of an .onnx model")
        # Check the file before loading it: check_model on a loaded proto serialises it
        # again and parses that copy in C++ (four copies of the weights at the peak; VGG-19:
        # 2.8 GB for 575 MB of weights). From the path, the checker holds its own copy and
        # frees it before the Python one is made.
        checked_error = _check_path(path)
        try:
            proto = onnx.load(str(path))
        except (DecodeError, ValueError, RuntimeError) as err:
            raise ModelLoadError(
                f"{path}: not a readable ONNX model ({type(err).__name__}: {err}); the file "
                f"may be truncated or of another format") from None
        if not proto.graph.node:
            raise ModelLoadError(f"{path}: the ONNX graph has no nodes; the file may be "
                                 f"truncated or not an ONNX model")
        if checked_error is not None:
            raise ModelLoadError(f"{name}: fails the ONNX checker: {checked_error}")
        return proto, name
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0]
        raise ModelLoadError(f"{name}: fails the ONNX checker: {first}") from None
    return proto, name


def _check_path(path: Path) -> str | None:
    """The ONNX checker's first complaint about the file, or None. A file the checker
    cannot even parse returns None here; onnx.load then names the problem."""
    try:
        onnx.checker.check_model(str(path))
    except onnx.checker.ValidationError as err:
        text = str(err).strip()
        if "Unable to parse" in text or "parse" in text.lower() and "proto" in text.lower():
            return None
        return text.splitlines()[0] if text else "invalid model"
    except Exception:  # noqa: BLE001  (unreadable: onnx.load reports it with context)
        return None
    return None
