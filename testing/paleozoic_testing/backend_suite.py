"""onnx's backend test suite through Paleozoic's backend (paleozoic.backend).

`run_many` runs many (rep, inputs) pairs with several models merged into one session per
build (same opset only; a merged session that fails is bisected down to single runs), for
test suites where cmake + g++ per case dominates; `run_suite` runs test cases through it
and checks them as onnx's runner does. `node_test_cases` lists onnx's node test cases with
the operator each one tests.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from paleozoic.backend import (
    DEFAULT_PLAN, Frozen, PaleozoicBackend, PaleozoicBackendRep, run_built,
)
from paleozoic.errors import UnsupportedModelError
from paleozoic.frontend.support import ONNX_OPS

logger = logging.getLogger(__name__)


# ---- many models per build --------------------------------------------------------------
def _prefixed(model: onnx.ModelProto, prefix: str) -> onnx.GraphProto:
    graph = onnx.GraphProto()
    graph.CopyFrom(model.graph)

    def rename(name: str) -> str:
        return prefix + name if name else name

    for group in (graph.input, graph.output, graph.value_info):
        for info in group:
            info.name = rename(info.name)
    for tensor in graph.initializer:
        tensor.name = rename(tensor.name)
    for node in graph.node:
        node.name = rename(node.name) if node.name else ""
        node.input[:] = [rename(n) for n in node.input]
        node.output[:] = [rename(n) for n in node.output]
    return graph


def _mergeable(model: onnx.ModelProto) -> bool:
    return not (model.functions or model.graph.sparse_initializer or any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for n in model.graph.node for a in n.attribute))


def merge_models(models: Sequence[onnx.ModelProto]) -> onnx.ModelProto:
    """One model holding each of `models` (same opsets) side by side, names prefixed
    with m<i>_; inputs and outputs in model order."""
    merged = onnx.ModelProto()
    merged.ir_version = max(m.ir_version for m in models)
    merged.producer_name = "paleozoic.backend.merge_models"
    merged.opset_import.extend(models[0].opset_import)
    graph = merged.graph
    graph.name = "merged"
    for i, model in enumerate(models):
        part = _prefixed(model, f"m{i}_")
        graph.node.extend(part.node)
        graph.input.extend(part.input)
        graph.output.extend(part.output)
        graph.initializer.extend(part.initializer)
        graph.value_info.extend(part.value_info)
    return merged


def _opset_key(model: onnx.ModelProto) -> tuple:
    return tuple(sorted((o.domain or "", o.version) for o in model.opset_import))


@dataclass
class _Job:
    index: int
    rep: PaleozoicBackendRep
    inputs: Any
    frozen: Frozen | None = None


def run_many(jobs: Sequence[tuple[PaleozoicBackendRep, Any]], batch_size: int = 32,
             threads: int = 1) -> list[tuple | Exception]:
    """`rep.run(inputs)` for each pair, with up to `batch_size` models of the same opset
    merged into one session per build (their graphs are independent in it). Returns per
    pair the outputs or the exception `rep.run` would raise: the frontend checks each
    model alone first, and a merged session that fails to build or run is bisected down
    to single `rep.run` calls. `threads` builds run side by side."""
    results: list[tuple | Exception | None] = [None] * len(jobs)
    ready: list[_Job] = []
    for index, (rep, inputs) in enumerate(jobs):
        job = _Job(index, rep, inputs)
        try:
            job.frozen = rep.frozen_model(inputs)
        except Exception as err:  # noqa: BLE001  (reported per job, as rep.run would)
            results[index] = err
            continue
        ready.append(job)
    groups: dict[tuple, list[_Job]] = {}
    for job in ready:
        model = job.frozen.model
        # A model without layers runs alone: merged, it would borrow the others' blocks.
        alone = job.frozen.layers == 0 or not _mergeable(model)
        key = ("alone", job.index) if alone else (_opset_key(model), job.rep.plan,
                                                   str(job.rep.cache.root))
        groups.setdefault(key, []).append(job)
    chunks = [group[i:i + batch_size] for group in groups.values()
              for i in range(0, len(group), batch_size)]

    def single(job: _Job) -> None:
        try:
            results[job.index] = job.rep.run(job.inputs)
        except Exception as err:  # noqa: BLE001
            results[job.index] = err

    def chunk_run(chunk: list[_Job]) -> None:
        if len(chunk) == 1:
            single(chunk[0])
            return
        try:
            merged = merge_models([job.frozen.model for job in chunk])
            folder = chunk[0].rep.cache.session(merged, chunk[0].rep.plan)
            by_name = run_built(folder, [f for job in chunk for f in job.frozen.feeds])
            outputs = [job.rep.outputs_from(by_name, f"m{i}_")
                       for i, job in enumerate(chunk)]
        except Exception as err:  # noqa: BLE001
            logger.info("merged session of %d models failed (%s: %s); bisecting",
                        len(chunk), type(err).__name__, str(err).splitlines()[:1])
            half = len(chunk) // 2
            chunk_run(chunk[:half])
            chunk_run(chunk[half:])
            return
        for job, output in zip(chunk, outputs):
            results[job.index] = output

    if threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(chunk_run, chunks))
    else:
        for chunk in chunks:
            chunk_run(chunk)
    return results  # type: ignore[return-value]


# ---- onnx's node test cases -----------------------------------------------------------------
@dataclass
class NodeCase:
    op: str  # the operator the case tests (expanded cases: the operator they expand)
    case: Any  # onnx.backend.test.case.test_case.TestCase (model, data_sets, rtol, atol)

    @property
    def name(self) -> str:
        return self.case.name


def node_test_cases(ops: Sequence[str] | None = None) -> list[NodeCase]:
    """onnx's node test cases (generated in memory by onnx's own generator, as onnx's
    backend test runner does: the wheel ships no node data), with the operator each one
    tests; only those of `ops` if given (e.g. ONNX_OPS)."""
    import warnings

    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    from onnx.backend.test.case import node as node_module

    tested = getattr(node_module, "_existing_names", {})
    found = []
    for case in cases:
        base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
        node = tested.get(case.name) or tested.get(base)
        if node is None and case.model is not None and case.model.graph.node:
            node = case.model.graph.node[0]  # onnx without the registry: the first node
        op = node.op_type if node is not None else "?"
        if ops is None or op in ops:
            found.append(NodeCase(op, case))
    return found


def supported_node_test_cases() -> list[NodeCase]:
    return node_test_cases(tuple(ONNX_OPS))


# ---- running test cases (onnx's backend test suite) -----------------------------------------
PASSED, FAILED, UNSUPPORTED = "passed", "failed", "unsupported"


@dataclass
class SuiteCase:
    """One test case: a model, its data sets (inputs, expected outputs) and tolerances
    (onnx's runner: assert_allclose with rtol, atol; 1e-3, 1e-7 unless the case says)."""

    name: str
    kind: str  # node, pytorch-converted, pytorch-operator, simple, light
    op: str    # the operator it tests (node) or the model's operators joined by "+"
    model: onnx.ModelProto
    data_sets: list[tuple[list[Any], list[Any]]]
    rtol: float = 1e-3
    atol: float = 1e-7


@dataclass
class CaseResult:
    name: str
    kind: str
    op: str
    status: str       # passed, failed (wrong numbers or a crash), unsupported (refused)
    detail: str = ""  # the refusal, the mismatch or the error
    stage: str = ""   # prepare, run or compare


def suite_cases_from_node(cases: Sequence[NodeCase]) -> list[SuiteCase]:
    return [SuiteCase(c.name, "node", c.op, c.case.model, list(c.case.data_sets),
                      c.case.rtol, c.case.atol) for c in cases]


def _array(value: Any) -> Any:
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def compare_outputs(expected: Sequence[Any], outputs: Sequence[Any], rtol: float,
                    atol: float) -> str:
    """"" if `outputs` pass onnx's runner check (same count, shapes, dtypes,
    assert_allclose(rtol, atol)), else what differs."""
    from onnx.backend.test.runner import Runner

    expected = [_array(v) for v in expected]
    try:
        Runner.assert_similar_outputs(expected, list(outputs), rtol=rtol, atol=atol)
    except (AssertionError, TypeError, ValueError) as err:
        lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
        keep = [line for line in lines if line.startswith(
            ("Mismatched", "Max absolute", "Max relative", "Output", "Arrays are not",
             "(shapes", "x:", "y:", "ACTUAL", "DESIRED", "Items are not equal"))]
        text = "; ".join(keep or lines[:3])
        worst = ""
        for i, (ref, out) in enumerate(zip(expected, outputs)):
            if getattr(ref, "shape", None) == getattr(out, "shape", None) and \
                    getattr(ref, "dtype", None) == np.float32 and ref.size:
                diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
                bad = diff > atol + rtol * np.abs(ref.astype(np.float64))
                if bad.any():
                    at = np.unravel_index(int(np.argmax(np.where(bad, diff, -1))), ref.shape)
                    worst += (f"; output {i} worst at {tuple(int(v) for v in at)}: got "
                              f"{out[at]:.9g}, expected {ref[at]:.9g}")
        return f"{text}{worst} (rtol={rtol:g}, atol={atol:g})"
    return ""


def case_failure(case: SuiteCase, err: Exception, stage: str) -> CaseResult:
    if isinstance(err, UnsupportedModelError):
        return CaseResult(case.name, case.kind, case.op, UNSUPPORTED, str(err), stage)
    return CaseResult(case.name, case.kind, case.op, FAILED,
                      f"{type(err).__name__}: {err}", stage)


def run_suite(cases: Sequence[SuiteCase], batch_size: int = 32, threads: int = 1,
              plan: str = DEFAULT_PLAN, cache_dir: str | Path | None = None
              ) -> list[CaseResult]:
    """Runs each case through PaleozoicBackend as onnx's runner does (prepare, then run
    and compare each data set), with run_many merging up to `batch_size` cases per
    build. A case whose merged result does not match is run again alone, so every
    verdict is that of `prepare(model).run(inputs)`."""
    results: dict[int, CaseResult] = {}
    reps: dict[int, PaleozoicBackendRep] = {}
    jobs: list[tuple[int, int]] = []
    for i, case in enumerate(cases):
        try:
            reps[i] = PaleozoicBackend.prepare(case.model, plan=plan, cache_dir=cache_dir)
        except Exception as err:  # noqa: BLE001  (a verdict, not an error of the runner)
            results[i] = case_failure(case, err, "prepare")
            continue
        jobs.extend((i, k) for k in range(len(case.data_sets)))
    feeds = {(i, k): [_array(v) for v in cases[i].data_sets[k][0]] for i, k in jobs}
    outcomes = run_many([(reps[i], feeds[i, k]) for i, k in jobs], batch_size=batch_size,
                        threads=threads)
    for (i, k), outcome in zip(jobs, outcomes):
        case = cases[i]
        if i in results:
            continue
        if isinstance(outcome, Exception):
            results[i] = case_failure(case, outcome, "run")
            continue
        expected = case.data_sets[k][1]
        problem = compare_outputs(expected, outcome, case.rtol, case.atol)
        if problem and batch_size > 1:
            logger.info("%s: merged result differs; running it alone", case.name)
            try:
                problem = compare_outputs(expected, reps[i].run(feeds[i, k]),
                                          case.rtol, case.atol)
            except Exception as err:  # noqa: BLE001
                results[i] = case_failure(case, err, "run")
                continue
        if problem:
            results[i] = CaseResult(case.name, case.kind, case.op, FAILED,
                                    f"wrong numbers: {problem}", "compare")
    return [results.get(i) or CaseResult(c.name, c.kind, c.op, PASSED)
            for i, c in enumerate(cases)]
