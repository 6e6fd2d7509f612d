"""onnx's Backend interface over Paleozoic's emitted C++ sessions.

    import paleozoic.backend as backend
    rep = backend.prepare(model)          # checks the model; raises UnsupportedModelError
    outputs = rep.run([x, w])             # compiles, builds (cmake + g++) and runs the session

`rep.run` executes the emitted C++ session (pipeline.compile_model -> build_session ->
run_session), never a Python emulation. Paleozoic needs weights as constants, while ONNX's
node tests pass them as graph inputs (Conv's W, Gemm's B, BatchNormalization's statistics,
Reshape's shape, ...). The rep therefore freezes such inputs into initializers with the
values given to `run` and compiles that model; sessions are cached by a hash of the frozen
model (values included), the plan and the Paleozoic sources, templates and installed
runtime that emit and build them, so repeated runs with the same weights reuse the built
executable.

Which inputs are frozen (the "split") is decided per model, trying in order:

1. the inputs Paleozoic must see as constants: every non-float input (shapes, axes) and
   every input read at a weight or parameter slot (the `weights` and `parameters` slots
   of frontend.support.ONNX_OPS: a Conv's W and B, a Resize's scales, a Clip's bounds);
   all other float inputs stay inputs of the session;
2. everything but the first float run-time input of split 1 (an operand such as Mul's
   per-channel scale can be taken as a constant, but not as a second activation).
3. split 1 with its integer inputs that no weight or parameter slot reads left as run-time
   inputs (host layers read integer tensors: a Pow's integer exponent becomes a host cast
   to float32 and a Binary pow).

A split Paleozoic's frontend refuses is not used; if it refuses all of them the rep raises
UnsupportedModelError (with the frontend's message) before anything is built. Freezing is
exact for the values of that call: a frozen input given other values at the next call gets
its own session.

Sessions live in $PALEOZOIC_BACKEND_CACHE (default: <tempdir>/paleozoic-backend-<uid>);
nothing is written into the working directory. Cache entries are keyed by content, so the
folder can be deleted at any time.

`prepare` checks without building: the ONNX checker, tensor float32 outputs, the
operators of the nodes that compute on run-time values (the frontend folds the rest) and,
when nothing is left to fold, the attributes. The frontend itself runs at `run`.

Running onnx's backend test suite through it (many models per build):
paleozoic_testing.backend_suite.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.base import Backend, BackendRep, namedtupledict

from paleozoic.version import __version__
from paleozoic.errors import ModelLoadError, PaleozoicError, UnsupportedModelError
from paleozoic.frontend.attribute_checks import check_attributes
from paleozoic.frontend.support import ONNX_OPS, check_supported

logger = logging.getLogger(__name__)

CACHE_ENV = "PALEOZOIC_BACKEND_CACHE"
DEVICES = ("CPU",)
DEFAULT_PLAN = "per-layer"

# Float input slots Paleozoic turns into weights or attributes: they must be constants.
# (Non-float inputs, such as shapes and axes, are always frozen.)

_FLOAT = onnx.TensorProto.FLOAT
# TVM's frontend and Paleozoic's codegen run one model at a time in a process; builds and
# session runs (subprocesses) may overlap.
_FRONTEND_LOCK = threading.RLock()


# ---- the session cache -------------------------------------------------------------------
def default_cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"paleozoic-backend-{uid}"


@functools.lru_cache(maxsize=1)
def toolchain_fingerprint() -> str:
    """What else a cached session depends on: Paleozoic's Python sources and templates
    (content) and the installed C++ runtime (file sizes and times)."""
    from paleozoic.codegen.environment import template_dir
    from paleozoic.pipeline import runtime_prefix

    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent
    for root in (package, template_dir()):
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".j2", ".txt", ".json"):
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    try:
        prefix = runtime_prefix()
    except PaleozoicError:
        prefix = None
    if prefix is not None:
        for path in sorted(prefix.rglob("*")):
            if path.is_file():
                stat = path.stat()
                digest.update(f"{path.relative_to(prefix)}:{stat.st_size}:"
                              f"{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


class SessionCache:
    """Built sessions by content hash: <root>/sessions/<key>/ (compile_model's folder,
    with build/session), reused when its `.built` marker exists. A per-key file lock lets
    threads and processes share the folder."""

    def __init__(self, root: str | Path | None = None, sdk: str = "mock") -> None:
        from paleozoic.runner.sdk import check_sdk

        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self.sdk = check_sdk(sdk)  # the SDK its sessions are built against

    def key(self, model: onnx.ModelProto, plan: str) -> str:
        digest = hashlib.sha256(toolchain_fingerprint().encode())
        if self.sdk != "mock":  # mock keys as before this option existed
            digest.update(f"sdk={self.sdk}".encode())
        digest.update(plan.encode())
        if Path(plan).is_file():  # a plan.json: its content
            digest.update(Path(plan).read_bytes())
        digest.update(model.SerializeToString(deterministic=True))
        return digest.hexdigest()[:32]

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        locks = self.root / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{key}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def session(self, model: onnx.ModelProto, plan: str) -> Path:
        """The built session folder of `model` under `plan`: compiled and built unless
        cached. UnsupportedModelError comes from the frontend, before anything is
        written; BuildError if cmake or g++ fails."""
        from paleozoic.pipeline import build_session, compile_model

        key = self.key(model, plan)
        folder = self.root / "sessions" / key
        marker = folder / ".built"
        if marker.is_file():
            return folder
        with self._locked(key):
            if marker.is_file():
                return folder
            folder.parent.mkdir(parents=True, exist_ok=True)
            with _FRONTEND_LOCK:
                compile_model(model, folder, plan=plan, force=True)
            build_session(folder, jobs=1, sdk=self.sdk)
            marker.write_text(f"paleozoic {__version__}\n")
        return folder


def run_built(folder: Path, feeds: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Runs a built session folder; returns its outputs by ONNX output name."""
    from paleozoic.pipeline import run_session

    manifest = json.loads((folder / "session.json").read_text())
    result = run_session(folder, list(feeds))
    return {o.get("onnx_name", o["name"]): value
            for o, value in zip(manifest["outputs"], result.outputs)}


# ---- model inspection ----------------------------------------------------------------
def _elem_type(value: onnx.ValueInfoProto) -> int | None:
    """Tensor element type, or None for sequences, maps, optionals and sparse tensors."""
    if value.type.WhichOneof("value") != "tensor_type":
        return None
    return int(value.type.tensor_type.elem_type)


def _declared_shape(value: onnx.ValueInfoProto) -> tuple[int | None, ...] | None:
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return tuple(int(d.dim_value) if d.HasField("dim_value") else None
                 for d in tensor.shape.dim)


# The graph output types a session gives (0: not declared, float32 then).
_OUTPUT_TYPES = (_FLOAT, 0, onnx.TensorProto.INT64, onnx.TensorProto.INT32,
                 onnx.TensorProto.UINT8, onnx.TensorProto.BOOL)


def _np_dtype(elem_type: int) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def _placeholder(value: onnx.ValueInfoProto) -> np.ndarray:
    shape = tuple(d or 1 for d in (_declared_shape(value) or ()))
    return np.zeros(shape, dtype=_np_dtype(_elem_type(value) or _FLOAT))


def _value_info(name: str, value: np.ndarray) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape))


@dataclass
class Frozen:
    """A model with some inputs frozen into initializers, and the session's feeds."""

    model: onnx.ModelProto
    feeds: list[np.ndarray]
    layers: int  # layers of its queue (0: nothing to compute, e.g. an Identity graph)


@dataclass(frozen=True)
class Split:
    """Graph inputs frozen into initializers; the others are the session's inputs."""

    frozen: frozenset[str]

    def describe(self, order: Sequence[str]) -> str:
        frozen = [n for n in order if n in self.frozen]
        kept = [n for n in order if n not in self.frozen]
        return f"inputs {kept} at run time, {frozen} frozen as constants"


class PaleozoicBackendRep(BackendRep):
    """A prepared model. `run(inputs)` freezes the inputs of the chosen split into
    initializers, compiles and builds the session (cached) and runs it."""

    def __init__(self, model: onnx.ModelProto, source: str, candidates: list[Split],
                 plan: str = DEFAULT_PLAN, cache: SessionCache | None = None) -> None:
        self.model = model
        self.source = source
        self.plan = plan
        self.cache = cache or SessionCache()
        init_names = {t.name for t in model.graph.initializer}
        self.inputs = [v for v in model.graph.input if v.name not in init_names]
        self.input_names = [v.name for v in self.inputs]
        self.output_names = [o.name for o in model.graph.output]
        self.candidates = candidates
        self.split: Split | None = None  # the split that compiled last
        self.last_session: Path | None = None

    # -- inputs -------------------------------------------------------------------------
    def _values(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise ValueError(f"{self.source}: inputs {missing} are missing")
            given = [inputs[n] for n in self.input_names]
        else:
            given = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(given) != len(self.inputs):
                raise ValueError(f"{self.source}: {len(given)} input(s) given, the model "
                                 f"takes {len(self.inputs)} ({self.input_names})")
        values = {}
        for info, value in zip(self.inputs, given):
            dtype = _np_dtype(_elem_type(info) or _FLOAT)
            array = np.asarray(value)
            if array.dtype != dtype:
                if not np.can_cast(array.dtype, dtype, casting="same_kind"):
                    raise ValueError(f"{self.source}: input {info.name!r} is {array.dtype}, "
                                     f"the model declares {dtype}")
                array = array.astype(dtype)
            declared = _declared_shape(info)
            if declared is not None and (len(declared) != array.ndim or any(
                    d is not None and d != s for d, s in zip(declared, array.shape))):
                raise ValueError(f"{self.source}: input {info.name!r} has shape "
                                 f"{array.shape}, the model declares "
                                 f"{['?' if d is None else d for d in declared]}")
            values[info.name] = np.require(array, requirements="C")  # keeps 0-d arrays 0-d
        return values

    def freeze(self, split: Split, values: dict[str, np.ndarray]
               ) -> tuple[onnx.ModelProto, list[np.ndarray]]:
        """The model with the split's inputs made initializers holding `values`, the
        other inputs given the static shapes of their values; and the session's feeds."""
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        graph = model.graph
        keep_listed = model.ir_version < 4  # IR < 4: every initializer is a graph input
        init_names = {t.name for t in graph.initializer}
        new_inputs: list[onnx.ValueInfoProto] = []
        feeds: list[np.ndarray] = []
        for info in graph.input:
            if info.name in init_names:
                new_inputs.append(info)
                continue
            value = values[info.name]
            if info.name in split.frozen:
                graph.initializer.append(numpy_helper.from_array(value, info.name))
                if keep_listed:
                    new_inputs.append(_value_info(info.name, value))
            else:
                new_inputs.append(_value_info(info.name, value))
                feeds.append(value)
        del graph.input[:]
        graph.input.extend(new_inputs)
        return model, feeds

    def _ordered(self) -> list[Split]:
        if self.split is None:
            return list(self.candidates)
        return [self.split] + [s for s in self.candidates if s != self.split]

    def _unsupported(self, errors: list[tuple[Split, Exception]]) -> UnsupportedModelError:
        text = str(errors[0][1])
        for split, err in errors[1:]:
            text += (f"\n(also tried {split.describe(self.input_names)}: "
                     f"{str(err).splitlines()[0]})")
        return UnsupportedModelError(text)

    def frozen_model(self, inputs: Any) -> Frozen:
        """The frozen model and feeds of the first split Paleozoic's frontend accepts, as
        compile_model would see it (frontend, passes and plan are run; nothing is
        written or built); UnsupportedModelError if it accepts none."""
        from paleozoic.pipeline import load_queue, resolve_plan

        values = self._values(inputs)
        errors: list[tuple[Split, Exception]] = []
        for split in self._ordered():
            model, feeds = self.freeze(split, values)
            try:
                with _FRONTEND_LOCK:
                    queue = load_queue(model)
            except UnsupportedModelError as err:
                errors.append((split, err))
                continue
            self.split = split
            with _FRONTEND_LOCK:
                resolve_plan(queue, self.plan)
            return Frozen(model, feeds, len(queue.layers))
        raise self._unsupported(errors)

    # -- running -----------------------------------------------------------------------
    def outputs_from(self, by_name: dict[str, np.ndarray], prefix: str = "") -> tuple:
        """The session's outputs (by ONNX name) in graph-output order, float32, in the
        declared shapes."""
        results = []
        for info in self.model.graph.output:
            if prefix + info.name not in by_name:
                raise PaleozoicError(f"{self.source}: the session returned no output "
                                     f"{info.name!r} (it returned {sorted(by_name)})")
            value = by_name[prefix + info.name]
            declared = _declared_shape(info)
            # () too: a 0-d output is the session's one-element [1]
            if declared is not None and all(d is not None for d in declared) and \
                    int(np.prod(declared)) == value.size:
                value = value.reshape(declared)
            results.append(np.asarray(value, dtype=_np_dtype(_elem_type(info) or _FLOAT)))
        return namedtupledict("Outputs", self.output_names)(*results)

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        values = self._values(inputs)
        errors: list[tuple[Split, Exception]] = []
        for split in self._ordered():
            model, feeds = self.freeze(split, values)
            try:
                folder = self.cache.session(model, self.plan)
            except UnsupportedModelError as err:
                errors.append((split, err))
                continue
            self.split = split
            self.last_session = folder
            return self.outputs_from(run_built(folder, feeds))
        raise self._unsupported(errors)


def _consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    found: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            if name:
                found.setdefault(name, []).append((node, slot))
    return found


def candidate_splits(model: onnx.ModelProto) -> list[Split]:
    """The splits to try, in order (module docstring)."""
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    inputs = [v for v in graph.input if v.name not in init_names]
    consumers = _consumers(graph)
    must, integers = set(), set()
    for info in inputs:
        at_slot = any(
            slot in (ONNX_OPS[node.op_type].constant_slots if node.op_type in ONNX_OPS
                     else ())
            for node, slot in consumers.get(info.name, []))
        if _elem_type(info) != _FLOAT or at_slot:
            must.add(info.name)
        if _elem_type(info) in _RUNTIME_INTEGERS and not at_slot and info.name in consumers:
            integers.add(info.name)
    splits = [Split(frozenset(must))]
    runtime = [v.name for v in inputs if v.name not in must and v.name in consumers]
    if len(runtime) > 1:
        splits.append(Split(frozenset(v.name for v in inputs if v.name != runtime[0])))
    if integers:
        splits.append(Split(frozenset(must - integers)))
    return splits


# Integer (and bool) element types a session takes as inputs (host layers read them).
_RUNTIME_INTEGERS = (onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.UINT8,
                     onnx.TensorProto.BOOL)


def _computed_at_run_time(graph: onnx.GraphProto, frozen: frozenset[str]) -> list[int]:
    """Nodes that no constant folding can remove: those reading (through any chain) a
    run-time input's values. Shape and Size read only its shape, which is static."""
    init_names = {t.name for t in graph.initializer}
    dynamic = {v.name for v in graph.input if v.name not in init_names and
               v.name not in frozen}
    known = init_names | {v.name for v in graph.input}
    found = []
    for index, node in enumerate(graph.node):
        inputs = [name for name in node.input if name]
        if node.op_type in ("Shape", "Size") and node.domain in ("", "ai.onnx"):
            is_dynamic = False
        else:
            is_dynamic = any(name in dynamic or name not in known for name in inputs) or \
                any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                    for a in node.attribute)
        if is_dynamic:
            found.append(index)
            dynamic.update(node.output)
        known.update(node.output)
    return found


def _check_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str, list[Split]]:
    """The checks `prepare` makes before anything is compiled: the ONNX checker, the value
    types, and for each split (with placeholder values; the frontend sees the real ones
    at run time) the operators that compute on run-time values (Paleozoic's frontend
    folds everything else first) and, when there is nothing to fold, the attributes.
    Returns the splits that pass. Lenient where unsure: the frontend decides at run."""
    if not isinstance(model, onnx.ModelProto):
        raise ModelLoadError(f"expected an onnx.ModelProto, got {type(model).__name__}")
    proto, source = model, model.graph.name or "<model>"
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0]
        raise ModelLoadError(f"{source}: fails the ONNX checker: {first}") from None
    init_names = {t.name for t in proto.graph.initializer}
    outputs = {o.name for o in proto.graph.output}
    for info in list(proto.graph.input) + list(proto.graph.output):
        if info.name in init_names:
            continue
        kind = _elem_type(info)
        if kind is None:
            raise UnsupportedModelError(
                f"{source}: {info.name!r} is a {info.type.WhichOneof('value')}; Paleozoic "
                f"takes and returns tensors only")
        if info.name in outputs and kind not in _OUTPUT_TYPES:
            raise UnsupportedModelError(
                f"{source}: output {info.name!r} is "
                f"{_np_dtype(kind)}; a session's outputs are float32, or int64, int32, uint8 "
                f"or bool (the host layers')")
    for sparse in proto.graph.sparse_initializer:
        raise UnsupportedModelError(f"{source}: sparse initializer "
                                    f"{sparse.values.name!r} is not supported")
    inputs = {v.name: v for v in proto.graph.input if v.name not in init_names}
    passed, errors = [], []
    for split in candidate_splits(proto):
        dynamic = set(_computed_at_run_time(proto.graph, split.frozen))
        probe = onnx.ModelProto()
        probe.CopyFrom(proto)
        try:
            # Operators: those of the nodes folding cannot remove, as the frontend lists them.
            del probe.graph.node[:]
            probe.graph.node.extend(proto.graph.node[i] for i in sorted(dynamic))
            check_supported(probe, source)
            if all(n.op_type == "Constant" for i, n in enumerate(proto.graph.node)
                   if i not in dynamic):
                probe.CopyFrom(proto)  # the graph the frontend will check: no folding
                probe.graph.initializer.extend(
                    numpy_helper.from_array(_placeholder(inputs[n]), n)
                    for n in sorted(split.frozen))
                check_attributes(probe, source)
        except UnsupportedModelError as err:
            errors.append(err)
            continue
        passed.append(split)
    if not passed:
        raise errors[0]
    return proto, source, passed


class PaleozoicBackend(Backend):
    """onnx.backend.base.Backend over Paleozoic's emitted C++ sessions (CPU mock SDK)."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).split(":")[0].upper() in DEVICES

    @classmethod
    def _device(cls, device: str) -> None:
        if not cls.supports_device(device):
            raise ValueError(f"device {device!r} is not supported by Paleozoic's backend "
                             f"(supported: {', '.join(DEVICES)}: the mock SDK runs on "
                             f"the CPU)")

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU",
                      **kwargs: Any) -> bool:
        if not cls.supports_device(device):
            return False
        try:
            _check_model(model)
        except PaleozoicError:
            return False
        return True

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU",
                **kwargs: Any) -> PaleozoicBackendRep:
        """Checks the model and returns a rep (nothing is built until `run`). Keyword
        options: plan ("per-layer", "fuse-all" or a plan.json path), cache_dir, sdk
        ("mock", the default, or "onednn": paleozoic.runner.sdk)."""
        cls._device(device)
        proto, source, splits = _check_model(model)
        cache = SessionCache(kwargs.get("cache_dir"), sdk=str(kwargs.get("sdk", "mock")))
        return PaleozoicBackendRep(proto, source, splits,
                                   plan=str(kwargs.get("plan", DEFAULT_PLAN)), cache=cache)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple:
        """Runs one node: a one-node model over `inputs` (in the order of node.input,
        missing optional inputs skipped), opset `opset_version` (default: onnx's latest)."""
        cls._device(device)
        names = [n for n in node.input if n]
        if isinstance(inputs, dict):
            inputs = [inputs[n] for n in names]
        arrays = [np.asarray(v) for v in inputs]
        if len(arrays) != len(names):
            raise ValueError(f"node {node.name or node.op_type!r}: {len(arrays)} input(s) "
                             f"given for inputs {names}")
        opset = int(kwargs.pop("opset_version", onnx.defs.onnx_opset_version()))
        outputs = [n for n in node.output if n]
        if outputs_info is not None:
            out_infos = [helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape))
                for name, (dtype, shape) in zip(outputs, outputs_info)]
        else:
            out_infos = [helper.make_empty_tensor_value_info(n) for n in outputs]
        graph = helper.make_graph([node], f"{node.op_type.lower()}_node",
                                  [_value_info(n, a) for n, a in zip(names, arrays)],
                                  out_infos)
        model = helper.make_model_gen_version(
            graph, opset_imports=[helper.make_opsetid(node.domain or "", opset)])
        if outputs_info is None:
            inferred = onnx.shape_inference.infer_shapes(model)
            types = {v.name: v for v in inferred.graph.value_info}
            types.update({v.name: v for v in inferred.graph.output})
            for out in model.graph.output:
                if out.name in types and types[out.name].type.tensor_type.elem_type:
                    out.CopyFrom(types[out.name])
                else:
                    out.CopyFrom(helper.make_tensor_value_info(out.name, _FLOAT, None))
        return cls.prepare(model, device, **kwargs).run(arrays)


prepare = PaleozoicBackend.prepare
run_model = PaleozoicBackend.run_model
run_node = PaleozoicBackend.run_node
supports_device = PaleozoicBackend.supports_device
is_compatible = PaleozoicBackend.is_compatible
