"""Checking an emitted session against onnxruntime on the same seeded input."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from paleozoic.errors import ModelLoadError
from paleozoic.pipeline import run_session

RTOL = 1e-3
ATOL = 1e-5
# An output outside RTOL/ATOL still passes when it is within this factor of onnxruntime's
# own disagreement between its optimised and unoptimised graphs on the same input: deep
# networks with unnormalised outputs accumulate fp32 rounding that depends only on the
# order of summation (ResNet-50 from PyTorch: 2.9e-5 between onnxruntime's two modes).
NOISE_FACTOR = 2.0


@dataclass
class OutputCheck:
    name: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    passed: bool
    noise: float | None = None  # onnxruntime optimised vs unoptimised, when consulted


def seeded_inputs(model: onnx.ModelProto, seed: int,
                  shapes: dict[str, tuple[int, ...]] | None = None) -> dict[str, np.ndarray]:
    from paleozoic.testing.zoo import random_inputs

    return random_inputs(model, seed, shapes)


def onnxruntime_session(model: onnx.ModelProto, threads: int = 2,
                        optimize: bool = True) -> Any:
    """A quiet CPU onnxruntime session on `threads` intra-op threads (the reference)."""
    import onnxruntime as ort  # optional dependency, needed by verify only

    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def reference_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                      threads: int = 2) -> list[np.ndarray]:
    return onnxruntime_session(model, threads).run(None, feeds)


def compare(name: str, ours: np.ndarray, ref: np.ndarray) -> OutputCheck:
    ref = ref.reshape(ours.shape)
    diff = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    rel = diff / np.maximum(np.abs(ref.astype(np.float64)), 1e-12)
    passed = bool(np.all(np.isfinite(ours)) and np.allclose(ours, ref, rtol=RTOL, atol=ATOL))
    return OutputCheck(name, tuple(ours.shape), float(diff.max(initial=0.0)),
                       float(rel.max(initial=0.0)), passed)


def model_for(out: Path, model_path: str | Path | None) -> onnx.ModelProto:
    if model_path is None:
        manifest = json.loads((out / "session.json").read_text())
        model_path = manifest.get("source_path")
        if not model_path:
            raise ModelLoadError(f"{out}: the session was compiled from an in-memory model; "
                                 f"pass --model MODEL.onnx")
    path = Path(model_path)
    if not path.is_file():
        raise ModelLoadError(f"{path}: model not found; pass --model MODEL.onnx")
    return onnx.load(str(path))


def verify_session(out: str | Path, model: onnx.ModelProto, seed: int = 0
                   ) -> list[OutputCheck]:
    out = Path(out)
    manifest = json.loads((out / "session.json").read_text())
    # The session's input shapes, which --input-shape / --batch fixed where the model's
    # are symbolic.
    shapes = {i["onnx_name"]: tuple(i["shape"]) for i in manifest["inputs"]}
    feeds = seeded_inputs(model, seed, shapes)
    result = run_session(out, list(feeds.values()))
    refs = reference_outputs(model, feeds)
    checks = [compare(o["onnx_name"], ours, ref)
              for o, ours, ref in zip(manifest["outputs"], result.outputs, refs)]
    if not all(c.passed for c in checks):
        plain = onnxruntime_session(model, optimize=False).run(None, feeds)
        for i, (check, ours, ref, alt) in enumerate(zip(checks, result.outputs, refs, plain)):
            if check.passed or not np.all(np.isfinite(ours)):
                continue
            noise = float(np.abs(ref.astype(np.float64) - alt.astype(np.float64)).max())
            checks[i] = OutputCheck(check.name, check.shape, check.max_abs, check.max_rel,
                                    check.max_abs <= NOISE_FACTOR * noise, noise)
    return checks
