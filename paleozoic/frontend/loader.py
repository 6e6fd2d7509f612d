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
        try:
            proto = onnx.load(str(path))
        except (DecodeError, ValueError, RuntimeError) as err:
            raise ModelLoadError(
                f"{path}: not a readable ONNX model ({type(err).__name__}: {err}); the file "
                f"may be truncated or of another format") from None
        if not proto.graph.node:
            raise ModelLoadError(f"{path}: the ONNX graph has no nodes; the file may be "
                                 f"truncated or not an ONNX model")
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0]
        raise ModelLoadError(f"{name}: fails the ONNX checker: {first}") from None
    return proto, name
