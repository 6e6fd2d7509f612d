#!/usr/bin/env python
"""Runs onnx's backend test suite through Paleozoic's backend (paleozoic.backend) and
writes a markdown report: per-operator counts of passed / failed / unsupported cases.

    python scripts/onnx_backend_report.py                 # node tests of supported ops
    python scripts/onnx_backend_report.py -k 'conv|gemm' -j 2 --per-case
    python scripts/onnx_backend_report.py --all -j 2      # every kind, every operator

Verdicts, as onnx's runner checks them (same count, shape and dtype of outputs,
assert_allclose with the case's rtol/atol, 1e-3/1e-7 unless the case says):
passed; failed (wrong numbers, or a crash: build, run or any error other than
Paleozoic's refusal); unsupported (Paleozoic raised UnsupportedModelError: before
anything was built).

Test data: node cases are generated in memory by onnx's own generator
(onnx.backend.test.loader.load_model_tests(kind="node"), as onnx's runner does; the wheel
ships no node data); pytorch-converted, pytorch-operator and simple cases are read from
the data folder inside the onnx wheel; "light" runs the nine light_*.onnx zoo models the
"real" cases point at, on onnx's dummy input (arange / n) against the light_*_output_0.pb
that ship beside them. Nothing is downloaded.

Each case is compiled to a C++ session, built with cmake + g++ and run. Up to
--batch-size cases of the same opset are merged into one session per build (a merged
build that fails is bisected; a case whose merged result differs is re-run alone), so
every verdict is that of prepare(model).run(inputs). Sessions are cached by content in
$PALEOZOIC_BACKEND_CACHE (or --cache).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import glob
import os
import platform
import re
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic import backend
from paleozoic.frontend.support import ONNX_OPS
from paleozoic_testing import backend_suite as suite
from paleozoic_testing.backend_suite import FAILED, PASSED, UNSUPPORTED, CaseResult, SuiteCase

KINDS = ("node", "pytorch-converted", "pytorch-operator", "simple", "light")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "onnx_backend_report.md"


# ---- loading cases ---------------------------------------------------------------------
def _ops_label(model: onnx.ModelProto) -> str:
    return "+".join(sorted({n.op_type for n in model.graph.node})) or "(none)"


def _load_value(path: str, type_proto: onnx.TypeProto | None) -> Any:
    data = Path(path).read_bytes()
    which = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if which == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if which == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return numpy_helper.to_optional(opt)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def _data_set(model: onnx.ModelProto, folder: str) -> tuple[list[Any], list[Any]]:
    def load(prefix: str, values: Any) -> list[Any]:
        count = len(glob.glob(os.path.join(folder, f"{prefix}_*.pb")))
        return [_load_value(os.path.join(folder, f"{prefix}_{i}.pb"),
                            values[i].type if i < len(values) else None)
                for i in range(count)]

    return load("input", model.graph.input), load("output", model.graph.output)


def _light_case(test: Any) -> SuiteCase:
    """A "real" case: its light_*.onnx model on onnx's runner dummy input, against the
    recorded light_*_output_<i>.pb (onnx.backend.test.runner.Runner does the same)."""
    from onnx.backend.test.runner import Runner

    path = Path(onnx.__file__).resolve().parent.parent / test.url
    model = onnx.load(str(path))
    inits = {t.name for t in model.graph.initializer}
    inputs = [Runner.generate_dummy_data(v, seed=0, name=test.model_name, random=False)
              for v in model.graph.input if v.name not in inits]
    prefix = str(path.with_suffix(""))
    outputs = [_load_value(f"{prefix}_output_{i}.pb", None)
               for i in range(len(model.graph.output))]
    return SuiteCase(f"test_{test.model_name}", "light", _ops_label(model), model,
                     [(inputs, outputs)], test.rtol, test.atol)


def load_cases(kind: str, all_ops: bool) -> list[SuiteCase]:
    if kind == "node":
        ops = None if all_ops else tuple(ONNX_OPS)
        return suite.suite_cases_from_node(suite.node_test_cases(ops))
    from onnx.backend.test.loader import load_model_tests

    if kind == "light":
        return [_light_case(t) for t in sorted(load_model_tests(kind="real"),
                                               key=lambda t: t.name)]
    cases = []
    for test in sorted(load_model_tests(kind=kind), key=lambda t: t.name):
        model = onnx.load(os.path.join(test.model_dir, "model.onnx"))
        sets = [_data_set(model, folder) for folder in
                sorted(glob.glob(os.path.join(test.model_dir, "test_data_set*")))]
        cases.append(SuiteCase(test.name, kind, _ops_label(model), model, sets, test.rtol,
                               test.atol))
    return cases


# ---- running (in worker processes with -j) -----------------------------------------------
def _quiet() -> None:
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")


def run_chunk(cases: list[SuiteCase], batch_size: int, plan: str, cache: str | None
              ) -> tuple[list[CaseResult], float]:
    _quiet()
    start = time.perf_counter()
    results = suite.run_suite(cases, batch_size=batch_size, threads=1, plan=plan,
                                cache_dir=cache)
    return results, time.perf_counter() - start


def _opset(case: SuiteCase) -> tuple:
    return tuple(sorted((o.domain or "", o.version) for o in case.model.opset_import))


def run_all(cases: list[SuiteCase], args: argparse.Namespace) -> list[CaseResult]:
    """Prepare-time refusals are decided here; the rest is run in chunks of up to
    batch-size cases of one kind and opset, on -j worker processes."""
    results: dict[str, CaseResult] = {}
    runnable: dict[tuple, list[SuiteCase]] = collections.defaultdict(list)
    for case in cases:
        try:
            backend.prepare(case.model, plan=args.plan, cache_dir=args.cache)
        except Exception as err:  # noqa: BLE001
            results[case.name + "@" + case.kind] = suite.case_failure(case, err, "prepare")
            continue
        batch = 1 if case.kind == "light" else args.batch_size
        runnable[(case.kind, _opset(case), batch)].append(case)
    chunks = []
    for (kind, _, batch), group in runnable.items():
        chunks += [(batch, group[i:i + batch]) for i in range(0, len(group), batch)]
    chunks.sort(key=lambda c: -len(c[1]))  # big chunks first: better packing on -j
    total = sum(len(c[1]) for c in chunks)
    print(f"{len(cases)} cases: {len(results)} refused at prepare, {total} to build and "
          f"run in {len(chunks)} chunk(s) on {args.jobs} worker(s)", file=sys.stderr)
    done = 0

    def record(found: list[CaseResult], seconds: float) -> None:
        nonlocal done
        done += len(found)
        for result in found:
            results[result.name + "@" + result.kind] = result
        counts = collections.Counter(r.status for r in found)
        print(f"[{done}/{total}] {found[0].kind}: {len(found)} case(s) in {seconds:.1f} s: "
              f"{dict(counts)}", file=sys.stderr)

    def run_pool(todo: list, workers: int) -> list:
        """Runs chunks on `workers` processes; returns those lost with a dead worker."""
        lost = []
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            futures = {pool.submit(run_chunk, group, batch, args.plan, args.cache):
                       (batch, group) for batch, group in todo}
            for future in as_completed(futures):
                try:
                    record(*future.result())
                except BrokenProcessPool:
                    lost.append(futures[future])
        return lost

    # A crash in native code (TVM, a session) kills a worker and its pool, not the report:
    # lost chunks are retried one per pool; one that kills its worker again fails its cases.
    lost = run_pool(chunks, args.jobs)
    if lost:
        print(f"{len(lost)} chunk(s) lost with a dead worker; retrying one by one",
              file=sys.stderr)
    for chunk in lost:
        if run_pool([chunk], 1):
            record([CaseResult(c.name, c.kind, c.op, FAILED, "the worker process died "
                               "(a crash in native code: TVM or a session)", "run")
                    for c in chunk[1]], 0.0)
    return [results[c.name + "@" + c.kind] for c in cases]


# ---- the report --------------------------------------------------------------------------
def _reason(result: CaseResult) -> str:
    """A refusal without the case's name, node names and counts, to group cases."""
    text = result.detail
    if "use operators Paleozoic does not support" in text:
        ops = sorted(set(re.findall(r"^\s*node '.*?': (\S+)", text, flags=re.MULTILINE)))
        return f"operators not supported: {', '.join(ops)}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[1] if len(lines) > 1 and "unsupported attribute value" in lines[0] \
        else (lines[0] if lines else "")
    line = re.sub(r"^\S+?: ", "", line, count=1) if line.startswith(result.name) else line
    line = re.sub(r"node '[^']*'", "node", line)
    line = re.sub(r"\b(input|output|constant|weight) '[^']*'", r"\1", line)
    line = re.sub(r"binding \S+:", "", line)
    return line.strip()[:200]


def _counts(results: list[CaseResult]) -> collections.Counter:
    return collections.Counter(r.status for r in results)


def _row(label: str, results: list[CaseResult]) -> str:
    c = _counts(results)
    return f"| {label} | {len(results)} | {c[PASSED]} | {c[FAILED]} | {c[UNSUPPORTED]} |"


def _by_operator(title: str, note: str, cases: list[tuple[str, CaseResult]],
                 supported: set[str] | frozenset[str]) -> list[str]:
    """A section "TITLE by operator": a row per operator of the (operator, result) pairs,
    the supported ones (in bold) first."""
    by_op: dict[str, list[CaseResult]] = collections.defaultdict(list)
    for op, r in cases:
        by_op[op].append(r)
    lines = ["", f"## {title} by operator", "", note, "",
             "| operator | cases | passed | failed | unsupported |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for op in sorted(by_op, key=lambda op: (op not in supported, op.lower())):
        lines.append(_row(f"**{op}**" if op in supported else op, by_op[op]))
    return lines


def _cell(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[:limit - 3] + "..."
    return text.replace("|", "\\|")


def write_report(path: Path, results: list[CaseResult], args: argparse.Namespace,
                 seconds: float, per_kind_seconds: dict[str, float]) -> None:
    import tvm

    supported = set(ONNX_OPS)
    lines = [
        "# ONNX backend test suite through Paleozoic",
        "",
        (f"Generated {dt.datetime.now().strftime('%Y-%m-%d %H:%M')} by "
         f"`python scripts/onnx_backend_report.py {' '.join(args.argv)}`"
         f" (onnx {onnx.__version__}, TVM {tvm.__version__}, Python "
         f"{platform.python_version()}, {os.cpu_count()} CPU(s), plan `{args.plan}`, "
         f"{args.jobs} worker(s), up to {args.batch_size} cases per build). "
         f"Wall time {seconds / 60:.1f} min."),
        "",
        ("Each case runs through `paleozoic.backend` (prepare, then run: the emitted C++ "
         "session built with cmake + g++ on the mock SDK) and is checked as onnx's runner "
         "checks it (output count, shapes, dtypes, `assert_allclose` with the case's rtol "
         "and atol: 1e-3 and 1e-7 unless the case says). **passed**; **failed**: wrong "
         "numbers or a crash (build, run, or any error other than Paleozoic's refusal); "
         "**unsupported**: Paleozoic refused the case with `UnsupportedModelError` before "
         "building anything."),
        "",
        "## Summary",
        "",
        "| kind | cases | passed | failed | unsupported | wall time |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    by_kind = collections.defaultdict(list)
    for r in results:
        by_kind[r.kind].append(r)
    for kind in KINDS:
        if kind in by_kind:
            lines.append(_row(kind, by_kind[kind]) +
                         f" {per_kind_seconds.get(kind, 0.0):.0f} s |")
    lines.append(_row("**all**", results) + f" {seconds:.0f} s |")

    if by_kind.get("node"):
        lines += _by_operator(
            "Node tests", "The operator a case tests (expanded cases count under the operator "
            "they expand). Operators Paleozoic lists as supported are in bold.",
            [(r.op, r) for r in by_kind["node"]], supported)

    model_results = [r for r in results if r.kind != "node"]
    if model_results:
        lines += _by_operator(
            "Model tests", "pytorch-converted, pytorch-operator, simple and light cases; a "
            "case counts under every operator its model uses.",
            [(op, r) for r in model_results for op in r.op.split("+")], supported)
        lines += ["", "| case | kind | operators | verdict |", "| --- | --- | --- | --- |"]
        for r in model_results:
            lines.append(f"| {r.name} | {r.kind} | {_cell(r.op, 120)} | {r.status} |")

    failed = [r for r in results if r.status == FAILED]
    lines += ["", f"## Failures ({len(failed)})", ""]
    if failed:
        lines += ["| case | kind | operator | stage | detail |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r.name} | {r.kind} | {_cell(r.op, 80)} | {r.stage} | {_cell(r.detail)} |"
                  for r in failed]
    else:
        lines.append("None.")

    refused = [r for r in results if r.status == UNSUPPORTED]
    lines += ["", f"## Unsupported: Paleozoic's reasons ({len(refused)} cases)", ""]
    if refused:
        groups = collections.defaultdict(list)
        for r in refused:
            groups[_reason(r)].append(r.name)
        lines += ["| reason | cases | examples |", "| --- | ---: | --- |"]
        for reason, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
            lines.append(f"| {_cell(reason, 300)} | {len(names)} | {shown} |")
    else:
        lines.append("None.")

    if args.per_case:
        lines += ["", "## Per case", "", "| case | kind | operator | verdict | detail |",
                  "| --- | --- | --- | --- | --- |"]
        for r in sorted(results, key=lambda r: (r.kind, r.op, r.name)):
            detail = _reason(r) if r.status == UNSUPPORTED else r.detail
            lines.append(f"| {r.name} | {r.kind} | {_cell(r.op, 80)} | {r.status} | "
                         f"{_cell(detail, 200)} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--all", action="store_true",
                        help="every kind and every operator (slow: see docs/onnx-backend-suite.md)")
    parser.add_argument("--kind", default=None,
                        help=f"comma-separated kinds among {', '.join(KINDS)} (default: node)")
    parser.add_argument("--all-ops", action="store_true",
                        help="node cases of every operator, not only those Paleozoic "
                             "supports")
    parser.add_argument("-k", "--filter", default=None, metavar="REGEX",
                        help="only cases whose name or operator matches REGEX (re.search)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--batch-size", type=int, default=24,
                        help="cases merged into one session per build (1: one build per "
                             "case)")
    parser.add_argument("--no-batch", action="store_true", help="same as --batch-size 1")
    parser.add_argument("--plan", default=backend.DEFAULT_PLAN,
                        help="per-layer, fuse-all or a plan file")
    parser.add_argument("--cache", default=None,
                        help=f"session cache folder (default: ${backend.CACHE_ENV} or "
                             f"{backend.default_cache_dir()})")
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUT,
                        help="markdown report (default: %(default)s)")
    parser.add_argument("--per-case", action="store_true",
                        help="add a per-case table to the report and print one line per "
                             "case")
    args = parser.parse_args(argv)
    args.argv = argv
    if args.no_batch:
        args.batch_size = 1
    if args.all:
        args.all_ops = True
        kinds = list(KINDS)
    else:
        kinds = [k.strip() for k in (args.kind or "node").split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"unknown kind(s) {unknown}; choose among {', '.join(KINDS)}")
    args.kinds = kinds
    if args.cache:
        os.environ[backend.CACHE_ENV] = str(Path(args.cache).expanduser().resolve())
        args.cache = os.environ[backend.CACHE_ENV]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    _quiet()
    pattern = re.compile(args.filter) if args.filter else None
    start = time.perf_counter()
    results: list[CaseResult] = []
    per_kind_seconds: dict[str, float] = {}
    for kind in args.kinds:
        kind_start = time.perf_counter()
        cases = load_cases(kind, args.all_ops)
        if pattern is not None:
            cases = [c for c in cases if pattern.search(c.name) or pattern.search(c.op)]
        if not cases:
            continue
        print(f"== {kind}: {len(cases)} case(s)", file=sys.stderr)
        found = run_all(cases, args)
        results += found
        per_kind_seconds[kind] = time.perf_counter() - kind_start
        if args.per_case:
            for r in found:
                print(f"{r.status.upper():11s} {kind}/{r.name} [{r.op}] "
                      f"{_cell(r.detail, 160)}")
    seconds = time.perf_counter() - start
    write_report(args.output, results, args, seconds, per_kind_seconds)
    counts = _counts(results)
    print(f"{len(results)} cases: {counts[PASSED]} passed, {counts[FAILED]} failed, "
          f"{counts[UNSUPPORTED]} unsupported in {seconds:.0f} s; report: {args.output}",
          file=sys.stderr)
    return 1 if counts[FAILED] else 0


if __name__ == "__main__":
    sys.exit(main())
