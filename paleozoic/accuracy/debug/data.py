"""The batches debug runs on: the user's files (as `paleozoic calibrate` reads them) or one
seeded standard-normal batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from paleozoic.calibration.data import data_files, load_feeds
from paleozoic.accuracy.debug.folder import SessionFolder


def load_batches(folder: SessionFolder, data: Sequence[str] | None,
                 seed: int) -> tuple[list[list[np.ndarray]], str]:
    """(batches of feeds in queue input order, where they came from). Every file is read
    and checked before anything runs, so a bad one fails fast, naming itself."""
    if data:
        files = data_files(data)
        return [load_feeds(path, folder.queue) for path in files], \
            f"data from {len(files)} file(s)"
    from paleozoic.accuracy.verify import seeded_inputs

    feeds = seeded_inputs(folder.model, seed, folder.input_shapes, "normal")
    order = folder.queue.onnx_input_names or list(feeds)
    return [[np.ascontiguousarray(feeds[name], dtype=np.float32) for name in order]], \
        f"standard-normal data, seed {seed}"
