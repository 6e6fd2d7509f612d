"""The user's calibration inputs: .npy files (one array per file, for a model with one
input), .npz files (one array per model input, by input name), or folders of them, each
file one batch; every array must have the input's shape."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from paleozoic.errors import PaleozoicError
from paleozoic.ir import LayerQueue


class CalibrationDataError(PaleozoicError):
    """Calibration data that cannot feed the model; the message names the file."""


def data_files(paths: Sequence[str | Path]) -> list[Path]:
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".npy", ".npz"))
            if not found:
                raise CalibrationDataError(f"{path}: no .npy or .npz files in this folder")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise CalibrationDataError(f"{path}: no such file or folder")
    if not files:
        raise CalibrationDataError("no calibration data given (--data FILE_OR_FOLDER)")
    return files


def load_feeds(path: Path, queue: LayerQueue) -> list[np.ndarray]:
    """One batch of inputs from `path`, in the model's input order."""
    infos = {info.name: info for info in queue.inputs}
    names = list(infos)
    # The model file's own name of an input (which the queue may have made an identifier:
    # "gpu_0/data_0" -> "data") keys its array too.
    onnx_names = (dict(zip(names, queue.onnx_input_names))
                  if len(queue.onnx_input_names) == len(names) else {})
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise CalibrationDataError(f"{path}: not a numpy .npy/.npz file ({err})") from None
    if isinstance(loaded, np.ndarray):
        if len(names) != 1:
            raise CalibrationDataError(
                f"{path}: the model has {len(names)} inputs ({', '.join(names)}); give an "
                f".npz file with one array per input name")
        arrays = {names[0]: loaded}
    else:
        arrays = {key: loaded[key] for key in loaded.files}
        for name in names:
            if name not in arrays and onnx_names.get(name) in arrays:
                arrays[name] = arrays[onnx_names[name]]
        missing = [n if onnx_names.get(n, n) == n else f"{n} (ONNX {onnx_names[n]!r})"
                   for n in names if n not in arrays]
        if missing:
            raise CalibrationDataError(f"{path}: no array for input(s) {missing}; it holds "
                                       f"{sorted(arrays)}")
    feeds = []
    for name in names:
        want = tuple(infos[name].shape)
        array = np.asarray(arrays[name])
        if array.shape != want:
            raise CalibrationDataError(f"{path}: input {name!r} has shape {array.shape}, the "
                                       f"model takes {want} (see --input-shape / --batch)")
        if infos[name].dtype != "float32":  # token ids, masks, pixels: kept as integers
            if not (np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_):
                raise CalibrationDataError(
                    f"{path}: input {name!r} is {infos[name].dtype} in the model; give "
                    f"integers, not {array.dtype}")
            feeds.append(np.ascontiguousarray(array, dtype=np.int64))
            continue
        if not np.issubdtype(array.dtype, np.floating) or not np.all(np.isfinite(array)):
            raise CalibrationDataError(f"{path}: input {name!r} must be finite floats")
        feeds.append(np.ascontiguousarray(array, dtype=np.float32))
    return feeds


def iter_batches(files: Sequence[Path], queue: LayerQueue) -> Iterator[tuple[Path, list[np.ndarray]]]:
    for path in files:
        yield path, load_feeds(path, queue)
