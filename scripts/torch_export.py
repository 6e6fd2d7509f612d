"""What the torch exporters (export_families.py, export_sequence.py, export_torchvision.py)
share: seeding, no all-zero weight matrices, and the check of an exported file in a Python
that has onnxruntime (onnx.checker, the op histogram, onnxruntime against PyTorch's outputs).
Imported by its name: the scripts run as `python scripts/NAME.py`, with scripts/ first on
the path."""

from __future__ import annotations

import importlib.util
import inspect
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn


def seed_everything(seed: int = 0) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@torch.no_grad()
def no_zero_weights(model: nn.Module) -> nn.Module:
    """Matrices initialised to zeros (ViT's classification head, some HuggingFace heads)
    get seeded small normal values, so that every output depends on the input and a
    comparison means something."""
    for param in model.parameters():
        if param.dim() >= 2 and not param.any():
            param.normal_(0.0, 0.02)
    return model


@torch.no_grad()
def randomise_norm_stats(model: nn.Module) -> nn.Module:
    """Seeded running statistics (and affine terms) for batch norms, frozen ones included,
    as a trained network has (fresh ones are the identity)."""
    for module in model.modules():
        if not isinstance(getattr(module, "running_var", None), torch.Tensor):
            continue
        module.running_mean.normal_(0.0, 0.2)
        module.running_var.uniform_(0.5, 2.0)
        module.weight.uniform_(0.5, 1.5)
        module.bias.normal_(0.0, 0.1)
    return model


def start_torch() -> None:
    """Two threads (the machine is shared), and which torch and torchvision export."""
    import torchvision

    torch.set_num_threads(2)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}", flush=True)


def ort_check(model_path: str, checks_path: str) -> dict:
    """onnx.checker, the op histogram (subgraphs included) and onnxruntime runs of the
    feeds in checks_path against the references there. Runs by its source in a Python that
    has onnxruntime: it imports nothing from this module."""
    import collections

    import numpy as np
    import onnx
    import onnxruntime as ort

    proto = onnx.load(model_path)
    onnx.checker.check_model(proto)
    ops: collections.Counter = collections.Counter()
    control: collections.Counter = collections.Counter()   # (op, nesting depth) of If/Loop/Scan

    def walk(graph: onnx.GraphProto, depth: int) -> None:
        for node in graph.node:
            ops[node.op_type if node.domain in ("", "ai.onnx") else
                f"{node.domain}.{node.op_type}"] += 1
            if node.op_type in ("If", "Loop", "Scan"):
                control[f"{node.op_type}@{depth}"] += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g, depth + 1)
                for sub in attr.graphs:
                    walk(sub, depth + 1)

    walk(proto.graph, 0)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    data = np.load(checks_path)
    runs = sorted({key.split(":")[0][4:] for key in data.files if key.startswith("feed")})
    inputs = {i.name: i for i in session.get_inputs()}
    outputs: dict[str, str] = {}
    diffs: list[float] = []
    has_reference = any(key.startswith("ref") for key in data.files)
    for k in runs:
        feed = {name: data[f"feed{k}:{name}"] for name in inputs}
        results = session.run(None, feed)
        diff = 0.0
        for meta, value in zip(session.get_outputs(), results):
            outputs.setdefault(meta.name, f"{value.dtype}{list(value.shape)}")
            ref_key = f"ref{k}:{meta.name}"
            if ref_key in data.files:
                ref = data[ref_key]
                if ref.shape != value.shape:
                    diff = float("inf")
                elif ref.size:
                    delta = np.abs(value.astype(np.float64) - ref.astype(np.float64))
                    diff = max(diff, float(delta.max()))
        diffs.append(diff)
    first = runs[0]
    return {
        "opset": next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
        "inputs": {name: f"{data[f'feed{first}:{name}'].dtype}"
                         f"{list(data[f'feed{first}:{name}'].shape)}" for name in inputs},
        "outputs": outputs,
        "ops": ops.most_common(),
        "control": sorted(control.items()),
        "max_abs_diff": diffs if has_reference else None,
    }


def run_check(python: str, model: Path, checks: Path) -> dict:
    source = (inspect.getsource(ort_check) + "\nimport json, sys\n"
              "print(json.dumps(ort_check(sys.argv[1], sys.argv[2])))\n")
    done = subprocess.run([python, "-c", source, str(model), str(checks)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["(no message)"]
        raise RuntimeError(f"check failed in {python}: {lines[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe(report: dict) -> str:
    ins = " ".join(f"{k}:{v}" for k, v in report["inputs"].items())
    outs = " ".join(f"{k}:{v}" for k, v in report["outputs"].items())
    ops = " ".join(f"{op}x{count}" for op, count in report["ops"])
    control = " ".join(f"{key}x{count}" for key, count in report["control"])
    diffs = report["max_abs_diff"]
    vs = ("ort-vs-torch max|diff| " + ",".join(f"{d:.1e}" for d in diffs)
          if diffs is not None else "ort runs (no reference)")
    flow = f" | control flow (op@depth) {control}" if control else ""
    return f"in [{ins}] out [{outs}] {vs} | ops (subgraphs included) {ops}{flow}"


def default_ort_python() -> str:
    if importlib.util.find_spec("onnxruntime") is not None:
        return sys.executable
    return shutil.which("python3") or "python3"
