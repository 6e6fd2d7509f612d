"""Measured block timings kept by what was measured, not by where it sits in a queue.

A block's time depends on its layers (kinds, attributes, shapes, how they connect, which
outputs leave it), its knobs (MP, fused or not, data parallelism, sparse layers' weights)
and the board (SDK, CPU, cores, Paleozoic's version): `block_key` hashes exactly those, so
the eight identical bottlenecks of a ResNet stage are measured once, and a block met again
in another plan, another run or another model is not measured again. `MeasurementStore`
keeps the timings in a JSON-lines file that every run and worker appends to: a line is
written whole and flushed, so an interrupted run leaves every finished measurement and at
most one torn last line, which loading skips.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Iterable, Iterator, Sequence

import numpy as np

from paleozoic.ir import LayerQueue
from paleozoic.ir.boundary import leaves_block, read_counts

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Measured:
    """A block's device time and the per-block wall time a forward spent around it."""

    micros: float
    gap_micros: float = 0.0


def board_fingerprint(sdk: str) -> str:
    """What makes timings of one board comparable with another's: the SDK, the CPU model,
    its cores and Paleozoic's version (its SDK implementation and device model)."""
    from paleozoic.version import __version__

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{sdk}|{cpu}|{os.cpu_count()}|paleozoic {__version__}"


class BlockKeys:
    """block_key for many blocks of one queue: each layer described once."""

    def __init__(self, queue: LayerQueue, board: str, sparse: Collection[str] = (),
                 data_parallelism: int = 1) -> None:
        self.queue, self.board = queue, board
        self.sparse, self.data_parallelism = frozenset(sparse), data_parallelism
        self._reads = read_counts(queue.layers)
        self._outputs = set(queue.outputs)
        self._layers: dict[int, str] = {}
        self._tensors: dict[str, str] = {}

    def _layer(self, index: int) -> str:
        """The layer's description as a JSON string literal (see key)."""
        if index not in self._layers:
            layer = self.queue.layers[index]
            weights = {}
            for role, name in sorted(layer.weights.items()):
                value = self.queue.weights[name]
                weights[role] = [list(value.shape), str(value.dtype)]
                if layer.name in self.sparse:  # its time depends on the zero pairs
                    weights[role].append(hashlib.sha256(
                        np.ascontiguousarray(value).tobytes()).hexdigest())
            self._layers[index] = json.dumps(json.dumps(
                [layer.kind, layer.op.attrs, weights, layer.precision, layer.name in self.sparse],
                sort_keys=True, separators=(",", ":"), default=_plain))
        return self._layers[index]

    def _tensor(self, name: str) -> str:
        """The tensor's shape and element type as JSON list items (see key)."""
        if name not in self._tensors:
            tensor = self.queue.tensors[name]
            self._tensors[name] = json.dumps([list(tensor.shape), tensor.dtype],
                                             separators=(",", ":"))[1:-1]
        return self._tensors[name]

    def key(self, start: int, stop: int, mp: int, fused: bool) -> str:
        """The hash naming queue.layers[start:stop] at `mp` (see the module notes).
        Tensors are named by position (block inputs in order of first read, then layers),
        so the same block anywhere in any queue has the same key.

        What is hashed is the canonical JSON (sorted keys, no spaces) of
        {"board", "dp", "fused", "layers": [[layer, [its inputs]]...], "mp", "outputs",
        "shapes": [[tensor, shape, dtype]...]}, written from pieces each layer and tensor
        gets once: a search names thousands of blocks of tens of layers each."""
        return self.keys([(start, stop, mp, fused)])[0]

    def keys(self, blocks: Iterable[tuple[int, int, int, bool]]) -> list[str]:
        """key of each (start, stop, mp, fused): most blocks a search names come at several
        MPs and from a start shared with longer ones, so the text of each start's longest
        block is written once, layer by layer, and the shorter ones are its prefixes."""
        blocks = [(int(start), int(stop), int(mp), bool(fused))
                  for start, stop, mp, fused in blocks]
        stops: dict[tuple[int, bool], set[int]] = {}
        for start, stop, _, fused in blocks:
            stops.setdefault((start, fused), set()).add(stop)
        around: dict[tuple[int, int, bool], tuple[str, str]] = {}
        for (start, fused), ends in stops.items():
            ends = sorted(ends)
            for stop, text in zip(ends, self._texts_around_mp(start, ends, fused)):
                around[(start, stop, fused)] = text
        found = []
        for start, stop, mp, fused in blocks:
            before, after = around[(start, stop, fused)]
            found.append(hashlib.sha256(f"{before}{mp}{after}".encode()).hexdigest())
        return found

    def _texts_around_mp(self, start: int, stops: Sequence[int],
                         fused: bool) -> Iterator[tuple[str, str]]:
        """The key's text before and after the MP of queue.layers[start:stop] for each of
        the increasing `stops`, each block's pieces extending the one before."""
        local: dict[str, str] = {}        # tensor -> its name in the block
        inside: dict[str, int] = {}       # tensor made in the block -> its reads there
        leaving: dict[str, None] = {}     # the block's outputs so far, in layer order
        entries: list[str] = []
        input_shapes: list[str] = []
        output_shapes: list[str] = []
        head = (f'{{"board":{json.dumps(self.board)},"dp":{int(self.data_parallelism)},'
                f'"fused":{"true" if fused else "false"},"layers":[')
        at = start
        for stop in stops:
            while at < stop:
                layer = self.queue.layers[at]
                names = []
                for tensor in layer.inputs:
                    name = local.get(tensor)
                    if name is None:  # made before the block: its next input
                        name = local[tensor] = f'"i{len(input_shapes)}"'
                        input_shapes.append(f"[{name},{self._tensor(tensor)}]")
                    elif tensor in inside:
                        inside[tensor] += 1
                        if not leaves_block(self._reads.get(tensor, 0), inside[tensor],
                                            tensor in self._outputs):
                            leaving.pop(tensor, None)
                    names.append(name)
                entries.append(f"[{self._layer(at)},[{','.join(names)}]]")
                name = local[layer.output] = f'"l{at - start}"'
                output_shapes.append(f"[{name},{self._tensor(layer.output)}]")
                inside[layer.output] = 0
                leaving[layer.output] = None  # read after it, or by nobody (yet)
                at += 1
            yield (f'{head}{",".join(entries)}],"mp":',
                   f',"outputs":[{",".join(local[t] for t in leaving)}],'
                   f'"shapes":[{",".join(input_shapes + output_shapes)}]}}')


def block_key(queue: LayerQueue, start: int, stop: int, mp: int, *, fused: bool,
              board: str, sparse: Collection[str] = (), data_parallelism: int = 1) -> str:
    """The hash naming queue.layers[start:stop] at `mp` on `board` (BlockKeys.key)."""
    return BlockKeys(queue, board, sparse, data_parallelism).key(start, stop, mp, fused)


def _plain(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"cannot describe {type(value).__name__} in a block key")


class MeasurementStore:
    """Timings by block key, in memory and, with a `path`, in a JSON-lines file shared by
    runs and workers (see the module notes)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._timings: dict[str, Measured] = {}
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def _load(self, path: Path) -> None:
        torn = 0
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                try:
                    entry = json.loads(line)
                    self._timings[entry["key"]] = Measured(float(entry["us"]),
                                                           float(entry.get("gap_us", 0.0)))
                except (ValueError, KeyError, TypeError):
                    torn += 1
        if torn:
            logger.warning("%s: skipped %d unreadable line(s) (an interrupted write); those "
                           "blocks will be measured again", path, torn)

    def __len__(self) -> int:
        return len(self._timings)

    def get(self, key: str) -> Measured | None:
        return self._timings.get(key)

    def add(self, found: Iterable[tuple[str, Measured]]) -> None:
        """Keeps `found` and appends it to the file, each line whole."""
        new = [(key, m) for key, m in found if key not in self._timings]
        self._timings.update(new)
        if self.path is None or not new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps({"key": key, "us": m.micros, "gap_us": m.gap_micros}) + "\n"
                       for key, m in new)
        with open(self.path, "a+b") as out:
            if out.tell() > 0:  # after a torn last line, start a line of our own
                out.seek(-1, os.SEEK_END)
                if out.read(1) != b"\n":
                    text = "\n" + text
            # Flushed, not synced: a run that dies leaves its lines with the system, and a
            # machine that dies costs the lines it had not written out, measured again next
            # time; a sync after every batch of timings cost the search 0.2 s on a
            # DenseNet-121 export's 292 batches here.
            out.write(text.encode())
            out.flush()
