"""Paleozoic: ONNX to hand-editable C++ inference sessions over a CNML-style SDK."""

__version__ = "0.1.0"
