"""The main job as Python calls: compile a model to a session, build it, run it, verify it
against onnxruntime, and tune a plan. `paleozoic.compile(...)` and the rest are these
functions; the command line is a shell over them, so a script gets what a shell user gets
(the same checks, the same errors, the same confirm step after a wall-clock search).

    import paleozoic
    paleozoic.compile("model.onnx", "out", plan="fuse-all", precision="fp16")
    paleozoic.build("out", sdk="onednn")
    outputs = paleozoic.run("out", {"input": image})
    assert paleozoic.verify("out").passed
    tuned = paleozoic.tune("model.onnx", optimizer="dp", precisions=("fp32", "fp16"))
    tuned.plan.save("plan.json")

Every function raises a paleozoic.errors.PaleozoicError subclass for bad input, naming the
file, node, layer or block and what to do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from paleozoic.errors import (
    BudgetError, ModelLoadError, OptimizerError, PaleozoicError, SessionRunError,
)
from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import Precision

if TYPE_CHECKING:
    import onnx

    from paleozoic.accuracy.tune import TuneResult as AccuracySearch
    from paleozoic.accuracy.verify import VerifyReport
    from paleozoic.farm import Farm
    from paleozoic.optimize import CostOracle

Progress = Callable[[float, float], None]  # (fraction done, best cost so far in us)
Measuring = Callable[[int, int], None]     # (layers timed, layers to time), by block


def compile(model: str | Path | onnx.ModelProto, out: str | Path, *,  # noqa: A001
            plan: str | Path | Plan = "per-layer", precision: str | Precision | None = None,
            calibration: str | Path | None = None, emit: str = "wrapper",
            input_shapes: Mapping[str, tuple[int, ...]] | None = None,
            batch: int | None = None, input_values: Mapping[str, np.ndarray] | None = None,
            outputs: Sequence[str] | None = None, profile: str | Path | None = None,
            data_parallelism: int | None = None, force: bool = False) -> Path:
    """Writes the session for `model` into the folder `out` and returns it: session.cpp,
    weights.bin, CMakeLists.txt, plan.json and session.json.

    `plan` is a built-in ("per-layer", "fuse-all"), a plan file or a Plan; `precision`
    ("fp32", "fp16", "int8") sets every block's; int8 layers need `calibration` (a file from
    `paleozoic calibrate`). `emit="raw"` writes direct CNML/CNRT calls instead of the
    wrapper. `input_shapes` and `batch` fix symbolic dimensions, `input_values` makes inputs
    constants, `outputs` computes named tensors instead of the model's outputs. The plan
    must fit the device `profile`'s memory. Nothing is left behind on failure; an existing,
    non-empty `out` needs `force=True`."""
    from paleozoic.pipeline import compile_model

    chosen = None if precision is None else _precisions((precision,))[0]
    return compile_model(model, out, plan=plan, force=force, emit=emit,
                         input_shapes=input_shapes, batch=batch, precision=chosen,
                         calibration=calibration, input_values=input_values,
                         outputs=outputs, profile=profile,
                         data_parallelism=data_parallelism)


def build(out: str | Path, *, sdk: str | None = None, jobs: int | None = None) -> Path:
    """Builds the session in `out` with cmake and g++ against `sdk` ("mock" or "onednn";
    default: the SDK `out` was last built for, else the mock) and returns the executable."""
    from paleozoic.pipeline import build_session

    return build_session(out, jobs=jobs, sdk=sdk)


def _manifest(out: Path) -> dict[str, Any]:
    path = out / "session.json"
    if not path.is_file():
        raise ModelLoadError(f"{out}: no session.json; compile a session there first "
                             f"(paleozoic.compile or `paleozoic compile`)")
    manifest: dict[str, Any] = json.loads(path.read_text())
    return manifest


def run(out: str | Path, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray], *,
        repeat: int = 1) -> dict[str, np.ndarray]:
    """Runs the session in `out` (built first if it is not) on `inputs`, a mapping from the
    model's input names to arrays of the compiled shapes (or a sequence in input order),
    and returns its outputs by the model's output names."""
    from paleozoic.pipeline import run_session

    out = Path(out)
    manifest = _manifest(out)
    declared = manifest["inputs"]
    names = [i["onnx_name"] for i in declared]
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - set(names))
        missing = [n for n in names if n not in inputs]
        if unknown or missing:
            raise SessionRunError(
                f"{out}: inputs given {sorted(inputs)}, the session takes {names}"
                + (f"; no input is named {unknown[0]!r}" if unknown else "")
                + (f"; {missing[0]!r} has no value" if missing else ""))
        feeds = [np.asarray(inputs[n]) for n in names]
    else:
        feeds = [np.asarray(value) for value in inputs]
        if len(feeds) != len(names):
            raise SessionRunError(f"{out}: {len(feeds)} input(s) given, the session takes "
                                  f"{len(names)} ({', '.join(names)})")
    for spec, value in zip(declared, feeds):
        if tuple(value.shape) != tuple(spec["shape"]):
            raise SessionRunError(
                f"{out}: input {spec['onnx_name']!r} has shape {list(value.shape)}, the "
                f"session was compiled for {list(spec['shape'])} (recompile with "
                f"input_shapes={{{spec['onnx_name']!r}: {tuple(value.shape)}}})")
    result = run_session(out, feeds, repeat=repeat)
    return {o["onnx_name"]: value for o, value in zip(manifest["outputs"], result.outputs)}


def verify(out: str | Path, *, model: str | Path | None = None,
           inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0,
           distribution: str = "normal", float64: bool = False,
           sessions: int = 1) -> VerifyReport:
    """Runs the session in `out` (built first if it is not) and judges every output against
    onnxruntime on the source model (`model`, default: the file it was compiled from), on
    `inputs` or on seeded ones (`distribution` "normal" or "uniform"); where the two
    disagree, against the float64 truth (always with `float64=True`). `sessions` > 1 also
    runs that many sessions at once, each bit-identical to the serial run. The report's
    `passed` says whether every output passed; its checks give the errors."""
    from paleozoic.accuracy.verify import model_for, verify_session
    from paleozoic.pipeline import build_session

    out = Path(out)
    _manifest(out)
    source = model_for(out, model)
    if not (out / "build" / "session").is_file():
        build_session(out)
    feeds = None if inputs is None else {name: np.asarray(v) for name, v in inputs.items()}
    return verify_session(out, source, seed, feeds, distribution, float64, sessions)


@dataclass
class TuneResult:
    """A tuned plan, the oracle that priced it and what the search said about it."""
    plan: Plan
    cost: CostOracle
    queue: LayerQueue
    lines: list[str] = field(default_factory=list)  # what each knob and the confirm step did

    def table(self) -> list[str]:
        """The plan as a table: blocks, layers, MP, precision and cost."""
        from paleozoic.optimize.report import data_parallelism_line, plan_table

        rows = plan_table(self.plan, self.queue, self.cost)
        if "data_parallelism_us" in self.plan.notes:
            rows.append(data_parallelism_line(self.plan, self.queue))
        return rows


def _precisions(values: Sequence[str | Precision]) -> tuple[Precision, ...]:
    try:
        return tuple(Precision(v) for v in values)
    except ValueError as err:
        raise PaleozoicError(f"{err}; precisions are {', '.join(p.value for p in Precision)}"
                             ) from None


def _oracle_maker(queue: LayerQueue, cost: str, sdk: str, profile: str | None,
                  measurements: str | Path | None = None, farm: Farm | None = None,
                  measuring: Measuring | None = None
                  ) -> Callable[[Collection[str], int], CostOracle]:
    from paleozoic.optimize.oracles import make_oracle

    def oracle(sparse: Collection[str], dp: int) -> CostOracle:
        made = make_oracle(queue, cost, sdk, profile, sparse, dp, measurements, farm)
        if measuring is not None and hasattr(made, "measuring"):
            made.measuring = measuring
        return made

    return oracle


def tune(model: str | Path | onnx.ModelProto, *, optimizer: str = "dp", cost: str = "model",
         sdk: str = "mock", profile: str | None = None,
         precisions: Sequence[str | Precision] = ("fp32",), knobs: Collection[str] = (),
         seed: int = 0, budget_s: float | None = None,
         options: Mapping[str, object] | None = None,
         input_shapes: Mapping[str, tuple[int, ...]] | None = None,
         batch: int | None = None, input_values: Mapping[str, np.ndarray] | None = None,
         outputs: Sequence[str] | None = None,
         progress: Progress | None = None, measuring: Measuring | None = None,
         measurements: str | Path | None = None, workers: int | None = None,
         ray_address: str | None = None, simulate_boards: int | None = None) -> TuneResult:
    """Searches a plan for `model` with `optimizer` (a built-in: per-layer, fuse-all, greedy,
    dp, annealing; "module:Class", "file.py:Class" or an entry point in the group
    paleozoic.optimizers) against the oracle `cost`: "model", the analytic device model with
    the device `profile`, or "measured", blocks timed through the runtime on `sdk`. Each
    block takes one of `precisions`; `knobs` adds Table 4's (sparsity, dp, concat, balance).
    A wall-clock search's plan is kept only if it leads the built-ins as a whole forward.
    `progress(fraction, best_us)` is called as the search goes, and with a measured oracle
    `measuring(done, total)` as the blocks one step asks for are timed (counted in their
    layers). `measurements`: a file keeping measured block timings across runs (read, and
    appended to). Measurement runs in this process, or on a local Ray cluster of `workers`
    boards, on the Ray cluster at `ray_address`, or on `simulate_boards` simulated boards
    (paleozoic.farm)."""
    from paleozoic.farm.opening import open_farm
    from paleozoic.farm.service import LocalBoard
    from paleozoic.optimize import SearchSpace, load_optimizer
    from paleozoic.optimize.knobs import refuse_knobs, tune_with_knobs
    from paleozoic.optimize.oracles import confirm_measured, wall_clock
    from paleozoic.pipeline import load_queue

    chosen = _precisions(precisions)
    search = load_optimizer(optimizer, seed=seed, budget_s=budget_s, **dict(options or {}))
    if cost != "measured" and (workers, ray_address, simulate_boards) != (None,) * 3:
        raise OptimizerError("--workers, --ray and --simulate-boards measure blocks: they "
                             "need --cost measured")

    # A Ray cluster takes seconds to start: it comes up while the model loads and the
    # search prices its blocks on the device model, unless timings are kept already (a
    # re-run may need no board: the cluster starts where a block is first missing).
    kept = (measurements is not None and Path(measurements).is_file()
            and Path(measurements).stat().st_size > 0)
    farm = open_farm(workers=workers, address=ray_address, simulate=simulate_boards, sdk=sdk,
                     replay=measurements, background=True, eager=not kept)
    try:
        queue = load_queue(model, input_shapes, batch, input_values, outputs)
        oracle_for = _oracle_maker(queue, cost, sdk, profile, measurements, farm, measuring)
        refuse_knobs(knobs, oracle_for, wall_clock=wall_clock(cost, sdk))
        space = (SearchSpace.from_queue(queue, report=progress, precisions=chosen) if progress
                 else SearchSpace.from_queue(queue, precisions=chosen))
        tuned = tune_with_knobs(search, queue, space, knobs, oracle_for, profile=profile,
                                precisions=chosen)
        plan, confirmed = confirm_measured(tuned.plan, tuned.cost, mp=space.max_mp)
    finally:
        farm.close()
    if hasattr(tuned.cost, "farm"):
        # What the report prices after the search (the built-in plans' blocks the search
        # did not ask for) is measured in this process: the farm is closed.
        tuned.cost.farm = LocalBoard()
    if hasattr(tuned.cost, "measuring"):
        tuned.cost.measuring = None  # the caller's progress display is done with
    return TuneResult(plan, tuned.cost, queue, tuned.lines + confirmed + farm.summary())


@dataclass(kw_only=True)
class AccuracyTuneResult(TuneResult):
    """tune_for_accuracy's plan, with the accuracy it measured on the held-out data."""
    search: AccuracySearch  # the candidates tried and what was measured


def tune_for_accuracy(model: str | Path, *, budget: tuple[str, float],
                      calibration: str | Path | None, data: Sequence[str | Path] | None,
                      holdout: Sequence[str | Path] | None = None,
                      sensitivities: str | Path | None = None, cost: str = "model",
                      sdk: str = "mock", profile: str | None = None,
                      knobs: Collection[str] = (),
                      input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                      batch: int | None = None,
                      input_values: Mapping[str, np.ndarray] | None = None,
                      outputs: Sequence[str] | None = None) -> AccuracyTuneResult:
    """The fastest plan (cuts, MP, precision per block) whose outputs keep `budget` against
    fp32: ("sqnr", dB), ("cosine", x) or ("top1", x). Per-layer sensitivities are measured on
    `data` (batches as for calibrate; read from, or written to, the file `sensitivities`),
    int8 parameters come from `calibration`, and the chosen plan is checked on `holdout`
    (default: `data`). `knobs` (sparsity, dp, balance) are set after the search, leaving
    the numbers as they are."""
    from paleozoic.accuracy.tune import RuntimeNoiseProbe, measure_sensitivities
    from paleozoic.accuracy.tune import tune_for_accuracy as search_for_accuracy
    from paleozoic.calibration.data import data_files, iter_batches
    from paleozoic.calibration.file import load_calibration
    from paleozoic.calibration.params import layer_quantization
    from paleozoic.optimize.knobs import (
        choose_sparse, knobs_after_accuracy, refuse_accuracy_knobs, refuse_knobs,
    )
    from paleozoic.optimize.oracles import wall_clock
    from paleozoic.optimize.sensitivities import Sensitivities
    from paleozoic.pipeline import load_queue

    refuse_accuracy_knobs(knobs)
    if calibration is None or not data:
        raise PaleozoicError("--accuracy-budget needs --calibration CALIB.json and --data "
                             "PATH... (the inputs sensitivities are measured on)")
    queue = load_queue(model, input_shapes, batch, input_values, outputs)
    quantization = layer_quantization(queue, load_calibration(calibration, queue),
                                      str(calibration))
    batches = [feeds for _, feeds in iter_batches(data_files(data), queue)]
    checks = ([feeds for _, feeds in iter_batches(data_files(holdout), queue)]
              if holdout else batches)
    lines: list[str] = []
    if sensitivities and Path(sensitivities).is_file():
        measured = Sensitivities.load(sensitivities)
        lines.append(f"read sensitivities from {sensitivities}")
    else:
        probe = RuntimeNoiseProbe(queue, quantization, batches)
        measured = measure_sensitivities(queue, probe)
        if sensitivities:
            measured.save(sensitivities)
        lines.append(f"measured sensitivities: {probe.runs} runs on {len(batches)} batch(es)")
    oracle_for = _oracle_maker(queue, cost, sdk, profile)
    refuse_knobs(knobs, oracle_for, wall_clock=wall_clock(cost, sdk))
    sparse, sparse_lines = choose_sparse(knobs, queue, profile,
                                         (Precision.FP32, Precision.FP16, Precision.INT8))
    metric, target = budget
    try:
        result = search_for_accuracy(queue, quantization, measured, oracle_for(sparse, 1),
                                     metric, target, checks)
    except ValueError as err:
        raise BudgetError(f"{model}: {err}; nothing written") from None
    tuned = knobs_after_accuracy(result.plan, queue, knobs, sparse, oracle_for, profile)
    return AccuracyTuneResult(tuned.plan, tuned.cost, queue,
                              lines + sparse_lines + tuned.lines, search=result)
