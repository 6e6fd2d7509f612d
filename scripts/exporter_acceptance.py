"""Acceptance run for exporter-made ONNX models (PyTorch, paddle2onnx, ...): for each model,
the ONNX checker, the op types and notable patterns it uses, then
`paleozoic compile --plan fuse-all` -> `paleozoic build` -> `paleozoic verify` against
onnxruntime, each through the command line in a subprocess (exit codes as documented).

    python scripts/exporter_acceptance.py /work/exported/torch /work/exported/paddle \
        -o report.md --json results.json

Status per model:
    PASS         verify passed (max abs error shown)
    FAIL         the session ran, outputs differ from onnxruntime (max abs / rel error)
    UNSUPPORTED  compile refused the model (exit 2/3/4); the note is Paleozoic's error
    ERROR        build failed, the session failed at run time, a crash or a timeout

Runs with the project's Python (paleozoic installed). Work folders go to --work (outside
the repository by default) and are removed after each model unless --keep.

A model's own compile options (its symbolic axes, an input a control-flow node checks) are
read from NAME.options beside it when there is one (scripts/export_families.py writes them).

Options for models with symbolic dimensions:
    --input-shape / --batch   passed through to `paleozoic compile` and `verify` if the
                              installed command line has those options (else ignored with
                              a warning: such models then report UNSUPPORTED).
    --fix-batch N             a workaround of this script, not of Paleozoic: compile a
                              copy of the model whose symbolic input/output dims are set
                              to N (the note says so).
    --sanitize-names          a workaround of this script: compile a copy whose tensor
                              names have '::' replaced by '_' (legacy torch exporter's
                              'onnx::Conv_123' initializers); the note says so.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import onnx

STATUS_ORDER = ("PASS", "FAIL", "UNSUPPORTED", "ERROR", "-")


@dataclass
class Result:
    model: str
    path: str
    group: str
    opset: int = 0
    nodes: int = 0
    inputs: str = ""
    checker: str = ""
    ops: dict[str, int] = field(default_factory=dict)
    patterns: list[str] = field(default_factory=list)
    status: str = ""
    stage: str = ""
    exit_code: int | None = None
    compile_s: float | None = None
    build_s: float | None = None
    verify_s: float | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    outputs: list[dict] = field(default_factory=list)
    error: list[str] = field(default_factory=list)
    workarounds: list[str] = field(default_factory=list)


# ---- model inspection -------------------------------------------------------------------

def group_of(path: Path) -> str:
    """Where a model came from: its folder's name, '-dynamo' for the torch.export-based
    exporter's files (named *_dynamo_*)."""
    group = path.parent.name or "."
    if "_dynamo_" in path.stem:
        group += "-dynamo"
    return group


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _fmt(value) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return "[" + ",".join(_fmt(v) for v in value) + "]"
    return str(value)


def all_nodes(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from all_nodes(g)


def patterns_of(model: onnx.ModelProto) -> list[str]:
    """Notable exporter patterns, each a short label (attributes in the label)."""
    graph = model.graph
    producer = {out: n for n in graph.node for out in n.output}
    consumers: dict[str, list[onnx.NodeProto]] = collections.defaultdict(list)
    for n in graph.node:
        for i in n.input:
            consumers[i].append(n)
    inits = {t.name for t in graph.initializer}
    const_out = {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    found: set[str] = set()

    # shape tensors: outputs of Shape, and of nodes whose non-constant inputs all are
    shape_vals: set[str] = set()
    for n in graph.node:
        live = [i for i in n.input if i and i not in inits and i not in const_out]
        if n.op_type == "Shape" or (live and all(i in shape_vals for i in live)):
            shape_vals.update(n.output)

    def chain(name: str, depth: int = 0) -> list[str]:
        node = producer.get(name)
        if node is None or depth > 12:
            return []
        if node.op_type == "Shape":
            return ["Shape"]
        for i in node.input:
            sub = chain(i, depth + 1) if i in shape_vals else []
            if sub:
                return sub + [node.op_type]
        return []

    def kind(name: str) -> str:
        if not name:
            return "absent"
        if name in inits:
            return "initializer"
        if name in const_out:
            return "Constant"
        return "computed"

    for value in graph.input:
        if value.name in inits:
            continue
        dims = value.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") for d in dims):
            found.add("symbolic input dims")
    if any("::" in t.name for t in graph.initializer):
        found.add("initializer names with '::' (onnx::Conv_N)")

    for n in graph.node:
        op, a = n.op_type, _attrs(n)
        if op == "Clip":
            if len(n.input) > 1:
                found.add("Clip min/max as inputs (" + "/".join(
                    kind(i) for i in list(n.input[1:3]) + [""] * (3 - len(n.input)))[:60] + ")")
            else:
                found.add(f"Clip min/max as attributes ({a.get('min')}, {a.get('max')})")
        if n.output and n.output[0] not in shape_vals:
            for k, i in enumerate(n.input):
                if i in shape_vals:
                    found.add("shape arithmetic: " + "->".join(chain(i)) + f"->{op} input {k}")
        if op == "Reshape":
            if n.input[1] in shape_vals:
                pass
            elif kind(n.input[1]) == "computed":
                found.add("Reshape shape computed (no Shape op)")
            else:
                found.add(f"Reshape shape from {kind(n.input[1])}")
        elif op == "Flatten":
            found.add(f"Flatten axis={a.get('axis', 1)}")
        elif op == "Gemm":
            found.add("Gemm " + " ".join(f"{k}={_fmt(a[k])}" for k in
                                         ("transA", "transB", "alpha", "beta") if k in a))
        elif op == "MatMul":
            nxt = [c.op_type for c in consumers[n.output[0]]]
            found.add("MatMul" + (" -> Add (no Gemm)" if nxt == ["Add"] else ""))
        elif op == "Pad":
            found.add(f"Pad mode={_fmt(a.get('mode', b'constant'))} pads="
                      f"{'attr' if 'pads' in a else kind(n.input[1]) if len(n.input) > 1 else '?'}")
        elif op == "Sigmoid":
            for c in consumers[n.output[0]]:
                if c.op_type == "Mul" and n.input[0] in c.input:
                    found.add("SiLU: Mul(x, Sigmoid(x))")
                elif c.op_type == "Mul":
                    found.add("Mul with Sigmoid gate (squeeze-excitation)")
            if not consumers[n.output[0]] or n.output[0] in {o.name for o in graph.output}:
                found.add("Sigmoid as graph output")
        elif op == "HardSigmoid":
            gated = any(c.op_type == "Mul" and n.input[0] in c.input
                        for c in consumers[n.output[0]])
            found.add(f"HardSigmoid alpha={a.get('alpha', 0.2):.4g} beta={a.get('beta', 0.5):.4g}"
                      + (" -> Mul(x, .) (HardSwish decomposed)" if gated else ""))
        elif op in ("HardSwish", "GlobalAveragePool", "GlobalMaxPool", "Identity", "Dropout",
                    "Constant", "Shape", "Softmax", "LogSoftmax", "Split", "Slice", "Gather",
                    "ConstantOfShape", "Expand", "Where", "Equal", "Cast"):
            found.add(op)
        elif op in ("ReduceMean", "ReduceSum", "ReduceMax"):
            axes = _fmt(a["axes"]) if "axes" in a else (
                f"input({kind(n.input[1])})" if len(n.input) > 1 else "all")
            found.add(f"{op} axes={axes} keepdims={a.get('keepdims', 1)}")
        elif op == "Resize":
            names = ["roi", "scales", "sizes"]
            given = [f"{names[i - 1]}" for i in range(1, len(n.input))
                     if n.input[i] and i <= 3]
            found.add("Resize " + " ".join(
                f"{k}={_fmt(a[k])}" for k in ("mode", "coordinate_transformation_mode",
                                              "nearest_mode", "antialias",
                                              "keep_aspect_ratio_policy") if k in a)
                      + f" inputs={'+'.join(given)}")
        elif op == "Upsample":
            found.add(f"Upsample mode={_fmt(a.get('mode', b'nearest'))}")
        elif op == "ConvTranspose":
            found.add("ConvTranspose " + " ".join(f"{k}={_fmt(a[k])}" for k in sorted(a)
                                                  if k not in ("kernel_shape",)))
        elif op == "Conv":
            group = a.get("group", 1)
            if group > 1:
                found.add("Conv group>1 (depthwise or grouped)")
            if "auto_pad" in a and _fmt(a["auto_pad"]) != "NOTSET":
                found.add(f"Conv auto_pad={_fmt(a['auto_pad'])}")
            if any(d != 1 for d in a.get("dilations", [1, 1])):
                found.add("Conv dilations>1")
            pads = a.get("pads", [0, 0, 0, 0])
            if len(pads) == 4 and (pads[0] != pads[2] or pads[1] != pads[3]):
                found.add("Conv asymmetric pads")
        elif op in ("MaxPool", "AveragePool"):
            extra = [f"{k}={_fmt(a[k])}" for k in ("ceil_mode", "count_include_pad", "auto_pad")
                     if k in a and _fmt(a[k]) not in ("0", "NOTSET")]
            pads = a.get("pads", [0, 0, 0, 0])
            if any(pads):
                extra.append("padded")
            found.add(op + (" " + " ".join(extra) if extra else ""))
        elif op == "BatchNormalization":
            found.add("BatchNormalization (not folded into Conv)")
        elif op == "Transpose":
            found.add(f"Transpose perm={_fmt(a.get('perm', []))}")
        elif op == "Concat":
            found.add(f"Concat axis={a.get('axis')}")
        elif op == "Mul":
            ins = [kind(i) for i in n.input]
            if "initializer" in ins or "Constant" in ins:
                found.add("Mul by constant")
        elif op == "Add":
            ins = [kind(i) for i in n.input]
            if ins.count("computed") == 2:
                found.add("Add of two activations (residual)")
            else:
                found.add("Add of a constant (bias)")
    return sorted(found)


def inspect_model(path: Path, result: Result) -> onnx.ModelProto | None:
    try:
        model = onnx.load(str(path))
    except Exception as err:  # noqa: BLE001
        result.checker = f"load failed: {type(err).__name__}: {err}".splitlines()[0][:200]
        return None
    try:
        onnx.checker.check_model(str(path), full_check=True)
        result.checker = "ok"
    except Exception as err:  # noqa: BLE001
        result.checker = f"{type(err).__name__}: {err}".strip().splitlines()[0][:200]
    result.opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                       default=0)
    inits = {t.name for t in model.graph.initializer}
    shapes = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                for d in value.type.tensor_type.shape.dim]
        shapes.append(f"{value.name}[{','.join(dims)}]")
    result.inputs = " ".join(shapes)
    nodes = list(all_nodes(model.graph))
    result.nodes = len(nodes)
    result.ops = dict(collections.Counter(
        n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}" for n in nodes))
    result.patterns = patterns_of(model)
    return model


# ---- workarounds (on copies; never applied unless asked) --------------------------------

def rewrite_copy(model: onnx.ModelProto, dest: Path, fix_batch: int | None,
                 sanitize: bool) -> list[str]:
    done = []
    if sanitize:
        names = {t.name for t in model.graph.initializer}
        names |= {v.name for v in model.graph.input} | {v.name for v in model.graph.output}
        names |= {x for n in model.graph.node for x in (*n.input, *n.output)}
        renamed = {name: name.replace("::", "_") for name in names if "::" in name}
        if renamed:
            for t in model.graph.initializer:
                t.name = renamed.get(t.name, t.name)
            for v in (*model.graph.input, *model.graph.output, *model.graph.value_info):
                v.name = renamed.get(v.name, v.name)
            for n in model.graph.node:
                for i, x in enumerate(n.input):
                    n.input[i] = renamed.get(x, x)
                for i, x in enumerate(n.output):
                    n.output[i] = renamed.get(x, x)
            done.append(f"renamed {len(renamed)} '::' names")
    if fix_batch is not None:
        fixed = 0
        for v in (*model.graph.input, *model.graph.output):
            for d in v.type.tensor_type.shape.dim:
                if not d.HasField("dim_value"):
                    d.dim_value = fix_batch
                    fixed += 1
        if fixed:
            del model.graph.value_info[:]
            done.append(f"fixed {fixed} symbolic dims to {fix_batch}")
    if done:
        onnx.save(model, str(dest))
    return done


# ---- the paleozoic command line ---------------------------------------------------------

def pz_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "paleozoic", *args]


def cli_options(sub: str) -> str:
    out = subprocess.run(pz_command(sub, "--help"), check=False, capture_output=True, text=True)
    return out.stdout


def run_stage(command: list[str], timeout: float) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired as err:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return -999, text(err.stdout), text(err.stderr) + f"\ntimeout after {timeout:.0f}s", \
            time.perf_counter() - t0


UNSUPPORTED_NODE = re.compile(r"^\s+node '.*': (?P<op>\S+)$")


def error_lines(stderr: str, stdout: str = "", limit: int = 6, model: str = "") -> list[str]:
    """Paleozoic's message, compacted: no 'paleozoic X: error: MODEL: ' prefix, no
    'supported: ...' list, an unsupported-operator list summarised by op type."""
    text = stderr.strip() or stdout.strip()
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    # a Python traceback: the exception line first, then the last frames
    tb = [i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent")]
    if tb:
        tail = lines[tb[-1]:]
        return [tail[-1][:300]] + [ln[:300] for ln in tail[-limit:-1]]
    # a compiler log: its first error lines first
    errors = [ln.strip() for ln in lines if re.search(r":\d+:\d+: (fatal )?error:", ln)]
    if errors:
        return [re.sub(r"^\S*/", "", ln)[:300] for ln in errors][:limit]
    lines = [ln for ln in lines if not ln.startswith("supported:")]
    if lines:
        lines[0] = re.sub(r"^paleozoic \w+: error: ", "", lines[0])
        if model and lines[0].startswith(model + ": "):
            lines[0] = lines[0][len(model) + 2:]
    ops = collections.Counter(m["op"] for ln in lines if (m := UNSUPPORTED_NODE.match(ln)))
    if ops:
        summary = "unsupported ops: " + ", ".join(
            f"{op}" + (f" x{n}" if n > 1 else "") for op, n in ops.most_common())
        lines = [summary] + [ln for ln in lines if not UNSUPPORTED_NODE.match(ln)
                             and "use operators Paleozoic does not support" not in ln]
    return [ln[:300] for ln in lines][:limit]


def model_options(path: Path) -> list[str]:
    """The compile options a model needs, from NAME.options beside it (written by the
    exporter: --input-shape of symbolic axes, --input-value of a sample rate an If checks)."""
    options = path.with_suffix(".options")
    return shlex.split(options.read_text()) if options.is_file() else []


def run_paleozoic(path: Path, result: Result, work: Path, args, passthrough: list[str],
                  verify_passthrough: list[str]) -> None:
    out = work / "session"
    own = model_options(path)
    if own:
        result.workarounds.append(f"compiled with {path.with_suffix('.options').name}: "
                                  f"{' '.join(own)}")
        passthrough = [*passthrough, *own]
    code, so, se, dt = run_stage(pz_command("compile", str(path), "-o", str(out), "--plan",
                                            args.plan, "--force", *passthrough), args.timeout)
    result.compile_s = round(dt, 2)
    if code != 0:
        result.stage, result.exit_code = "compile", code
        result.status = "UNSUPPORTED" if code in (2, 3, 4) else "ERROR"
        result.error = error_lines(se, so, model=str(path))
        return
    code, so, se, dt = run_stage(pz_command("build", str(out), "--sdk", args.sdk), args.timeout)
    result.build_s = round(dt, 2)
    if code != 0:
        result.stage, result.exit_code, result.status = "build", code, "ERROR"
        result.error = error_lines(se, so, limit=10, model=str(out))
        return
    report_path = out / "verify.json"
    code, so, se, dt = run_stage(pz_command("verify", str(out), "--seed", str(args.seed),
                                            "--model", str(path), "--json", str(report_path),
                                            *(["--float64"] if args.float64 else []),
                                            *verify_passthrough),
                                 args.timeout)
    result.verify_s = round(dt, 2)
    result.exit_code = code
    if report_path.is_file():
        for o in json.loads(report_path.read_text())["outputs"]:
            result.outputs.append({"name": o["name"], "shape": str(o["shape"]),
                                   "max_abs": o["max_abs"], "max_rel": o["max_rel"],
                                   "passed": o["passed"], "note": o["note"],
                                   "truth_error": o["truth_error"],
                                   "ort_truth_error": o["ort_truth_error"]})
    if result.outputs:
        result.max_abs = max(o["max_abs"] for o in result.outputs)
        result.max_rel = max(o["max_rel"] for o in result.outputs)
    if code == 0:
        result.status = "PASS"
        for o in result.outputs:
            if o["note"]:
                result.error.append(f"{o['name']}: {o['note']}")
    elif code == 1 and result.outputs:
        result.stage, result.status = "verify", "FAIL"
        bad = [o for o in result.outputs if not o["passed"]]
        result.error = [f"{o['name']} {o['shape']}: max abs {o['max_abs']:.3e}, "
                        f"max rel {o['max_rel']:.3e}" for o in bad]
    else:
        result.stage, result.status = "verify", "ERROR"
        result.error = error_lines(se, so, model=str(out))


# ---- reporting --------------------------------------------------------------------------

def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "" if value is None else fmt.format(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _truth(r: Result) -> str:
    """The worst output's error against the float64 truth (relative to its largest value),
    ours and onnxruntime's; empty without --float64."""
    pairs = [(o["truth_error"], o["ort_truth_error"]) for o in r.outputs
             if o.get("truth_error") is not None]
    if not pairs:
        return ""
    ours, ort = max(pairs)
    return f"{ours:.1e} / {ort:.1e}" if ort is not None else f"{ours:.1e}"


def markdown(results: list[Result], header: str) -> str:
    try:
        from paleozoic.frontend.support import ONNX_OPS
        supported: set[str] | None = set(ONNX_OPS)
    except Exception:  # noqa: BLE001
        supported = None
    lines = [header, ""]
    counts = collections.Counter(r.status for r in results)
    lines.append(", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s])
                 + f" of {len(results)} models")
    lines += ["", ("| model | group | opset | nodes | checker | status | compile s | build s | "
                   "verify s | max abs err | vs float64: ours / ort | note |"),
              "| --- | --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        note = "; ".join(r.workarounds)
        if r.error:
            note = (note + "; " if note else "") + (f"{r.stage}: " if r.stage else "") \
                + r.error[0]
        lines.append("| " + " | ".join(_cell(c) for c in (
            r.model, r.group, str(r.opset), str(r.nodes),
            "ok" if r.checker == "ok" else r.checker[:60], r.status,
            _num(r.compile_s), _num(r.build_s), _num(r.verify_s),
            _num(r.max_abs, "{:.2e}"), _truth(r), note[:220])) + " |")

    groups = sorted({r.group for r in results})
    union: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        for op in r.ops:
            union[op][r.group] += 1
    lines += ["", f"### ONNX op types ({len(union)}): number of models using each", "",
              ("in support list: paleozoic's ONNX_OPS (ops folded away before that "
              "check, like Shape chains, can pass without being listed); in a PASS model: "
              "used by at least one model that passed here"), "",
              "| op | models | " + " | ".join(groups) + " | in support list | in a PASS model |",
              "| --- | ---: | " + " | ".join("---:" for _ in groups) + " | --- | --- |"]
    passed_ops = {op for r in results if r.status == "PASS" for op in r.ops}
    for op, per in sorted(union.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        sup = "" if supported is None else ("yes" if op in supported else "no")
        lines.append(f"| {op} | {sum(per.values())} | "
                     + " | ".join(str(per.get(g, "")) for g in groups)
                     + f" | {sup} | {'yes' if op in passed_ops else '**no**'} |")

    pats: dict[str, list[str]] = collections.defaultdict(list)
    for r in results:
        for p in r.patterns:
            pats[p].append(f"{r.group}/{r.model}")
    lines += ["", "### Patterns: number of models showing each", "",
              "| pattern | models | e.g. |", "| --- | ---: | --- |"]
    for p, models in sorted(pats.items(), key=lambda kv: kv[0]):
        lines.append(f"| {_cell(p)} | {len(models)} | {_cell(', '.join(models[:3]))}"
                     f"{' ...' if len(models) > 3 else ''} |")

    failing = [r for r in results if r.status != "PASS"]
    if failing:
        lines += ["", "### First error lines of the models that do not pass", ""]
        for r in failing:
            lines.append(f"- **{r.group}/{r.model}** ({r.status}, {r.stage}, exit "
                         f"{r.exit_code}):")
            for e in r.error[:6]:
                lines.append(f"    `{e[:300]}`")
    return "\n".join(lines) + "\n"


def paleozoic_state() -> str:
    """The paleozoic under test: version and, for a source checkout, its commit."""
    try:
        import paleozoic
        version = getattr(paleozoic, "__version__", "?")
        root = Path(paleozoic.__file__).resolve().parent.parent
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              check=False, capture_output=True, text=True)
        if head.returncode != 0:
            return f"paleozoic {version}"
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], check=False, capture_output=True,
                               text=True)
        state = ", working tree modified" if dirty.stdout.strip() else ""
        return f"paleozoic {version} (git {head.stdout.strip()}{state})"
    except Exception as err:  # noqa: BLE001
        return f"paleozoic: {err}"


# ---- main -------------------------------------------------------------------------------

def collect(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(q for q in p.rglob("*.onnx") if not q.name.startswith("."))
        elif p.is_file():
            found.append(p)
        else:
            sys.exit(f"{p}: no such file or folder")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help=".onnx files or folders (searched recursively)")
    parser.add_argument("-o", "--output", help="write the markdown report here")
    parser.add_argument("--json", help="write the per-model results as JSON here")
    parser.add_argument("--work", default=None,
                        help="work folder for sessions (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep each model's session folder")
    parser.add_argument("--plan", default="fuse-all", help="plan for compile (default fuse-all)")
    parser.add_argument("--seed", type=int, default=0, help="seed for verify")
    parser.add_argument("--float64", action="store_true",
                        help="also measure every output against a float64 evaluation "
                        "(verify --float64): ours and onnxruntime's error in the table")
    parser.add_argument("--sdk", default="mock",
                        help="SDK the sessions are built against (paleozoic build --sdk: "
                        "mock or onednn); verify runs what was built")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per stage")
    parser.add_argument("--filter", default=None, help="only models whose name matches this regex")
    parser.add_argument("--inspect-only", action="store_true",
                        help="checker, op types and patterns only; no paleozoic")
    parser.add_argument("--input-shape", action="append", default=[],
                        help="passed to paleozoic compile/verify if they take it")
    parser.add_argument("--batch", type=int, default=None,
                        help="passed to paleozoic compile/verify if they take it")
    parser.add_argument("--fix-batch", type=int, default=None, metavar="N",
                        help="workaround: compile a copy with symbolic dims set to N")
    parser.add_argument("--sanitize-names", action="store_true",
                        help="workaround: compile a copy with '::' in tensor names replaced")
    parser.add_argument("--results-from", metavar="JSON",
                        help="take compile/build/verify results from an earlier --json run "
                        "instead of running paleozoic (the inspection is redone)")
    parser.add_argument("--title", default="Exporter acceptance: paleozoic compile (fuse-all) "
                        "-> build -> verify against onnxruntime")
    args = parser.parse_args(argv)

    models = collect(args.paths)
    if args.filter:
        models = [m for m in models if re.search(args.filter, m.name)]
    if not models:
        sys.exit("no .onnx files found")

    passthrough: list[str] = []
    verify_passthrough: list[str] = []
    if args.input_shape or args.batch is not None:
        compile_help, verify_help = cli_options("compile"), cli_options("verify")
        for flag, values in (("--input-shape", args.input_shape),
                             ("--batch", [] if args.batch is None else [str(args.batch)])):
            for value in values:
                for helptext, target, sub in ((compile_help, passthrough, "compile"),
                                              (verify_help, verify_passthrough, "verify")):
                    if flag in helptext:
                        target += [flag, value]
                    else:
                        print(f"warning: `paleozoic {sub}` has no {flag}; not passed",
                              file=sys.stderr)

    earlier: dict[str, dict] = {}
    if args.results_from:
        earlier = {r["path"]: r for r in json.loads(Path(args.results_from).read_text())}
    reused = ("status", "stage", "exit_code", "compile_s", "build_s", "verify_s", "max_abs",
              "max_rel", "outputs", "error", "workarounds")

    work_root = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="pz-accept-"))
    work_root.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    t_all = time.perf_counter()
    for index, path in enumerate(models, 1):
        result = Result(model=path.stem, path=str(path), group=group_of(path))
        work = work_root / f"{result.group}__{path.stem}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            model = inspect_model(path, result)
            if model is None:
                result.status, result.stage = "ERROR", "load"
                result.error = [result.checker]
            elif args.results_from:
                old = earlier.get(str(path))
                if old is None:
                    result.status, result.error = "-", ["not in --results-from"]
                else:
                    for key in reused:
                        setattr(result, key, old[key])
            elif not args.inspect_only:
                target = path
                if args.fix_batch is not None or args.sanitize_names:
                    copy = work / path.name
                    result.workarounds = rewrite_copy(model, copy, args.fix_batch,
                                                      args.sanitize_names)
                    if result.workarounds:
                        target = copy
                del model
                run_paleozoic(target, result, work, args, passthrough, verify_passthrough)
            else:
                result.status = "-"
        except Exception as err:  # noqa: BLE001  (this script's own crash: record, go on)
            result.status, result.stage = "ERROR", result.stage or "acceptance script"
            result.error = [f"{type(err).__name__}: {err}"]
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
        results.append(result)
        extra = f" max abs {result.max_abs:.2e}" if result.max_abs is not None else ""
        first = (f" -- {result.stage + ': ' if result.stage else ''}{result.error[0][:150]}"
                 if result.error else "")
        print(f"[{index}/{len(models)}] {result.group}/{result.model}: {result.status}"
              f"{extra}{first}", file=sys.stderr, flush=True)
    if not args.keep and not args.work:
        shutil.rmtree(work_root, ignore_errors=True)

    report = markdown(results, f"## {args.title}\n\n{paleozoic_state()}, plan {args.plan}, "
                              f"seed {args.seed}")
    report += f"\n{len(results)} models in {time.perf_counter() - t_all:.0f} s\n"
    print(report)
    if args.output:
        Path(args.output).write_text(report)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0 if all(r.status == "PASS" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
