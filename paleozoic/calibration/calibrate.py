"""Runs the fp32 layer queue on calibration batches through the runtime (every layer
compiled alone, so every tensor is read back) and turns the statistics into ranges."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from paleozoic.calibration.data import data_files, iter_batches
from paleozoic.calibration.file import FORMAT, VERSION, model_id
from paleozoic.calibration.quant import quantized_param
from paleozoic.calibration.ranges import METHODS, TensorStats
from paleozoic.ir import LayerQueue
from paleozoic.ops import KINDS

logger = logging.getLogger(__name__)


class _Runner:
    """The queue built and compiled once in a runtime Session, every layer compiled alone
    so every tensor can be read back; each batch only sets the inputs and runs."""

    def __init__(self, queue: LayerQueue) -> None:
        from paleozoic.runner.graph import InputRecorder, build_runtime_graph
        from paleozoic.runner.sdk import runtime_module

        self.queue = queue
        self.session = runtime_module().Session()
        recorder = InputRecorder(self.session)
        self.layers = build_runtime_graph(queue, recorder, bind_weights=True)
        self.inputs = recorder.inputs
        for index, built in enumerate(self.layers):
            self.session.compile_block(f"calib{index}", False, 1, [built])

    def tensors(self, feeds: list[np.ndarray]) -> Iterator[tuple[str, np.ndarray]]:
        """Every graph input and layer output for one batch."""
        for tensor, value in zip(self.inputs, feeds):
            self.session.set_input(tensor, value)
        self.session.run()
        for info, value in zip(self.queue.inputs, feeds):
            yield info.name, value
        for layer, built in zip(self.queue.layers, self.layers):
            yield layer.output, np.asarray(self.session.get(built.output))


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _weight_ranges(queue: LayerQueue) -> dict[str, Any]:
    """Per output channel (LayerKind.weight_channel_axis of the filter) absmax, with the
    per-channel position and scale."""
    out: dict[str, Any] = {}
    for layer in queue.layers:
        key = layer.weights.get("weight")
        if key is None:
            continue
        w = np.asarray(queue.weights[key], dtype=np.float64)
        axis = KINDS[layer.kind].weight_channel_axis
        per_channel = np.abs(np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)).max(axis=1)
        params = [quantized_param(float(a)) for a in per_channel]
        out[layer.name] = {"weight": {
            "axis": axis, "absmax": [float(a) for a in per_channel],
            "position": [p for p, _ in params], "scale": [s for _, s in params]}}
    return out


def calibrate(queue: LayerQueue, data: Sequence[str | Path], method: str = "absmax",
              percentile: float = 99.99, model: str = "") -> dict[str, Any]:
    """The calibration record of `queue` on the files or folders in `data`."""
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r}; use one of "
                         f"{', '.join(METHODS)}")
    files = data_files(data)
    runner = _Runner(queue)
    stats: dict[str, TensorStats] = {}
    for path, feeds in iter_batches(files, queue):
        for name, value in runner.tensors(feeds):
            stats.setdefault(name, TensorStats()).observe(value)
    if method != "absmax":  # a second pass: histograms over the now known ranges
        for entry in stats.values():
            entry.start_histogram()
        for path, feeds in iter_batches(files, queue):
            for name, value in runner.tensors(feeds):
                stats[name].histogram(value)
    activations = {}
    for name, entry in stats.items():
        threshold = METHODS[method](entry, percentile=percentile)
        position, scale = quantized_param(threshold)
        activations[name] = {"min": entry.minimum, "max": entry.maximum,
                             "absmax": entry.absmax, "threshold": threshold,
                             "position": position, "scale": scale}
    logger.info("calibrated %d tensors on %d file(s) with %s", len(activations), len(files),
                method)
    return {
        "format": FORMAT, "version": VERSION, "model": model, "model_id": model_id(queue),
        "method": method, **({"percentile": percentile} if method == "percentile" else {}),
        "quantisation": "real = q * 2^position / scale, q in [-127, 127]",
        "data": [{"file": str(p), "sha256": _file_digest(p)} for p in files],
        "activations": activations,
        "weights": _weight_ranges(queue),
    }
