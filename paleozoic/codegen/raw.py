"""The raw emission mode: the same session written as direct CNML/CNRT calls, no wrapper.

It exists to measure what the wrapper saves (the paper's Table 5 and Fig. 15). The raw form
is derived, not written a second time: the session is built through the runtime wrapper
(paleozoic._runtime) while the mock SDK records every call it makes (cnml_mock.h's call log),
and the recorded calls are printed as C++. So a layer kind's SDK call sequence lives in one
place, the wrapper, and both forms make the same calls with the same parameters: bit-identical
outputs and the same simulated device time by construction.

Recording phases, each printed into its section of templates/raw/session.cpp.j2: the inputs
and layers are built and their weights bound (sections 1 and 2), every block is compiled
(3) and run once with compute skipped (4: device buffers, 5: forwards), then the session is
dropped and the wrapper's destroy calls and frees are recorded (7). Handles are named after
what the caller was building when they were created (the log's scope): `<layer>_out`,
`<layer>_filter`, `<layer>_<weight role>`, `<layer>_param`, `<layer>_op`, `<block>_fusion`,
and a device buffer after the tensor it holds (`<tensor>_mlu`). Bound const data is matched
to the layer's weights by size and digest (the wrapper may copy it before binding); data
that is none of them and not all zeros is an error.

Only model loading (command line, weights.bin, input and output files) goes through the
runtime library, between `// paleozoic: model loading begin/end` markers that the line
counter skips.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from paleozoic.codegen.environment import cpp_float
from paleozoic.codegen.escape import Code, cpp_string
from paleozoic.codegen.names import cpp_ident
from paleozoic.errors import UnsupportedModelError
from paleozoic.ir import Layer, Model
from paleozoic.ir.plan import Precision
from paleozoic.ops import KINDS
from paleozoic.ops.recurrent import FAMILY as RECURRENT_KINDS

logger = logging.getLogger(__name__)

FLOAT_BYTES = 4
Record = dict[str, Any]


def _runtime() -> Any:
    from paleozoic.runner.sdk import runtime_module

    try:
        _runtime = runtime_module()
    except ImportError as error:
        raise RuntimeError(
            "emitting the raw form needs the built runtime extension (paleozoic._runtime): "
            "it records the SDK calls the wrapper makes; install Paleozoic with "
            "`pip install .` so the extension is built") from error
    return _runtime


def _elements(shape: Iterable[int]) -> int:
    count = 1
    for dim in shape:
        count *= int(dim)
    return count


@dataclass
class RawTensor:
    """A graph input or output: its descriptor and device buffer variables, for the host
    copies the template writes (model loading)."""

    name: str          # file name of the tensor (as the wrapper's Tensor::name())
    desc: str          # cnmlTensor_t variable
    mlu: str | None    # device buffer variable (None: no block reads or writes it)
    shape: tuple[int, ...]

    @property
    def elements(self) -> int:
        return _elements(self.shape)

    @property
    def bytes(self) -> int:
        return self.elements * FLOAT_BYTES


@dataclass
class RawBlockView:
    name: str
    const: str
    index: int
    fuse: bool
    mp: int
    summary: str
    compile: list[str] = field(default_factory=list)   # section 3
    forward: list[str] = field(default_factory=list)   # section 5, inside the run loop
    # A block of a stage runs on a queue of its own, pinned to its cores (affinity mask),
    # beside the stage's other blocks; the stage is synchronised after its last block.
    queue: str = "queue"
    stage: str = ""
    cores: str = ""      # the mask variable
    mask: int = 0
    invoke: str = ""     # its cnrtInvokeFuncParam_t
    sync: list[RawBlockView] = field(default_factory=list)  # synchronised after it

    @property
    def sync_times(self) -> str:
        """The device times of the blocks synchronised after this one, as C++."""
        return ", ".join(f"block_us[{b.index}]" for b in self.sync)


@dataclass
class RawLayerLines:
    name: str
    lines: list[str]


@dataclass
class _Scope:
    kind: str          # "input", "layer", "block" or "cleanup"
    ident: str
    layer: Layer | None = None
    block: RawBlockView | None = None


@dataclass
class _Handle:
    id: int
    type: str
    scope: str
    creator: Record
    role: str | None = None    # const tensors: the weight role bound to it
    name: str = ""

    @property
    def tensor_type(self) -> str | None:
        """CNML_TENSOR / CNML_FILTER / CNML_CONST of a descriptor (None for other handles)."""
        if self.type != "cnmlTensor_t":
            return None
        return next((a["v"] for a in self.creator["args"] if a["k"] == "enum"), None)


class _ScopedSession:
    """Stands in for a runtime Session while build_runtime_graph builds the graph: tags the
    call log with the input or layer each builder call makes, so its handles are named after
    it (a layer's weights are bound right after it is built, under the same tag)."""

    def __init__(self, session: Any, log: Any) -> None:
        self._session = session
        self._log = log

    def input(self, name: str, shape: list[int], dtype: str = "float32") -> Any:
        self._log.set_scope(f"input:{name}")
        return self._session.input(name, shape, dtype)

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self._session, attr)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            name = args[0] if args else kwargs.get("name")
            if isinstance(name, str):
                self._log.set_scope(f"layer:{name}")
            return target(*args, **kwargs)
        return call


@dataclass
class _Recording:
    construction: list[Record]
    compile: dict[str, list[Record]]
    run: dict[str, list[Record]]
    cleanup: list[Record]


def record_session(model: Model) -> _Recording:
    """Builds, compiles and runs (compute skipped) the model's session through the runtime
    wrapper, then drops it, recording the SDK calls of each phase."""
    rt = _runtime()
    with rt.CallLog(skip_compute=True) as log:
        construction, compiled, ran = _build_and_run(rt, log, model)
        # _build_and_run's session is gone now: these are the wrapper's destroys and frees.
        cleanup = json.loads(log.take())
    return _Recording(construction, compiled, ran, cleanup)


def _build_and_run(rt: Any, log: Any, model: Model,
                   ) -> tuple[list[Record], dict[str, list[Record]], dict[str, list[Record]]]:
    from paleozoic.runner.graph import build_runtime_graph

    queue = model.queue
    mixed = [(b.name, p) for b in model.blocks
             for p in {b.precision, *b.layer_precision.values()} if p is not Precision.FP32]
    if mixed:
        raise ValueError(f"the raw form is written for fp32 sessions; block {mixed[0][0]!r} "
                         f"computes in {mixed[0][1].value} (emit the wrapper form, whose "
                         f"blocks insert the casts between precisions)")
    recurrent = [layer.name for layer in queue.layers if KINDS[layer.kind] in RECURRENT_KINDS]
    if recurrent:
        raise UnsupportedModelError(
            f"the raw form cannot print the recurrent layer(s) {', '.join(recurrent)}: their "
            f"per-step SDK ops read filters and biases the wrapper derives from W, R and B "
            f"(per direction, the two biases summed), which weights.bin does not hold; emit "
            f"the wrapper form (the default)")
    session = rt.Session()
    layers = build_runtime_graph(queue, _ScopedSession(session, log), bind_weights=True,
                                 sparse=model.sparse_layers, preprocess=model.plan.preprocess)
    # The wrapper creates a layer's SDK op when its block compiles; the raw form declares
    # each op with its layer, so build them here, in the layer's scope.
    for layer, built in zip(queue.layers, layers):
        log.set_scope(f"layer:{layer.name}")
        built.build_op()
    construction = json.loads(log.take())
    by_name = {layer.name: built for layer, built in zip(queue.layers, layers)}
    blocks = []
    compiled: dict[str, list[Record]] = {}
    for block in model.blocks:
        log.set_scope(f"block:{block.name}")
        blocks.append(session.compile_block(block.name, block.fuse, block.mp,
                                            [by_name[layer.name] for layer in block.layers]))
        blocks[-1].data_parallelism = model.data_parallelism
        if model.channel is not None:
            blocks[-1].channel = model.channel
    # A stage's blocks are pinned to cores of their own, as pz::Stage does it.
    affinity = stage_affinities(model)
    for block, built in zip(model.blocks, blocks):
        if block.name in affinity:
            built.affinity = affinity[block.name]
        compiled[block.name] = json.loads(log.take())
    ran: dict[str, list[Record]] = {}
    for block, built in zip(model.blocks, blocks):
        log.set_scope(f"block:{block.name}")
        built.run()
        ran[block.name] = json.loads(log.take())
    log.set_scope("cleanup")
    return construction, compiled, ran


class RawPrinter:
    """Prints recorded SDK calls as C++ statements (one `CHECK(call);` line per call, arrays
    and handle declarations before it)."""

    def __init__(self, model: Model, unique_ident: Callable[[str], str],
                 scopes: dict[str, _Scope], digest: Callable[[np.ndarray], str]) -> None:
        self.model = model
        self.unique_ident = unique_ident
        self.scopes = scopes
        self.digest = digest
        self.handles: dict[int, _Handle] = {}
        self.binds: dict[int, str] = {}          # id(host arg) -> C++ expression
        self.arrays: dict[tuple[str, tuple[int, ...]], str] = {}
        self.zero_floats = 0
        self.invoke_name = "invoke"  # raw_context reserves a unique name
        self.block: RawBlockView | None = None  # whose forwards are being printed
        self._digests: dict[str, str] = {}
        # Host memory written by cnrtCastDataType (converted weights): digest -> variable,
        # and id(hostout arg) -> (variable, bytes) for its declaration.
        self.host_outputs: dict[str, str] = {}
        self.host_decls: dict[int, tuple[str, int]] = {}

    # ---- analysis -----------------------------------------------------------------------
    def analyse(self, records: list[Record]) -> None:
        for call in records:
            for arg in call["args"]:
                if arg["k"] == "new":
                    self.handles[arg["id"]] = _Handle(arg["id"], arg["type"], call["scope"], call)
        for call in records:
            if any(arg["k"] == "host" for arg in call["args"]):
                self._resolve_bind(call)
            for arg in call["args"]:
                if arg["k"] == "hostout":
                    scope = self.scopes.get(call["scope"])
                    var = self.unique_ident(f"{scope.ident if scope else 'host'}_converted")
                    self.host_outputs[arg["digest"]] = var
                    self.host_decls[id(arg)] = (var, int(arg["bytes"]))
        buffers_of: dict[int, int] = {}
        for call in records:
            for arg in call["args"]:
                if arg["k"] == "buffer":
                    buffers_of.setdefault(arg["id"], arg["of"])
                elif arg["k"] == "buffers":
                    for buf, tensor in zip(arg["ids"], arg["of"]):
                        buffers_of.setdefault(buf, tensor)
        for handle in self.handles.values():  # creation order: ids are sequential
            if handle.type != "void*":
                handle.name = self.unique_ident(self._base_name(handle))
        for handle in self.handles.values():
            if handle.type == "void*":
                tensor = self.handles.get(buffers_of.get(handle.id, 0))
                base = f"{tensor.name}_mlu" if tensor else "buffer"
                handle.name = self.unique_ident(base)
        created = {h for h in self.handles}
        destroyed = {arg["id"] for call in records for arg in call["args"] if arg["k"] == "del"}
        for left in sorted(created - destroyed):
            handle = self.handles[left]
            raise ValueError(f"{self._who(handle.scope)}: {handle.creator['fn']} creates a "
                             f"{handle.type} the wrapper never destroys; the raw session "
                             f"would leak it")

    def _who(self, scope: str) -> str:
        kind, _, name = scope.partition(":")
        return f"{kind} {name!r}" if name else kind

    def _base_name(self, handle: _Handle) -> str:
        scope = self.scopes.get(handle.scope)
        if scope is None:
            raise ValueError(f"{handle.creator['fn']} creates a {handle.type} outside any "
                             f"input, layer or block ({self._who(handle.scope)})")
        if handle.type == "cnmlTensor_t":
            if scope.kind == "input":
                return scope.ident
            if handle.tensor_type == "CNML_TENSOR":
                return f"{scope.ident}_out"
            if handle.tensor_type == "CNML_FILTER":
                return f"{scope.ident}_filter"
            return f"{scope.ident}_{handle.role or 'const'}"
        if handle.type == "cnmlBaseOp_t":
            return f"{scope.ident}_op"
        if handle.type == "cnmlFusionOp_t":
            return f"{scope.ident}_fusion"
        if handle.type.endswith("OpParam_t"):
            return f"{scope.ident}_param"
        if handle.type == "cnmlCpuTensor_t":  # a data-preprocess strategy's host twin
            return f"{scope.ident}_twin"
        return f"{scope.ident}_{handle.type.removesuffix('_t').removeprefix('cnml').lower()}"

    def _resolve_bind(self, call: Record) -> None:
        scope = self.scopes.get(call["scope"])
        layer = scope.layer if scope else None
        if layer is None:
            raise ValueError(f"{call['fn']} binds const data outside a layer "
                             f"({self._who(call['scope'])})")
        tensor_id = next((a["id"] for a in call["args"] if a["k"] == "handle"), None)
        host = next(a for a in call["args"] if a["k"] == "host")
        if host["digest"] in self.host_outputs:
            # Bytes a cnrtCastDataType wrote earlier (a weight converted to fp16 or int8).
            self.binds[id(host)] = f"{self.host_outputs[host['digest']]}.data()"
            return
        weights = self.model.queue.weights
        used = {h.role for h in self.handles.values() if h.scope == call["scope"] and h.role}
        matches = [role for role, key in layer.weights.items()
                   if np.asarray(weights[key]).size * FLOAT_BYTES == host["bytes"]
                   and self._digest(key) == host["digest"]]
        matches.sort(key=lambda role: role in used)  # stable: unused roles first
        handle = self.handles.get(tensor_id) if tensor_id is not None else None
        if call["fn"] == "cnrtCastDataType":
            handle = None  # the converted copy, not a tensor, carries the weight
        if matches:
            role = matches[0]
            key = layer.weights[role]
            shape = ", ".join(str(int(d)) for d in np.shape(weights[key]))
            self.binds[id(host)] = (f"const_cast<float*>(weights.get({cpp_string(key)}, "
                                    f"{{{shape}}}).data)")
        elif host["zero"]:
            # The wrapper binds zeros for an absent optional weight (a conv without bias).
            missing = [r for r in KINDS[layer.kind].optional_roles if r not in layer.weights]
            role = missing[0] if len(missing) == 1 else None
            self.zero_floats = max(self.zero_floats, host["bytes"] // FLOAT_BYTES)
            self.binds[id(host)] = "zeros.data()"
        else:
            raise ValueError(
                f"layer {layer.name!r}: {call['fn']} binds {host['bytes']} bytes that are "
                f"none of the layer's weights ({', '.join(layer.weights) or 'it has none'}) "
                f"and not zeros, so the raw session cannot name them")
        if handle is not None and role is not None:
            handle.role = role

    def _digest(self, key: str) -> str:
        if key not in self._digests:
            self._digests[key] = self.digest(np.ascontiguousarray(
                self.model.queue.weights[key], dtype=np.float32))
        return self._digests[key]

    # ---- printing -------------------------------------------------------------------------
    def name(self, handle_id: int, call: Record) -> str:
        handle = self.handles.get(handle_id)
        if handle is None:
            raise ValueError(f"{self._who(call['scope'])}: {call['fn']} uses a handle that was "
                             f"not created while recording")
        return handle.name

    def declarations(self, records: list[Record], per_handle: bool = False) -> list[str]:
        """`T a = nullptr, b = nullptr;` for the handles `records` create, one line per type
        in order of first creation (or one per handle)."""
        by_type: dict[str, list[str]] = {}
        for call in records:
            for arg in call["args"]:
                if arg["k"] == "new":
                    handle = self.handles[arg["id"]]
                    by_type.setdefault(handle.type, []).append(handle.name)
        if per_handle:
            return [f"{t} {n} = nullptr;" for t, names in by_type.items() for n in names]
        return [f"{t} " + ", ".join(f"{n} = nullptr" for n in names) + ";"
                for t, names in by_type.items()]

    def call(self, call: Record) -> tuple[list[str], str]:
        """(array declarations the call needs, the call's line)."""
        pre: list[str] = []
        owner = next((self.name(a["id"], call) for a in call["args"]
                      if a["k"] in ("new", "handle", "ref")), None)
        args = [self._arg(arg, call, owner, pre) for arg in call["args"]]
        return pre, Code(f"CHECK({_sdk_name(call['fn'])}({', '.join(args)}));")

    def _arg(self, arg: Record, call: Record, owner: str | None, pre: list[str]) -> str:
        kind = arg["k"]
        if kind == "int":
            scope = self.scopes.get(call["scope"])
            if arg.get("hint") == "core_limit" and scope is not None and scope.block:
                if arg["v"] != scope.block.mp:
                    raise ValueError(f"block {scope.block.name!r}: compiled for {arg['v']} "
                                     f"cores, the plan says {scope.block.mp}")
                return f"k{scope.block.const}Mp"
            return str(arg["v"])
        if kind == "bool":
            if call["fn"] == "cnmlBindConstData_V2":
                # free_aftercompile: the raw session binds views of its weights file, which
                # the SDK must not free().
                return "false"
            return "true" if arg["v"] else "false"
        if kind == "enum":
            return _sdk_name(arg["v"])
        if kind == "double":
            value = float(arg["v"])
            if math.isinf(value):  # a Clip's open side
                return ("-" if value < 0 else "") + "std::numeric_limits<double>::infinity()"
            if not math.isfinite(value):
                raise ValueError(f"{call['fn']}: cannot print the non-finite {value}")
            return repr(value)
        if kind == "float":
            return cpp_float(float(arg["v"])) + "f"
        if kind == "null":
            return "nullptr"
        if kind == "queue":
            return self.block.queue if self.block is not None else "queue"
        if kind == "invoke":
            if arg["dp"] != self.model.data_parallelism:
                raise ValueError(f"{call['fn']}: a forward at data parallelism {arg['dp']} in a "
                                 f"session at {self.model.data_parallelism}")
            block = self.block
            if arg.get("affinity", 0) != (block.mask if block is not None else 0):
                raise ValueError(f"{call['fn']}: a forward pinned to cores "
                                 f"{arg.get('affinity', 0):#x}, not its block's")
            return f"&{block.invoke if block is not None and block.mask else self.invoke_name}"
        if kind in ("new", "ref"):
            return f"&{self.name(arg['id'], call)}"
        if kind == "handle":
            return self.name(arg["id"], call)
        if kind == "del":
            return ("&" if arg["addr"] else "") + self.name(arg["id"], call)
        if kind == "buffer":
            return self.name(arg["id"], call)
        if kind == "host":
            return self.binds[id(arg)]
        if kind == "ints":
            var = self.unique_ident(f"{owner or 'array'}_{arg['hint']}")
            pre.append(f"int {var}[] = {{{', '.join(str(v) for v in arg['v'])}}};")
            return var
        if kind == "floats":
            var = self.unique_ident(f"{owner or 'array'}_{arg['hint']}")
            values = ", ".join(cpp_float(float(v)) + "f" for v in arg["v"])
            pre.append(f"float {var}[] = {{{values}}};")
            return var
        if kind == "hostout":
            var, nbytes = self.host_decls[id(arg)]
            pre.append(f"std::vector<unsigned char> {var}({nbytes});")
            return f"{var}.data()"
        if kind in ("tensors", "buffers"):
            names = [self.name(i, call) for i in arg["ids"]]
            if len(names) == 1:
                return f"&{names[0]}"
            ctype = "cnmlTensor_t" if kind == "tensors" else "void*"
            key = (ctype, tuple(arg["ids"]))
            if key not in self.arrays:
                var = self.unique_ident(f"{owner or 'array'}_{arg['hint']}")
                self.arrays[key] = var
                pre.append(f"{ctype} {var}[] = {{{', '.join(names)}}};")
            return self.arrays[key]
        raise ValueError(f"{call['fn']}: cannot print an argument of kind {kind!r}")

    def lines(self, records: list[Record], declare: bool = True) -> list[str]:
        out = self.declarations(records) if declare else []
        for record in records:
            pre, line = self.call(record)
            out += pre + [line]
        return out


def _sdk_name(name: str) -> str:
    """A function or enumerator name from the call log, which the printer pastes as code:
    the SDK's own names are identifiers, anything else is a corrupt log."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
        raise ValueError(f"the SDK call log holds {name!r} where a function or enumerator "
                         f"name belongs; the runtime extension is corrupt or mismatched")
    return name


def _group(records: list[Record]) -> list[tuple[str, list[Record]]]:
    """Consecutive records of one scope, in order."""
    groups: list[tuple[str, list[Record]]] = []
    for record in records:
        if groups and groups[-1][0] == record["scope"]:
            groups[-1][1].append(record)
        else:
            groups.append((record["scope"], [record]))
    return groups


def stage_affinities(model: Model) -> dict[str, int]:
    """Block name -> the mask of cores pz::Stage pins it to: each stage's blocks take
    consecutive cores from core 0, data parallelism x MP each."""
    mp = {block.name: block.mp for block in model.blocks}
    masks: dict[str, int] = {}
    for stage in model.stages:
        first = 0
        for name in stage:
            cores = mp[name] * model.data_parallelism
            masks[name] = ((1 << cores) - 1) << first
            first += cores
    return masks


def raw_context(model: Model, unique_ident: Callable[[str], str],
                block_views: list[Any]) -> dict:
    """What templates/raw/session.cpp.j2 sees, beyond the common header fields."""
    rt = _runtime()
    recording = record_session(model)
    queue = model.queue
    # Scope idents are name stems; unique_ident makes each handle's full name unique.
    scopes: dict[str, _Scope] = {}
    for info in model.inputs:
        scopes[f"input:{info.name}"] = _Scope("input", cpp_ident(info.name))
    for layer in queue.layers:
        scopes[f"layer:{layer.name}"] = _Scope("layer", cpp_ident(layer.name), layer=layer)
    blocks: list[RawBlockView] = []
    for index, (block, view) in enumerate(zip(model.blocks, block_views)):
        raw = RawBlockView(block.name, view.const, index, block.fuse, block.mp, view.summary)
        scopes[f"block:{block.name}"] = _Scope(
            "block", f"{view.const[0].lower()}{view.const[1:]}", block=raw)
        blocks.append(raw)
    scopes["cleanup"] = _Scope("cleanup", "cleanup")

    everything = (recording.construction
                  + [r for b in model.blocks for r in recording.compile[b.name]]
                  + [r for b in model.blocks for r in recording.run[b.name]]
                  + recording.cleanup)
    printer = RawPrinter(model, unique_ident, scopes, rt.data_digest)
    # The forwards' cnrtInvokeFuncParam_t and the int it points at (data parallelism > 1 or
    # stages, whose blocks each have a param of their own with their cores).
    frames_name = ""
    if model.data_parallelism > 1 or model.stages:
        frames_name = unique_ident("data_parallelism")
    if model.data_parallelism > 1:
        printer.invoke_name = unique_ident("invoke")
    affinity = stage_affinities(model)
    by_name = {block.name: block for block in blocks}
    for number, stage in enumerate(model.stages):
        for name in stage:
            raw = by_name[name]
            stem = f"{raw.const[0].lower()}{raw.const[1:]}"
            raw.stage = f"stage{number}"
            raw.queue = unique_ident(f"{stem}_queue")
            raw.cores = unique_ident(f"{stem}_cores")
            raw.mask = affinity[name]
            raw.invoke = unique_ident(f"{stem}_invoke")
        by_name[stage[-1]].sync = [by_name[name] for name in stage]
    for raw in blocks:
        if not raw.stage:
            raw.sync = [raw]
    printer.analyse(everything)

    io_lines: list[str] = []
    layers: list[RawLayerLines] = []
    for scope, records in _group(recording.construction):
        lines = printer.lines(records)
        if scopes.get(scope) is not None and scopes[scope].kind == "layer":
            layers.append(RawLayerLines(scope.partition(":")[2], lines))
        else:
            io_lines += lines
    for block in blocks:
        block.compile = printer.lines(recording.compile[block.name])
    buffers: list[str] = []
    run_arrays: list[str] = []
    for block in blocks:
        printer.block = block
        for record in recording.run[block.name]:
            pre, line = printer.call(record)
            if any(arg["k"] == "new" for arg in record["args"]):
                # Buffers are allocated once, before the timed runs.
                buffers += printer.declarations([record], per_handle=True) + pre + [line]
            else:
                run_arrays += pre  # hoisted out of the run loop
                block.forward.append(line)
    printer.block = None
    cleanup = printer.lines(recording.cleanup, declare=False)

    def io_tensor(name: str, file_name: str, scope: str) -> RawTensor:
        created = [h for h in printer.handles.values()
                   if h.scope == scope and h.tensor_type == "CNML_TENSOR"]
        if len(created) != 1:
            raise ValueError(f"{printer._who(scope)}: expected one activation descriptor, "
                             f"the wrapper made {len(created)}")
        tensor = created[0]
        mlu = next((h.name for h in printer.handles.values() if h.type == "void*"
                    and h.name == f"{tensor.name}_mlu"), None)
        return RawTensor(file_name, tensor.name, mlu, tuple(queue.shape(name)))

    producer = {layer.output: layer for layer in queue.layers}
    inputs = [io_tensor(info.name, info.name, f"input:{info.name}") for info in model.inputs]
    outputs = []
    for name in queue.outputs:
        if name in producer:
            outputs.append(io_tensor(name, producer[name].name, f"layer:{producer[name].name}"))
        else:
            outputs.append(io_tensor(name, name, f"input:{name}"))
    for tensor in inputs + outputs:
        if tensor.mlu is None:
            raise ValueError(f"tensor {tensor.name!r} is a graph input or output that no "
                             f"block reads or writes; the raw session has no buffer for it")
    return dict(raw_inputs=inputs, raw_outputs=outputs, raw_io=io_lines, raw_layers=layers,
                raw_blocks=blocks, raw_buffers=buffers, raw_run_arrays=run_arrays,
                raw_cleanup=cleanup, zero_bias=printer.zero_floats,
                raw_invoke=printer.invoke_name, raw_frames=frames_name,
                raw_staged=[b for b in blocks if b.stage])


def raw_title(title: str) -> str:
    return f"{title} (raw CNML/CNRT form)"


__all__ = ["RawBlockView", "RawLayerLines", "RawPrinter", "RawTensor", "raw_context",
           "raw_title", "record_session"]
