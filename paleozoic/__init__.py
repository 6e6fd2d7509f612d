"""Paleozoic: ONNX to hand-editable C++ inference sessions over a CNML-style SDK.

The main job as Python calls (paleozoic.api): compile, build, run, verify, tune and
tune_for_accuracy. They load on first use, so that `import paleozoic` and the command
line's help stay fast."""

from __future__ import annotations

from paleozoic.version import __version__

API = ("compile", "build", "run", "verify", "tune", "tune_for_accuracy")
__all__ = ["__version__", *API]


def __getattr__(name: str) -> object:
    if name in API:
        from paleozoic import api

        return getattr(api, name)
    raise AttributeError(f"module 'paleozoic' has no attribute {name!r}")
