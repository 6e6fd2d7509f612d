"""Frontend: ONNX in, LayerQueue out (TVM's Relax ONNX frontend is the parser)."""

from paleozoic.frontend.importer import import_onnx
from paleozoic.frontend.loader import load_onnx

__all__ = ["import_onnx", "load_onnx"]
